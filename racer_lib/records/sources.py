"""External sources: the files listed in ``data_manifest.yaml``, fetched and checked.

Data flow::

    data_manifest.yaml  (URL pinned to a commit, sha256, size, license, citation per file)
        -> load_manifest()          a Manifest of DataFile entries
        -> fetch(file)              a local path whose sha256 matches the manifest:
             RACER_DATA_DIR set:    the mirror's copy, used in place (never copied)
             otherwise:             pooch downloads into the user cache (RACER_CACHE_DIR
                                    overrides pooch.os_cache("racer-companion"))
        -> the readers of one dataset each:
             racer_lib.records.judgebench   JudgeBench's pairs
             racer_lib.records.llmbar       LLMBar's pairs, its judges' released judgments as
                                            judge records, and its statistics

A mirror, like the cache, is laid out by URL::

    https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>
      -> $RACER_DATA_DIR/<owner>/<repo>/<commit>/<path>

Every problem with the files is a :class:`DataError` (a :class:`racer_lib.errors.RacerError`).
Batch operations (:func:`fetch_all`, :func:`verify`) collect every missing or corrupt file
before raising one error that lists them all and says how to get them; a problem inside a file
names the file, the line (JSONL) or item (JSON list, counted from 0) and the field.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml
from tqdm import tqdm

from racer_lib.errors import ConfigError, RacerError
from racer_lib.records.files import DataLoader, RefusedYAML

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
    here = Path(__file__).resolve().parents[2]
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


#: What PyYAML's safe constructors raise, besides ``yaml.YAMLError``, for a tag given a value it
#: cannot build (``!!int x``: ValueError, ``!!bool 0``: KeyError, ``!!timestamp 0``:
#: AttributeError, ``!!float ''``: IndexError).
YAML_BUILD_ERRORS = (ValueError, LookupError, AttributeError, TypeError, ArithmeticError)


def load_manifest(path: str | os.PathLike | None = None) -> Manifest:
    """Read and check the manifest (default: :func:`find_manifest`).

    Checks each entry's fields, that its source is declared, and that its URL is the raw
    GitHub address of ``path`` at the source's commit (so the mirror layout follows from it).
    """
    path = Path(path) if path is not None else find_manifest()
    if not path.is_file():
        raise DataError(f"{path}: no such manifest")
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=DataLoader) or {}
    except RefusedYAML as exc:
        raise DataFormatError(path, "(yaml)", str(exc)) from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise DataFormatError(path, "(yaml)", f"not YAML: {problem}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: the manifest is not UTF-8 text (byte {exc.start})") from None
    except YAML_BUILD_ERRORS as exc:  # a tag given a value it cannot build (``!!int x``)
        problem = " ".join(
            f"a tagged value YAML cannot build ({type(exc).__name__}: {exc})".split()
        )
        raise DataFormatError(path, "(yaml)", f"not YAML: {problem}") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(doc, dict):
        raise DataFormatError(
            path, "(yaml)", f"expected a mapping with sources and files, got {type(doc).__name__}"
        )
    sources = _manifest_sources(path, doc)
    files = [
        _manifest_file(path, entry, sources, f"files entry {i}")
        for i, entry in enumerate(doc.get("files") or [])
    ]
    if not files:
        raise DataError(f"{path}: the manifest lists no files")
    return Manifest(path, dict(sources), files)


def _manifest_sources(path: Path, doc: dict) -> dict:
    """The manifest's ``sources`` mapping, each with a repository, commit, license and
    citation (and its ``files`` a list)."""
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
    return sources


def _manifest_file(path: Path, entry: Any, sources: dict, where: str) -> DataFile:
    """One checked ``files`` entry: every field present, a declared source, a path inside the
    mirror, a whole size, a sha256, and the raw URL of the path at the source's commit."""
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
            f"{entry['source']!r} is not declared under sources ({', '.join(sources) or 'none'})",
            where,
        )
    _check_relpath(path, entry, src, where)
    if not isinstance(entry["size"], int) or isinstance(entry["size"], bool):
        raise DataFormatError(
            path, "size", f"{entry['size']!r} is not a whole number of bytes", where
        )
    if not re.fullmatch(r"[0-9a-f]{64}", str(entry["sha256"])):
        raise DataFormatError(
            path, "sha256", f"{entry['sha256']!r} is not a sha256 (64 lowercase hex digits)", where
        )
    expected = f"{RAW_BASE}{src['repository']}/{src['commit']}/{entry['path']}"
    if unquote(entry["url"]) != expected:
        raise DataFormatError(
            path,
            "url",
            f"{entry['url']!r} is not {expected!r} (the file's raw address at its source's commit)",
            where,
        )
    return DataFile(
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


# ----------------------------------------------------------------------------------------
# Where files are, fetching and checking


def data_dir() -> Path | None:
    """The local mirror (env ``RACER_DATA_DIR``), or ``None`` to use the download cache."""
    value = os.environ.get(ENV_DATA_DIR)
    return _env_folder(ENV_DATA_DIR, value).resolve() if value else None


def _env_folder(name: str, value: str) -> Path:
    """The folder the environment variable ``name`` gives (``value``, ``~`` expanded): a
    :class:`~racer_lib.errors.ConfigError` (one line) where it or a folder above it is
    something else (a file, a link that leads nowhere or loops)."""
    folder = Path(value).expanduser()
    for above in (folder, *folder.parents):  # the first that exists must be a folder
        if os.path.lexists(above):
            if not above.is_dir():
                raise ConfigError(
                    f"{name}={value}: {above} is not a folder; point {name} at a folder or unset it"
                )
            break
    return folder


def cache_dir() -> Path:
    """The download cache: env ``RACER_CACHE_DIR``, else ``pooch.os_cache("racer-companion")``."""
    pooch = _quiet_pooch()
    value = os.environ.get(ENV_CACHE_DIR)
    if not value:
        return Path(pooch.os_cache("racer-companion"))
    return _env_folder(ENV_CACHE_DIR, value)


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


def file_stamp(path: str | os.PathLike) -> list[int]:
    """``[size, mtime_ns, ctime_ns]`` of a file: while they stay the same its bytes have not been
    written, so a hash or a check made under this stamp still holds. ``os.utime`` sets a file's
    modification time back, but not its change time, which every write moves."""
    stat = os.stat(path)
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


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


def _quiet_pooch() -> Any:
    """pooch, imported without tqdm's "IProgress not found" warning (a kernel without
    ipywidgets) and with its "Downloading data from ..." log lines silenced: what was fetched,
    or why not, is this module's to say, not pooch's on a chapter's page (issue 42)."""
    import logging
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import pooch

    pooch.get_logger().setLevel(logging.WARNING)
    return pooch


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

    pooch = _quiet_pooch()
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
    progress: bool = False,
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


def manifest_or_default(manifest: Manifest | None) -> Manifest:
    """``manifest``, or the repository's (:func:`load_manifest`) when it is ``None``."""
    return manifest if manifest is not None else load_manifest()


def fetched_folder(source: str, anchor: str) -> tuple[Path | None, str]:
    """Fetch every file of ``source`` (:func:`fetch_all`, checked) and return the folder
    holding its file ``anchor`` (e.g. a repository's ``LICENSE``) with ``""``, or ``None``
    with the first line of why they cannot be had (no mirror, no network)."""
    manifest = load_manifest()
    try:
        fetch_all([f for f in manifest.files if f.source == source], progress=False)
    except DataError as missing:
        return None, str(missing).splitlines()[0]
    return local_path(manifest.get(source, anchor)).parent, ""
