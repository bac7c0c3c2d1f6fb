"""Judge records: one row per preference pair, both judge modes side by side.

A router needs both outcomes of every pair, so a record holds the pair's identity and, for
each mode ``a`` (0 = instruct, 1 = reasoning, as in the paper's notation), the parsed verdict,
the correctness ``r(z, a, l) = 1[Phi_a(z) = l]`` and the generated-token count. Embeddings live
in a second file beside the records, keyed by id.

Every reader validates. A bad value raises :class:`RecordsError`, whose message names the
file, the row (counted from 0, in file order) and the field, e.g.::

    train.parquet: row 17 (id 'sky-00017'), field 'label': 2 is not a label; labels are 0 or 1

Cost unit (the paper's "cost ratio", made explicit): ``c(z, a) = tokens_a(z) / mean_z
tokens_0(z)``, the mean taken on the training set, so All-Instruct costs 1.0 on training data.
The *realized cost ratio* of a policy on an evaluation set is measured against that set's own
All-Instruct tokens (:func:`realized_cost_ratio`).
"""

from __future__ import annotations

import difflib
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

from racer_lib.errors import ConfigError, InputError, MissingFileError, RacerError

MODES: tuple[str, str] = ("instruct", "reasoning")  # index = the paper's action a
VERDICTS: tuple[str, ...] = ("A", "B", "unparseable")
UNPARSEABLE = "unparseable"

ID_COLUMNS = ["id", "dataset", "subset", "domain", "split", "label", "judge", "source"]
STRING_COLUMNS = ["id", "dataset", "subset", "domain", "split", "judge", "source"]


def mode_columns(mode: str) -> dict[str, str]:
    """Column names of one mode: verdict, correct, tokens, thinking_tokens."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; modes are {MODES}")
    return {k: f"{k}_{mode}" for k in ("verdict", "correct", "tokens", "thinking_tokens")}


REQUIRED_COLUMNS = ID_COLUMNS + [
    mode_columns(m)[k] for m in MODES for k in ("verdict", "correct", "tokens")
]
#: The self-routing decision (the instruct mode asked whether it needs reasoning, see
#: :mod:`racer_lib.prompts`): ``yes``, ``no``, ``unparseable``, or missing where not asked.
SELF_ROUTE = "self_route"
SELF_ROUTE_VALUES: tuple[str, ...] = ("yes", "no", "unparseable")
#: Thinking tokens are known only for some backends, and the self-routing decision only where
#: it was asked; a missing column is filled with NA.
OPTIONAL_COLUMNS = [mode_columns(m)["thinking_tokens"] for m in MODES] + [SELF_ROUTE]
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
IN_MEMORY = "<in-memory records>"
#: The largest token count a record may hold: 2**53, the largest whole number a float64 holds
#: exactly (tokens are summed and averaged as floats in the cost unit); far above any real count.
MAX_TOKENS = 2**53


class RecordsError(RacerError, ValueError):
    """Bad judge records or embeddings; the message names file, row and field."""

    def __init__(
        self,
        file: str | os.PathLike,
        field: str,
        problem: str,
        row: int | None = None,
        record_id: str | None = None,
        more: int = 0,
    ):
        self.file, self.field, self.row, self.record_id = str(file), field, row, record_id
        where = f"{self.file}: "
        if row is not None:
            where += f"row {row}" + (f" (id {record_id!r})" if record_id is not None else "") + ", "
        message = f"{where}field {field!r}: {problem}"
        if more:
            message += f" (and {more} more row{'s' if more > 1 else ''})"
        super().__init__(message)


def _first_bad(mask: np.ndarray) -> tuple[int | None, int]:
    bad = np.flatnonzero(mask)
    return (int(bad[0]), len(bad) - 1) if len(bad) else (None, 0)


def _raise_at(df: pd.DataFrame, file, field: str, mask, problem) -> None:
    """Raise for the first row where ``mask`` holds; ``problem`` may be a callable of the value."""
    row, more = _first_bad(np.asarray(mask, dtype=bool))
    if row is None:
        return
    value = df[field].iloc[row]
    value = value.item() if isinstance(value, np.generic) else value  # 2, not np.int64(2)
    text = problem(value) if callable(problem) else problem
    rid = df["id"].iloc[row] if "id" in df.columns else None
    raise RecordsError(
        file, field, text, row=row, record_id=None if pd.isna(rid) else str(rid), more=more
    )


def validate_records(df: pd.DataFrame, file: str | os.PathLike = IN_MEMORY) -> pd.DataFrame:
    """Check a records table and return it with normalised dtypes (a copy).

    Checks: every required column is present; ids are present and unique; labels are 0 or 1;
    token counts are present, whole and non-negative; thinking tokens, where given, lie in
    ``[0, tokens]``; verdicts are ``A``, ``B`` or ``unparseable``; ``correct`` agrees with the
    verdict and the label (an unparseable verdict counts as incorrect); the self-routing
    decision, where given, is ``yes``, ``no`` or ``unparseable``.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise RecordsError(
            file,
            missing[0],
            "missing column; judge records need the columns "
            + ", ".join(REQUIRED_COLUMNS)
            + (f" (also missing: {', '.join(missing[1:])})" if missing[1:] else ""),
        )
    for col in df.columns:
        near = difflib.get_close_matches(
            str(col), [c for c in OPTIONAL_COLUMNS if c not in df.columns], n=1, cutoff=0.8
        )
        if col not in COLUMNS and near:
            raise RecordsError(
                file,
                str(col),
                f"unknown column; did you mean {near[0]!r}? (optional columns: "
                f"{', '.join(OPTIONAL_COLUMNS)})",
            )
    out = df.reset_index(drop=True).copy()
    for col in OPTIONAL_COLUMNS:
        if col not in out.columns:
            out[col] = pd.NA

    for col in STRING_COLUMNS:
        _raise_at(out, file, col, out[col].isna().to_numpy(), "missing value")
        out[col] = out[col].astype(str)
    _raise_at(out, file, "id", (out["id"].str.len() == 0).to_numpy(), "empty id")
    dup = out["id"].duplicated(keep="first").to_numpy()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        first = int(np.flatnonzero(out["id"].to_numpy() == out["id"].iloc[row])[0])
        raise RecordsError(
            file,
            "id",
            f"duplicate id, first seen at row {first}",
            row=row,
            record_id=out["id"].iloc[row],
            more=int(dup.sum()) - 1,
        )

    label = pd.to_numeric(out["label"], errors="coerce")
    _raise_at(
        out,
        file,
        "label",
        ~label.isin([0, 1]).to_numpy(),
        lambda v: (
            f"{v!r} is not a label; labels are 0 (response B preferred) or 1 (response A preferred)"
        ),
    )
    out["label"] = label.astype("int8")

    for mode in MODES:
        cols = mode_columns(mode)
        tok_col, think_col = cols["tokens"], cols["thinking_tokens"]
        tokens = pd.to_numeric(out[tok_col], errors="coerce")
        _raise_at(
            out,
            file,
            tok_col,
            tokens.isna().to_numpy(),
            lambda v: f"missing or non-numeric token count ({v!r})",
        )
        _raise_at(
            out,
            file,
            tok_col,
            ~np.isfinite(tokens.to_numpy(dtype=np.float64)),
            lambda v: f"token count {v} is not finite",
        )
        _raise_at(
            out, file, tok_col, (tokens < 0).to_numpy(), lambda v: f"negative token count ({v})"
        )
        _raise_at(
            out,
            file,
            tok_col,
            (tokens > MAX_TOKENS).to_numpy(),
            lambda v: f"token count {v} is out of range (at most 2**53 = {MAX_TOKENS:,})",
        )
        _raise_at(
            out,
            file,
            tok_col,
            (tokens != np.floor(tokens)).to_numpy(),
            lambda v: f"token count {v} is not a whole number",
        )
        out[tok_col] = tokens.astype("int64")

        think = pd.to_numeric(out[think_col], errors="coerce")
        given = out[think_col].notna().to_numpy()
        _raise_at(out, file, think_col, given & think.isna().to_numpy(), "non-numeric value")
        _raise_at(
            out,
            file,
            think_col,
            given & ((think < 0) | (think > tokens)).to_numpy(),
            lambda v, tok_col=tok_col: f"thinking tokens {v} outside [0, {tok_col}]",
        )
        out[think_col] = think.astype("Int64")

        verdict_col, correct_col = cols["verdict"], cols["correct"]
        _raise_at(
            out,
            file,
            verdict_col,
            ~out[verdict_col].isin(VERDICTS).to_numpy(),
            lambda v: f"{v!r} is not a verdict; verdicts are {', '.join(VERDICTS)}",
        )
        correct = out[correct_col]
        if correct.dtype == object or str(correct.dtype) in ("string", "str"):
            correct = correct.map(
                {
                    True: 1,
                    False: 0,
                    "True": 1,
                    "False": 0,
                    "true": 1,
                    "false": 0,
                    "1": 1,
                    "0": 0,
                }
            )
        correct = pd.to_numeric(correct, errors="coerce")
        _raise_at(
            out,
            file,
            correct_col,
            ~correct.isin([0, 1]).to_numpy(),
            lambda v: f"{v!r} is not a correctness value; use 0/1 or False/True",
        )
        expected = out[verdict_col].to_numpy() == np.where(out["label"] == 1, "A", "B")
        _raise_at(
            out,
            file,
            correct_col,
            correct.to_numpy().astype(bool) != expected,
            f"disagrees with {verdict_col} and label (correct means the verdict names the "
            "preferred response; unparseable counts as incorrect)",
        )
        out[correct_col] = correct.astype(bool)

    route = out[SELF_ROUTE]
    given = route.notna().to_numpy()
    _raise_at(
        out,
        file,
        SELF_ROUTE,
        given & ~route.isin(SELF_ROUTE_VALUES).to_numpy(),
        lambda v: (
            f"{v!r} is not a self-routing decision; decisions are "
            f"{', '.join(SELF_ROUTE_VALUES)} (empty where not asked)"
        ),
    )
    out[SELF_ROUTE] = route.astype("string")
    return out


def self_route_decisions(
    records: pd.DataFrame, unparseable: str = "reasoning", file: str | os.PathLike = IN_MEMORY
) -> np.ndarray:
    """Follow the judge's own yes/no answer: 1 = reasoning, 0 = instruct, per pair.

    ``yes`` reasons and ``no`` does not; an ``unparseable`` answer goes to ``unparseable``'s
    mode (default: reasoning, since the judge did not decline it). Every record must carry a
    decision: a missing one is an error naming the row.
    """
    if unparseable not in MODES:
        raise ConfigError(f"unparseable must be one of {MODES} (got {unparseable!r})")
    if SELF_ROUTE not in records.columns:
        raise RecordsError(
            file,
            SELF_ROUTE,
            "missing column; these records have no "
            "self-routing decisions (judge them with the self-routing prompt)",
        )
    route = records[SELF_ROUTE]
    _raise_at(
        records, file, SELF_ROUTE, route.isna().to_numpy(), "no self-routing decision for this pair"
    )
    return np.where(
        route == "unparseable", MODES.index(unparseable), (route == "yes").astype(int)
    ).astype(np.int8)


# ----------------------------------------------------------------------------------------
# IO


def _atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same folder, then rename: never half a file.
    An :class:`InputError` (naming ``path``) where it is a folder or its folder is a file."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give the path of a file to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(f"{path}: cannot write here, a part of its folder is a file") from None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from others
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _umask() -> int:
    """This process's umask (read by setting it and setting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_records(path: str | os.PathLike) -> pd.DataFrame:
    """Read and validate judge records from parquet (``.parquet``) or CSV (``.csv``)."""
    path = Path(path)
    if not path.exists():
        raise MissingFileError(f"{path}: no such records file")
    if path.suffix == ".csv":
        df = pd.read_csv(
            path,
            dtype={c: str for c in [*STRING_COLUMNS, SELF_ROUTE]},
            keep_default_na=False,
            na_values={c: [""] for c in [*df_numeric_columns(), SELF_ROUTE]},
        )
    else:
        df = pd.read_parquet(path)
    out = validate_records(df, file=path)
    if out.empty:
        raise RecordsError(path, "id", "no records: the file has a header but no rows")
    return out


def df_numeric_columns() -> list[str]:
    """Columns that hold numbers (used to read CSV without turning empty strings into NaN ids)."""
    return ["label"] + [
        mode_columns(m)[k] for m in MODES for k in ("correct", "tokens", "thinking_tokens")
    ]


def write_records(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Validate and write records atomically (parquet, or CSV for a ``.csv`` path)."""
    path = Path(path)
    clean = validate_records(df, file=path)
    if path.suffix == ".csv":
        _atomic_write(path, lambda tmp: clean.to_csv(tmp, index=False))
    else:
        _atomic_write(path, lambda tmp: clean.to_parquet(tmp, index=False))
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

    _atomic_write(path, write)
    return path


def _check_lengths(col: pa.Array, ids: np.ndarray, path: Path) -> None:
    """Every row one vector of the first row's length (a list column may vary; a
    fixed-size one may hold nulls)."""
    missing = col.is_null().to_numpy(zero_copy_only=False)
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise RecordsError(
            path, "embedding", "missing embedding", row, str(ids[row]), int(missing.sum()) - 1
        )
    if pa.types.is_fixed_size_list(col.type) or not len(col):
        return
    lengths = np.asarray(pa.compute.list_value_length(col).to_numpy(zero_copy_only=False))
    bad = lengths != lengths[0]
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise RecordsError(
            path,
            "embedding",
            f"{lengths[row]} values, but row 0 has {lengths[0]}; every embedding needs one length",
            row,
            str(ids[row]),
            int(bad.sum()) - 1,
        )


def read_embeddings(path: str | os.PathLike) -> Embeddings:
    """Read an embeddings file and check it: unique ids, finite values."""
    path = Path(path)
    if not path.exists():
        raise MissingFileError(f"{path}: no such embeddings file")
    table = pq.read_table(path)
    if "id" not in table.column_names or "embedding" not in table.column_names:
        missing = "id" if "id" not in table.column_names else "embedding"
        raise RecordsError(path, missing, "missing column; embeddings need 'id' and 'embedding'")
    meta = table.schema.metadata or {}
    ids = np.asarray(table.column("id").to_pylist(), dtype=object)
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
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        raise RecordsError(
            path,
            "id",
            "duplicate id in the embeddings",
            row=row,
            record_id=str(ids[row]),
            more=int(dup.sum()) - 1,
        )
    return Embeddings(ids=ids, matrix=matrix, embedder=meta.get(b"embedder", b"").decode())


def align_embeddings(
    records: pd.DataFrame,
    emb: Embeddings,
    file: str | os.PathLike = "<embeddings>",
    records_file: str | os.PathLike = IN_MEMORY,
) -> np.ndarray:
    """Return the embedding matrix in the records' row order; every id must match one-to-one."""
    index = pd.Index(emb.ids)
    pos = index.get_indexer(records["id"].to_numpy())
    if (pos < 0).any():
        row = int(np.flatnonzero(pos < 0)[0])
        raise RecordsError(
            records_file,
            "id",
            f"no embedding for this id in {file}",
            row=row,
            record_id=str(records["id"].iloc[row]),
            more=int((pos < 0).sum()) - 1,
        )
    if len(emb.ids) != len(records):
        extra = ~index.isin(records["id"].to_numpy())
        row = int(np.flatnonzero(extra)[0])
        raise RecordsError(
            file,
            "id",
            f"this embedding's id is not among the records of {records_file}",
            row=row,
            record_id=str(emb.ids[row]),
            more=int(extra.sum()) - 1,
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
    if not epath.exists():
        raise MissingFileError(f"{epath}: no embeddings beside {path}")
    return records, align_embeddings(records, read_embeddings(epath), epath, path)


# ----------------------------------------------------------------------------------------
# Cost unit and realized cost ratios (the module docstring; README, "Judge records")


@dataclass(frozen=True)
class CostUnit:
    """One cost unit = the mean instruct-mode tokens of the training set.

    ``c(z, a) = tokens_a(z) / tokens_per_unit``, so All-Instruct costs exactly 1.0 on the
    training set; budgets ``C`` are in this unit.
    """

    tokens_per_unit: float

    @classmethod
    def from_records(cls, train: pd.DataFrame) -> CostUnit:
        mean = float(train[mode_columns("instruct")["tokens"]].mean())
        if not mean > 0:
            raise InputError(
                "the training set's mean instruct tokens must be positive "
                f"to define a cost unit (got {mean})"
            )
        return cls(mean)

    def cost(self, records: pd.DataFrame) -> np.ndarray:
        """``c(z, a)`` for every pair, shape ``(n, 2)``: column 0 instruct, 1 reasoning."""
        return token_matrix(records) / self.tokens_per_unit


def token_matrix(records: pd.DataFrame) -> np.ndarray:
    """Generated tokens of both modes, shape ``(n, 2)`` (column ``a`` = mode ``a``)."""
    return np.column_stack([records[mode_columns(m)["tokens"]].to_numpy(np.float64) for m in MODES])


def correct_matrix(records: pd.DataFrame) -> np.ndarray:
    """Correctness ``r(z, a, l)`` of both modes, shape ``(n, 2)``."""
    return np.column_stack(
        [records[mode_columns(m)["correct"]].to_numpy(np.float64) for m in MODES]
    )


def realized_cost_ratio(records: pd.DataFrame, p_reasoning: float | np.ndarray) -> float:
    """Expected tokens of a policy over the set's own All-Instruct tokens.

    ``p_reasoning`` is the probability of choosing reasoning per pair (a scalar, per-pair
    probabilities, or 0/1 decisions). All-Instruct gives 1.0 and All-Reasoning gives the set's
    cost ratio ``sum tokens_1 / sum tokens_0``.
    """
    t = token_matrix(records)
    p = np.broadcast_to(np.asarray(p_reasoning, dtype=np.float64), (len(t),))
    return float(np.mean((1 - p) * t[:, 0] + p * t[:, 1]) / np.mean(t[:, 0]))


def infeasible_budget(
    budget: float,
    cheapest: float,
    file: str | os.PathLike = IN_MEMORY,
    tokens_per_unit: float | None = None,
) -> RecordsError | None:
    """The error for a budget at or below the cheapest possible cost, or ``None`` if feasible."""
    if np.isfinite(budget) and budget > cheapest:
        return None
    if not np.isfinite(budget):
        return RecordsError(file, "budget", f"budget C = {budget} is not a finite number")
    unit = f" (1 unit = {tokens_per_unit:.1f} instruct tokens)" if tokens_per_unit else ""
    return RecordsError(
        file,
        "budget",
        f"budget C = {budget} is infeasible: at or below the "
        f"cheapest possible cost {cheapest:.4f} cost units (the cheaper mode on "
        f"every pair){unit}",
    )


def check_budget(
    budget: float,
    records: pd.DataFrame,
    unit: CostUnit | None = None,
    file: str | os.PathLike = IN_MEMORY,
) -> float:
    """Raise when ``budget`` is at or below the cheapest cost on ``records``; return that cost.

    The cheapest policy takes the cheaper mode on every pair, so its cost is
    ``mean_z min_a c(z, a)`` (1.0 or a little less on the training set).
    """
    unit = unit or CostUnit.from_records(records)
    cheapest = float(unit.cost(records).min(axis=1).mean())
    error = infeasible_budget(budget, cheapest, file, unit.tokens_per_unit)
    if error is not None:
        raise error
    return cheapest


# ----------------------------------------------------------------------------------------
# Provenance: where records came from (simulated, a third-party release, or generated)

PROVENANCE_KINDS = {
    "simulated": "simulated",
    "release": "third-party release",
    "generated": "generated by the judging pipeline",
}


def provenance(records: pd.DataFrame, file: str | os.PathLike = IN_MEMORY) -> str:
    """``simulated``, ``release`` or ``generated`` from the ``source`` column (``mixed`` if
    several); a :class:`RecordsError` (naming ``file``) for a source of another kind."""
    kinds = {str(s).split(":", 1)[0] for s in records["source"].unique()}
    unknown = kinds - set(PROVENANCE_KINDS)
    if unknown:
        raise RecordsError(
            file,
            "source",
            f"unknown record source kind(s) {sorted(unknown)}; a "
            f"source starts with one of {', '.join(PROVENANCE_KINDS)} followed "
            "by ':'",
        )
    return combined_provenance(kinds)


def combined_provenance(provenances: Iterable[str]) -> str:
    """The one provenance shared by all of ``provenances``, or ``"mixed"``."""
    kinds = set(provenances)
    return kinds.pop() if len(kinds) == 1 else "mixed"


# ----------------------------------------------------------------------------------------
# A folder of judge records, one sub-folder per judge (the ``records_dir`` of the chapters)

#: The layout :func:`load_set` reads (the ``records_dir`` parameter of the routing chapters).
RECORDS_DIR_LAYOUT = """\
records_dir/<judge>/<set>.parquet             judge records (racer_lib.records schema)
records_dir/<judge>/<set>.embeddings.parquet  their embeddings, keyed by id (records.load)
  <set>: training_mix (column split: train, valid, test), or a benchmark (judgebench,
  rewardbench, rewardbench2) or a Skywork subset (magpie_ultra, wildguardmix, offsetbias, ...);
  every embeddings file of one judge folder has one dimension and one embedder"""
TRAINING_SPLITS = ("train", "valid", "test")


def _listing(folder: Path, pattern: str = "*") -> str:
    names = sorted(
        p.name + ("/" if p.is_dir() else "")
        for p in folder.glob(pattern)
        if not p.name.startswith(".")
    )
    return ", ".join(names) if names else "nothing"


def _embeddings_meta(path: Path) -> tuple[int | None, str]:
    """Dimension and embedder of an embeddings file, from its schema alone (no data read)."""
    schema = pq.read_schema(path)
    meta = schema.metadata or {}
    field = schema.field("embedding") if "embedding" in schema.names else None
    dim = getattr(field.type, "list_size", None) if field is not None else None
    return dim, meta.get(b"embedder", b"").decode()


def load_set(
    records_dir: str | os.PathLike, judge: str, name: str, *, embeddings: bool = True
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Read one judge's set of records (and its embeddings) from a records folder.

    Layout (:data:`RECORDS_DIR_LAYOUT`)::

        records_dir/<judge>/<set>.parquet             judge records (this module's schema)
        records_dir/<judge>/<set>.embeddings.parquet  their embeddings, keyed by id

    ``<set>`` is ``training_mix`` (whose ``split`` column must hold ``train``, ``valid`` and
    ``test``), a benchmark (``judgebench``, ``rewardbench``, ``rewardbench2``) or a Skywork
    subset name. ``racer judge run`` + ``racer judge merge`` write the records, ``racer embed``
    the embeddings (``racer simulate generate`` writes both, for a simulated judge).

    Returns ``(records, matrix)`` like :func:`load` (``matrix`` is ``None`` with
    ``embeddings=False``). Raises :class:`racer_lib.errors.MissingFileError` (a
    :class:`FileNotFoundError`) naming the missing file, the expected layout and what the folder
    holds; :class:`RecordsError` when the set holds several
    judges, when the training mixture lacks a split, or when the set's embeddings differ in
    dimension or embedder from another embeddings file of the same judge folder (a router
    trained on one set is applied to the others; the message names both files). An embeddings
    file that does not name its embedder is not compared by embedder.
    """
    root = Path(records_dir)
    folder = root / judge
    path = folder / f"{name}.parquet"
    layout = f"expected layout:\n{RECORDS_DIR_LAYOUT}"
    if not root.is_dir():
        raise MissingFileError(f"{root}: no such records folder; {layout}")
    if not folder.is_dir():
        raise MissingFileError(
            f"{folder}: no records of judge {judge!r} (the folder {root} "
            f"holds {_listing(root)}); {layout}"
        )
    if not path.is_file():
        raise MissingFileError(
            f"{path}: no such records file (set {name!r} of judge "
            f"{judge!r}; {folder} holds {_listing(folder)}); {layout}"
        )
    records = read_records(path)
    judges = sorted(records["judge"].unique())
    if len(judges) > 1:
        raise RecordsError(
            path,
            "judge",
            f"records of several judges ({', '.join(judges)}); "
            f"{folder} must hold the records of one judge",
        )
    if name == "training_mix":
        missing = [s for s in TRAINING_SPLITS if s not in set(records["split"])]
        if missing:
            holds = ", ".join(sorted(set(records["split"])))
            raise RecordsError(
                path,
                "split",
                f"no {', '.join(map(repr, missing))} pairs; the "
                "training mixture's split column needs "
                f"{', '.join(TRAINING_SPLITS)} (it holds {holds})",
            )
    if not embeddings:
        return records, None
    epath = embeddings_path(path)
    if not epath.is_file():
        raise MissingFileError(
            f"{epath}: no embeddings beside {path} (make them with "
            f"`racer embed PAIRS --out {epath}`); {layout}"
        )
    emb = read_embeddings(epath)
    for other in sorted(folder.glob("*.embeddings.parquet")):
        if other.name == epath.name:
            continue
        dim, embedder = _embeddings_meta(other)
        if dim is not None and dim != emb.dim:
            raise RecordsError(
                epath,
                "embedding",
                f"{emb.dim} dimensions, but {other} has "
                f"{dim}; every embeddings file of {folder} must have one "
                "dimension (a router trained on one set is applied to the others)",
            )
        if embedder and emb.embedder and embedder != emb.embedder:
            raise RecordsError(
                epath,
                "embedding",
                f"embedder {emb.embedder!r}, but {other} "
                f"comes from {embedder!r}; every embeddings file of {folder} must "
                "come from one embedder (a router trained on one set is applied "
                "to the others)",
            )
    return records, align_embeddings(records, emb, epath, path)
