"""The one check of a path a reader is about to open, and UTF-8 text read with its bad byte named.

Every reader a user hands a file to (records and embeddings, :mod:`racer_lib.records.io`; pairs,
:mod:`racer_lib.records.pairs`; other tools' judge outputs, :mod:`racer_lib.records.judgebench`,
:mod:`racer_lib.records.llmbar`, :mod:`racer_lib.judging.outputs`; routers,
:mod:`racer_lib.routing.policy`) calls :func:`check_file` before it opens the path. What is not
a regular file it may read is refused in one line naming the path and what is wrong, a
:class:`~racer_lib.errors.RacerError` (``racer`` prints it and exits 2)::

    x.csv: is a directory, not a records file
    r.pt: symlink loop
    p.jsonl: a FIFO, not a regular file          (never opened: it would block)
    p.jsonl: cannot be read (permission denied)
    none.csv: no such records file               (MissingFileError)

Text is UTF-8 (a leading byte order mark is allowed and dropped); other bytes are refused with
their offset in the file, counted from 0 (``p.jsonl: not UTF-8 text (byte 1234 is b'\\xff')``):
:func:`read_utf8` reads a whole file, :func:`decode_utf8` a piece of one (a line of a JSONL
file, :func:`racer_lib.records.judgebench.jsonl_objects`), and :func:`first_non_utf8` finds the
offending byte after a reader of its own (pandas) failed.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import gzip
import os
import re
import stat
import zlib
from pathlib import Path

import yaml

from racer_lib.errors import MissingFileError, UnreadableFileError

__all__ = [
    "BOM",
    "DataLoader",
    "RefusedYAML",
    "ESCAPED_SURROGATE",
    "GZIP_ERRORS",
    "LONE_SURROGATE",
    "check_file",
    "decode_utf8",
    "first_non_utf8",
    "lone_surrogate",
    "not_utf8",
    "open_binary",
    "present",
    "read_utf8",
    "read_yaml_data",
    "reading",
    "real_path",
]

#: The UTF-8 byte order mark some editors write at the start of a text file.
BOM = codecs.BOM_UTF8
#: What a path that is neither a regular file nor a folder is, by its ``stat`` kind.
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _a(what: str) -> str:
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def check_file(path: str | os.PathLike, what: str = "file", *, hint: str = "") -> Path:
    """``path`` as a :class:`~pathlib.Path` when it is a regular file this process may read;
    otherwise one line naming it and what is wrong: missing (a
    :class:`~racer_lib.errors.MissingFileError`, ``no such <what><hint>``), a folder, a symlink
    loop, a FIFO, socket or device (never opened), or not readable (an
    :class:`~racer_lib.errors.UnreadableFileError`). ``what`` names the file a reader expects
    (``records file``)."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise MissingFileError(
                f"{path}: no such {what}{hint} (a symlink to {os.readlink(path)}, which does "
                "not exist)"
            ) from None
        raise MissingFileError(f"{path}: no such {what}{hint}") from None
    except NotADirectoryError:
        raise MissingFileError(
            f"{path}: no such {what}{hint} (a part of its folder is a file)"
        ) from None
    except OSError as exc:
        raise _unreadable(path, exc) from None
    except ValueError as exc:  # an embedded NUL byte
        raise UnreadableFileError(f"{str(path)!r}: not a file name ({exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise UnreadableFileError(f"{path}: is a directory, not {_a(what)}")
    if not stat.S_ISREG(info.st_mode):
        kind = next((k for test, k in _KINDS if test(info.st_mode)), "a special file")
        raise UnreadableFileError(f"{path}: {kind}, not a regular file")
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return path


def _unreadable(path: Path, exc: OSError) -> UnreadableFileError:
    if exc.errno == errno.ELOOP:
        return UnreadableFileError(f"{path}: symlink loop")
    if isinstance(exc, PermissionError):
        return UnreadableFileError(f"{path}: cannot be read (permission denied)")
    return UnreadableFileError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})")


def present(path: str | os.PathLike) -> bool:
    """Whether anything is at ``path``, a broken symlink or a symlink loop included (where
    :meth:`pathlib.Path.exists` says no): a reader given it says what is wrong with it."""
    return os.path.lexists(path)


def real_path(path: str | os.PathLike) -> Path:
    """``path`` made absolute with its symlinks resolved, as far as they go: a symlink loop
    does not raise (:meth:`pathlib.Path.resolve` does), so two paths can always be compared."""
    return Path(os.path.realpath(path))


def open_binary(path: str | os.PathLike):
    """``path`` opened for reading bytes, decompressed when its name ends in ``.gz``."""
    if str(path).lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


#: What reading a damaged gzip file raises (a bad header, a cut stream, bad compressed data).
GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)


@contextlib.contextmanager
def reading(path: str | os.PathLike):
    """Turn what reading ``path``'s bytes may raise into one line naming it: a damaged gzip
    file, or a read that fails (an I/O error)."""
    try:
        yield
    except GZIP_ERRORS as exc:
        problem = " ".join(str(exc).split()) or type(exc).__name__
        raise UnreadableFileError(
            f"{path}: not gzip data, or a damaged gzip file ({problem})"
        ) from None
    except OSError as exc:
        raise _unreadable(Path(path), exc) from None


def not_utf8(
    path: str | os.PathLike, offset: int, bad: bytes = b"", hint: str = ""
) -> UnreadableFileError:
    """The error for a byte that is not UTF-8 at ``offset`` (counted from 0) of ``path``;
    ``hint``, when given, follows after a semicolon."""
    byte = f"byte {offset}" + (f" is {bad!r}" if bad else "")
    where = " of its decompressed text" if str(path).lower().endswith(".gz") else ""
    then = f"; {hint}" if hint else ""
    return UnreadableFileError(f"{path}: not UTF-8 text ({byte}{where}){then}")


def first_non_utf8(path: str | os.PathLike, block: int = 1 << 20) -> tuple[int, bytes] | None:
    """``(offset, byte)`` of the first byte of ``path`` (decompressed when ``.gz``) that is not
    UTF-8, or None: read in blocks, never the whole file at once. A sequence cut short by the
    end of the file counts as bad at its first byte."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset = 0
    with reading(path), open_binary(path) as fh:
        while True:
            chunk = fh.read(block)
            pending = len(decoder.getstate()[0])
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                data = exc.object  # the pending bytes and this chunk
                return offset - pending + exc.start, data[exc.start : exc.start + 1]
            if not chunk:
                return None
            offset += len(chunk)


def decode_utf8(path: str | os.PathLike, data: bytes, offset: int = 0) -> str:
    """``data``, the bytes at ``offset`` of ``path``, as text; a byte order mark at offset 0 is
    dropped, a byte that is not UTF-8 refused with its offset in the file (:func:`not_utf8`)."""
    start = len(BOM) if offset == 0 and data.startswith(BOM) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        pos = start + exc.start
        raise not_utf8(path, offset + pos, data[pos : pos + 1]) from None


def read_utf8(path: str | os.PathLike, what: str = "file") -> str:
    """The text of ``path`` (checked by :func:`check_file` as ``what``; decompressed when
    ``.gz``), UTF-8 (:func:`decode_utf8`)."""
    path = check_file(path, what)
    with reading(path), open_binary(path) as fh:
        data = fh.read()
    return decode_utf8(path, data)


#: A surrogate code point: half of a UTF-16 pair, no character of its own (UTF-8 cannot hold it).
_SURROGATE = re.compile("[\ud800-\udfff]")
#: What a reader says of a text holding one.
LONE_SURROGATE = "a lone surrogate escape (\\ud800 to \\udfff) is no character; texts are UTF-8"
#: A JSON (or Python) escape of one, the only way a surrogate gets into decoded text.
ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate(value) -> str | None:
    """Where in ``value`` (a decoded JSON document) the first text holding a lone surrogate is
    (``judgments[0].judgment``; ``""`` for ``value`` itself), or None. JSON's ``\\udc80``
    escape decodes to one, which no UTF-8 file can hold: a reader refuses it rather than
    fail later on writing it. Walked without recursion (a document may be deeply nested)."""
    stack = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                name = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and _SURROGATE.search(key):
                    return name
                stack.append((name, child))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", child) for i, child in reversed(list(enumerate(item))))
    return None


class RefusedYAML(yaml.YAMLError):
    """What a file handed over may not hold, although YAML allows it (the message: the line and
    what)."""


class DataLoader(yaml.SafeLoader):
    """YAML's safe loader for a file a user hands over (a profile, a data manifest, a table's
    map file): no anchor (``&``) or alias (``*``), refused with its line before any value is
    built. A few lines of nested aliases stand for billions of values, which any check, message
    or hash would then go through. ``in_full``: the end of the refusal's message."""

    in_full = "; give every value in full, without anchors (&) or aliases (*)"

    def compose_node(self, parent, index):
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise RefusedYAML(f"line {line}: YAML alias *{_cut(event.anchor)}{self.in_full}")
        if getattr(event, "anchor", None) is not None:
            raise RefusedYAML(f"line {line}: YAML anchor &{_cut(event.anchor)}{self.in_full}")
        return super().compose_node(parent, index)


def _cut(text: str, most: int = 80) -> str:
    """``text`` cut to ``most`` characters."""
    return text if len(text) <= most else text[: most - 3] + "..."


def read_yaml_data(path: str | os.PathLike, what: str = "file"):
    """The YAML file ``path`` read as data (:class:`DataLoader`), UTF-8 (:func:`read_utf8`)."""
    return yaml.load(read_utf8(path, what), Loader=DataLoader)
