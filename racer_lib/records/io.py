"""Reading and writing judge records and their embeddings, and the atomic write every writer uses.

Records (:mod:`racer_lib.records.schema`) are parquet or CSV files, validated on every read and
write; embeddings live in a second parquet file beside them (``train.parquet`` ->
``train.embeddings.parquet``), keyed by id, one fixed-size float vector per pair.
:func:`load` reads both, aligned by id. Every file racer writes goes through
:func:`atomic_write`: a temporary file in the same folder, then a rename.
"""

from __future__ import annotations

import errno
import io
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq

from racer_lib.errors import InputError, MissingFileError, UnreadableFileError, WriteError
from racer_lib.records import files
from racer_lib.records.schema import (
    IN_MEMORY,
    MODES,
    SELF_ROUTE,
    STRING_COLUMNS,
    RecordsError,
    look_alikes,
    mode_columns,
    validate_records,
)

#: What Arrow raises on bytes that are not parquet, or a parquet file it cannot decode (its
#: ``ArrowIOError`` is a plain :class:`OSError`).
PARQUET_ERRORS = (pa.ArrowException, OSError)
#: The formats of a records file, by suffix.
RECORDS_FORMATS = {".parquet": "parquet", ".csv": "CSV"}
FORMATS_TEXT = "records files are .parquet or .csv (UTF-8)"


def atomic_write(path: str | os.PathLike, write) -> None:
    """Write ``path`` by calling ``write(tmp)`` on a temporary file in the same folder, then
    renaming it: a reader never sees half a file, and a failed ``write`` leaves ``path`` as it
    was. The file gets the mode a plain ``open`` would give (``0o666`` less the umask). An
    :class:`InputError` (naming ``path``) where it is a folder or its folder is a file; a
    :class:`~racer_lib.errors.WriteError` (``cannot write PATH: no space left on device``)
    where the system refuses a write."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give the path of a file to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(f"{path}: cannot write here, a part of its folder is a file") from None
    except OSError as exc:
        raise WriteError(path.parent, exc) from exc
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from others
        os.replace(tmp, path)
    except WriteError:
        raise
    except OSError as exc:  # a full disk, an I/O error: the file is left as it was
        raise WriteError(path, exc) from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)


def read_parquet_frame(path: str | os.PathLike) -> pd.DataFrame:
    """A parquet file as pandas reads it (:func:`pandas.read_parquet`), its texts checked to be
    UTF-8 (Arrow does not check them on reading). Where the file's pandas metadata (how pandas
    wrote the table: its index, its columns' dtypes) is damaged, as another tool may leave it,
    the columns are read as stored, without it. Arrow's errors (:data:`PARQUET_ERRORS`: bytes
    that are not parquet, texts that are not UTF-8) are the caller's to name."""
    try:
        frame = pd.read_parquet(path)
    except PARQUET_ERRORS:
        raise
    except Exception:  # only a damaged pandas metadata is forgiven, below
        table = pq.read_table(path)
        meta = table.schema.metadata or {}
        if b"pandas" not in meta:
            raise
        buffer = io.BytesIO()
        kept = {k: v for k, v in meta.items() if k != b"pandas"}
        pq.write_table(table.replace_schema_metadata(kept), buffer)
        frame = pd.read_parquet(buffer)
    for column in frame.columns:
        dtype = frame[column].dtype
        if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
            pa.array(frame[column].array).validate(full=True)  # ArrowInvalid: not UTF-8
    return frame


def _umask() -> int:
    """This process's umask (read by setting it and setting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_records(path: str | os.PathLike) -> pd.DataFrame:
    """Read and validate judge records from parquet (``.parquet``) or CSV (``.csv``).

    What is not a records file is refused in one line naming it: a folder, a symlink loop, a
    FIFO (:func:`racer_lib.records.files.check_file`), another suffix, bytes that are not
    parquet, CSV that does not parse or is not UTF-8 (the offset of the first bad byte)."""
    path = files.check_file(path, "records file")
    _check_format(path)
    if path.suffix == ".csv":
        df = _read_csv_records(path)
    else:
        try:
            df = read_parquet_frame(path)
        except (*PARQUET_ERRORS, UnicodeDecodeError) as exc:
            raise cannot_read(path, exc, "parquet", FORMATS_TEXT) from None
    out = validate_records(df, file=path)
    if out.empty:
        raise RecordsError(path, "id", "no records: the file has a header but no rows")
    return out


def _read_csv_records(path: Path) -> pd.DataFrame:
    """A records CSV as its columns, ids and other texts as strings, empty numbers as NA."""
    try:
        return pd.read_csv(
            path,
            dtype={c: str for c in [*STRING_COLUMNS, SELF_ROUTE]},
            keep_default_na=False,
            na_values={c: [""] for c in [*_df_numeric_columns(), SELF_ROUTE]},
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, OSError) as exc:
        raise cannot_read(path, exc, "CSV", FORMATS_TEXT) from None
    except UnicodeDecodeError as exc:  # its offset is in pandas' buffer: find it in the file
        found = files.first_non_utf8(path)
        offset, bad = found if found is not None else (exc.start, b"")
        raise files.not_utf8(path, offset, bad, FORMATS_TEXT) from None


def cannot_read(path: str | os.PathLike, exc: Exception, kind: str, formats: str) -> InputError:
    """One line: ``path`` cannot be read as ``kind``, pandas' or Arrow's words in brackets (a
    name in a parquet file's schema that is not UTF-8 said so), then the ``formats`` read. A
    read the system refused (an :class:`OSError` with its errno: an I/O error, a file removed
    meanwhile) is said as such: ``path: cannot be read (Input/output error)``."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return UnreadableFileError(
            f"{path}: cannot be read ({exc.strerror or errno.errorcode.get(exc.errno, exc)})"
        )
    if isinstance(exc, UnicodeDecodeError):
        problem = "a name in its schema is not UTF-8 text"
    else:
        problem = " ".join(str(exc).split()) or type(exc).__name__
    return InputError(f"{path}: cannot be read as {kind} ({problem}); {formats}")


def _check_format(path: Path) -> None:
    """Refuse a records path whose suffix names no records format (:data:`RECORDS_FORMATS`)."""
    if path.suffix not in RECORDS_FORMATS:
        got = f"{path.suffix!r}" if path.suffix else "no suffix"
        raise InputError(
            f"{path}: not a records file ({got}); {FORMATS_TEXT}. Judge outputs of other tools "
            "(JSONL) become records with `racer records import`"
        )


def _df_numeric_columns() -> list[str]:
    """Columns that hold numbers (used to read CSV without turning empty strings into NaN ids)."""
    return ["label"] + [
        mode_columns(m)[k] for m in MODES for k in ("correct", "tokens", "thinking_tokens")
    ]


def write_records(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Validate and write records atomically (parquet, or CSV for a ``.csv`` path)."""
    path = Path(path)
    if not path.is_dir():  # a folder: atomic_write says so
        _check_format(path)
    clean = validate_records(df, file=path)
    if path.suffix == ".csv":
        atomic_write(path, lambda tmp: clean.to_csv(tmp, index=False))
    else:
        atomic_write(path, lambda tmp: clean.to_parquet(tmp, index=False))
    return path


# ----------------------------------------------------------------------------------------
# Embeddings, keyed by id, in a parquet file beside the records


def embeddings_path(records_path: str | os.PathLike) -> Path:
    """``train.parquet`` -> ``train.embeddings.parquet`` (the file beside the records)."""
    p = Path(records_path)
    return p.with_name(p.name.removesuffix(p.suffix) + ".embeddings.parquet")


@dataclass
class Embeddings:
    """Pair embeddings: ``matrix[i]`` is the vector of ``ids[i]``."""

    ids: np.ndarray
    matrix: np.ndarray
    embedder: str

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


def _check_finite(matrix: np.ndarray, ids: Sequence[str], file, offset: int = 0) -> None:
    bad = ~np.isfinite(matrix)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        row = int(rows[0])
        col = int(np.flatnonzero(bad[row])[0])
        raise RecordsError(
            file,
            "embedding",
            f"{matrix[row, col]} at dimension {col}; embeddings must be finite",
            row=offset + row,
            record_id=str(ids[row]),
            more=len(rows) - 1,
        )


def write_embeddings(
    path: str | os.PathLike, chunks: Iterable[tuple[Sequence[str], np.ndarray]], embedder: str
) -> Path:
    """Write embeddings chunk by chunk (so 40k x 7680 floats never sit in memory twice).

    ``chunks`` yields ``(ids, matrix)`` pairs; all matrices share one width. Pass
    ``[(ids, matrix)]`` to write a single array. The file is replaced atomically.
    """
    path = Path(path)

    def write(tmp):
        writer, offset, dim = None, 0, None
        try:
            for ids, matrix in chunks:
                matrix = np.ascontiguousarray(matrix, dtype=np.float32)
                if matrix.ndim != 2 or len(ids) != len(matrix):
                    raise ValueError(
                        f"{path}: a chunk has {len(ids)} ids but matrix shape {matrix.shape}"
                    )
                dim = matrix.shape[1] if dim is None else dim
                if matrix.shape[1] != dim:
                    raise ValueError(f"{path}: chunk width {matrix.shape[1]} differs from {dim}")
                _check_finite(matrix, ids, path, offset)
                values = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dim)
                table = pa.table(
                    {"id": pa.array([str(i) for i in ids], pa.string()), "embedding": values}
                )
                if writer is None:
                    meta = {b"embedder": embedder.encode(), b"dim": str(dim).encode()}
                    writer = pq.ParquetWriter(tmp, table.schema.with_metadata(meta))
                writer.write_table(table)
                offset += len(ids)
        finally:
            if writer is not None:
                writer.close()
        if writer is None:
            raise ValueError(f"{path}: no embeddings to write")

    atomic_write(path, write)
    return path


def _check_lengths(col: pa.Array, ids: np.ndarray, path: Path) -> None:
    """Every row one vector of the first row's length (a list column may vary; a
    fixed-size one may hold nulls)."""
    missing = col.is_null().to_numpy(zero_copy_only=False)
    _refuse_first(path, "embedding", missing, lambda row: "missing embedding", ids)
    if pa.types.is_fixed_size_list(col.type) or not len(col):
        return
    lengths = np.asarray(pa.compute.list_value_length(col).to_numpy(zero_copy_only=False))
    bad = lengths != lengths[0]
    _refuse_first(
        path,
        "embedding",
        bad,
        lambda row: (
            f"{lengths[row]} values, but row 0 has {lengths[0]}; every embedding needs one length"
        ),
        ids,
    )


def _refuse_first(path, field: str, bad: np.ndarray, message, ids=None) -> None:
    """A :class:`RecordsError` at the first row where ``bad`` holds (``message(row)``, its id
    from ``ids`` where given, how many more rows are bad); nothing where none is."""
    if not bad.any():
        return
    row = int(np.flatnonzero(bad)[0])
    record_id = None if ids is None else str(ids[row])
    raise RecordsError(
        path, field, message(row), row=row, record_id=record_id, more=int(bad.sum()) - 1
    )


def read_embeddings(path: str | os.PathLike) -> Embeddings:
    """Read an embeddings file and check it: unique ids, finite values."""
    path = files.check_file(path, "embeddings file")
    try:
        table = pq.read_table(path)
        names = table.column_names
    except (*PARQUET_ERRORS, UnicodeDecodeError) as exc:
        raise cannot_read(path, exc, "parquet", "embeddings files are parquet") from None
    if "id" not in names or "embedding" not in names:
        missing = "id" if "id" not in names else "embedding"
        hint = look_alikes(names, [missing])
        raise RecordsError(
            path, missing, f"missing column{hint}; embeddings need 'id' and 'embedding'"
        )
    try:
        table.column("id").validate(full=True)  # Arrow does not check on reading: UTF-8 text
    except PARQUET_ERRORS as exc:
        raise cannot_read(path, exc, "parquet", "embeddings files are parquet") from None
    meta = table.schema.metadata or {}
    try:
        embedder = meta.get(b"embedder", b"").decode("utf-8")
    except UnicodeDecodeError:
        raise RecordsError(
            path, "embedder", "the embedder's name in the file's metadata is not UTF-8 text"
        ) from None
    ids = np.asarray(table.column("id").to_pylist(), dtype=object)
    not_text = np.array([not isinstance(i, str) for i in ids], dtype=bool)
    _refuse_first(path, "id", not_text, lambda row: f"{ids[row]!r} is not a text id")
    col = table.column("embedding").combine_chunks()
    if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and not (
        pa.types.is_fixed_size_list(col.type)
    ):
        raise RecordsError(path, "embedding", f"expected a list of floats per row, got {col.type}")
    _check_lengths(col, ids, path)
    dim = (
        col.type.list_size
        if pa.types.is_fixed_size_list(col.type)
        else (len(col[0].values) if len(col) else 0)
    )
    matrix = col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    matrix = matrix.reshape(len(ids), dim)
    _check_finite(matrix, ids, path)
    dup = pd.Series(ids).duplicated().to_numpy()
    _refuse_first(path, "id", dup, lambda row: "duplicate id in the embeddings", ids)
    return Embeddings(ids=ids, matrix=matrix, embedder=embedder)


def align_embeddings(
    records: pd.DataFrame,
    emb: Embeddings,
    file: str | os.PathLike = "<embeddings>",
    records_file: str | os.PathLike = IN_MEMORY,
) -> np.ndarray:
    """Return the embedding matrix in the records' row order; every id must match one-to-one."""
    index = pd.Index(emb.ids)
    pos = index.get_indexer(records["id"].to_numpy())
    _refuse_first(
        records_file,
        "id",
        pos < 0,
        lambda row: f"no embedding for this id in {file}",
        records["id"].to_numpy(),
    )
    if len(emb.ids) != len(records):
        extra = ~index.isin(records["id"].to_numpy())
        _refuse_first(
            file,
            "id",
            extra,
            lambda row: f"this embedding's id is not among the records of {records_file}",
            emb.ids,
        )
    return emb.matrix[pos]


def load(
    path: str | os.PathLike, with_embeddings: bool = True
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Read records and, when asked and present, the embeddings beside them, aligned by id."""
    records = read_records(path)
    epath = embeddings_path(path)
    if not with_embeddings:
        return records, None
    if not files.present(epath):
        raise MissingFileError(f"{epath}: no embeddings beside {path}")
    return records, align_embeddings(records, read_embeddings(epath), epath, path)
