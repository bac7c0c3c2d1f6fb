"""Preference pairs: their one schema, validator and reader.

A pair is one row with the columns :data:`PAIR_COLUMNS`::

    id, dataset, subset, domain, prompt, response_a, response_b, label

The columns are defined beside the records' (:mod:`racer_lib.records.schema`). ``label = 1``
means response A is preferred, ``0`` response B (the records' convention).
:mod:`racer_lib.records.judgebench` and :mod:`racer_lib.records.llmbar` build their datasets'
pairs in this schema, :mod:`racer_lib.judging` judges them (every column; the label decides
correctness) and :mod:`racer_lib.records.embed` embeds them as ``[e(prompt), e(A), e(B)]`` (the
id and the three texts :data:`TEXT_FIELDS` only: a pair to route has no label yet).

Pairs files (:func:`read_pairs`) are ``.parquet``, ``.csv`` or ``.jsonl``, optionally ``.gz``.
:func:`validate_pairs` checks them and raises :class:`racer_lib.records.schema.RecordsError`
naming the file, the row (counted from 0), the pair's id and the field: ids present, non-empty and
unique; texts present (not null) and strings; labels 0 or 1. An **empty** text (empty or only white
space) is allowed, since an empty response is a legitimate, if poor, answer, and comes with an
:class:`EmptyTextWarning` naming the first such row and how many more there are.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pandas as pd

from racer_lib.errors import ConfigError, InputError
from racer_lib.records import files, judgebench, llmbar
from racer_lib.records.io import PARQUET_ERRORS, cannot_read, read_parquet_frame
from racer_lib.records.judgebench import jsonl_objects
from racer_lib.records.schema import (
    PAIR_COLUMNS,
    TEXT_FIELDS,
    RecordsError,
    check_single_values,
    look_alikes,
    raise_at,
)

#: What a pairs table may leave out, and the value it then gets.
DEFAULTS = {"dataset": "pairs", "subset": "all", "domain": "all"}
#: The datasets known by name (:mod:`racer_lib.records.judgebench`,
#: :mod:`racer_lib.records.llmbar`); any other name is a pairs file.
DATASETS = ("judgebench", "llmbar")
IN_MEMORY_PAIRS = "<in-memory pairs>"
#: The formats of a pairs file, by suffix (before a ``.gz``).
PAIRS_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "CSV",
    ".jsonl": "JSONL",
    ".ndjson": "JSONL",
}
PAIRS_FORMATS_TEXT = "pairs files are .parquet, .csv or .jsonl (UTF-8; .gz too)"


class EmptyTextWarning(UserWarning):
    """A pair has an empty prompt or response (it is used as the empty string)."""


def validate_pairs(
    pairs: pd.DataFrame, file: str | os.PathLike = IN_MEMORY_PAIRS, *, labelled: bool = True
) -> pd.DataFrame:
    """Check a pairs table and return it normalised (a copy, other columns dropped).

    ``labelled`` (pairs to judge): the columns :data:`PAIR_COLUMNS`, of which ``dataset``,
    ``subset`` and ``domain`` default to :data:`DEFAULTS`; labels must be 0 or 1 (returned as
    int8). Otherwise (pairs to embed) only ``id`` and the texts are needed and returned. Ids
    become strings; errors name the file, row, id and field (see the module's docstring).
    """
    out = pairs.reset_index(drop=True).copy()
    if labelled:
        for col, default in DEFAULTS.items():
            if col not in out.columns:
                out[col] = default
    needed = PAIR_COLUMNS if labelled else ["id", *TEXT_FIELDS]
    missing = [c for c in needed if c not in out.columns]
    if missing:
        raise RecordsError(
            file,
            missing[0],
            f"missing column{look_alikes(out.columns, missing)}; pairs need the columns "
            + ", ".join(c for c in needed if c not in DEFAULTS)
            + (f" (also missing: {', '.join(missing[1:])})" if missing[1:] else ""),
        )
    out = out.loc[:, needed]
    check_single_values(out, file, needed)
    raise_at(out, file, "id", out["id"].isna(), "missing id")
    out["id"] = out["id"].astype(str)
    raise_at(out, file, "id", out["id"].str.len() == 0, "empty id")
    ids = out["id"].tolist()
    raise_at(
        out,
        file,
        "id",
        out["id"].duplicated(keep="first"),
        lambda v: f"duplicate id, first seen at row {ids.index(v)}",
    )
    for field in TEXT_FIELDS:
        col = out[field]
        raise_at(
            out,
            file,
            field,
            col.isna(),
            "missing text (null); write an empty string for an empty text",
        )
        raise_at(
            out,
            file,
            field,
            [not isinstance(v, str) for v in col],
            lambda v: f"{v!r} ({type(v).__name__}) is not a text",
        )
        try:
            raise_at(
                out,
                file,
                field,
                [not v.strip() for v in col],
                "empty text; it is used as the empty string",
            )
        except RecordsError as empty:  # allowed: a warning, not an error
            warnings.warn(EmptyTextWarning(str(empty)), stacklevel=3)
    if labelled:
        label = pd.to_numeric(out["label"], errors="coerce")
        raise_at(
            out,
            file,
            "label",
            ~label.isin([0, 1]),
            lambda v: f"{v!r} is not a label; labels are 0 (B preferred) or 1 (A preferred)",
        )
        out["label"] = label.astype("int8")
        for col in DEFAULTS:
            given = out[col].astype(object)  # a column of NaN is float: fill it with text
            out[col] = given.where(given.notna(), "").astype(str)
    return out


def read_pairs(path: str | os.PathLike) -> pd.DataFrame:
    """A pairs file as stored, not validated: ``.parquet``, ``.csv`` or ``.jsonl`` (``.gz`` too).

    The one reader of pairs files; its callers validate what they need (:func:`validate_pairs`).
    CSV fields are read as strings, so an empty field is an empty text, not NaN. JSONL: one JSON
    object per line (blank lines skipped). What cannot be read is refused in one line naming
    the file (and the line of a JSONL file): a folder, a symlink loop, a FIFO
    (:func:`racer_lib.records.files.check_file`), bytes that are not the format or not UTF-8.
    """
    path = files.check_file(path, "pairs file")
    suffixes = [s.lower() for s in path.suffixes]
    kind = (
        suffixes[-2]
        if suffixes and suffixes[-1] == ".gz" and len(suffixes) > 1
        else (suffixes[-1] if suffixes else "")
    )
    if kind not in PAIRS_FORMATS:
        raise InputError(
            f"{path}: unknown pairs format {kind or '(no suffix)'!r}; use .parquet, .csv or .jsonl"
        )
    if kind in (".jsonl", ".ndjson"):
        return _read_jsonl(path)
    if kind == ".csv":
        return _read_csv(path)
    try:
        return read_parquet_frame(path)
    except (*PARQUET_ERRORS, UnicodeDecodeError) as exc:
        raise cannot_read(path, exc, "parquet", PAIRS_FORMATS_TEXT) from None


def _read_csv(path: Path) -> pd.DataFrame:
    """A pairs CSV, every field a string: an empty field is an empty text, not NaN."""
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, *files.GZIP_ERRORS) as exc:
        raise cannot_read(path, exc, "CSV", PAIRS_FORMATS_TEXT) from None
    except UnicodeDecodeError as exc:  # its offset is in pandas' buffer: find it in the file
        found = files.first_non_utf8(path)
        offset, bad = found if found is not None else (exc.start, b"")
        raise files.not_utf8(path, offset, bad, PAIRS_FORMATS_TEXT) from None


def _read_jsonl(path: Path) -> pd.DataFrame:
    """The objects of a JSONL pairs file as a table (one row per non-blank line)."""
    return pd.DataFrame([item for _, item in jsonl_objects(path, "pairs file")])


def dataset_tag(dataset: str | os.PathLike) -> str:
    """A dataset's short name: ``judgebench``, ``llmbar``, or a pairs file's name up to its
    first dot (``runs/mix.train.parquet`` -> ``mix``), as records and file names use it."""
    return Path(str(dataset)).name.split(".")[0]


def dataset_ref(dataset: str | os.PathLike) -> str:
    """What a judging run stores as its dataset: a known name as it is, a pairs file by its
    absolute path (so the run can reload its pairs from any working directory)."""
    return str(dataset) if str(dataset) in DATASETS else str(files.real_path(dataset))


def load_pairs(dataset: str | os.PathLike, limit: int | None = None) -> pd.DataFrame:
    """Validated, labelled pairs: ``judgebench`` (:mod:`racer_lib.records.judgebench`),
    ``llmbar`` (:mod:`racer_lib.records.llmbar`) or a pairs file (its ``dataset`` column, when
    absent, is the file's :func:`dataset_tag`); the first ``limit`` pairs when given."""
    if str(dataset) == "judgebench":
        pairs = judgebench.judgebench_pairs()
    elif str(dataset) == "llmbar":
        pairs = llmbar.llmbar_pairs()
    else:
        path = files.check_file(dataset, "pairs file", hint=f" (or use {' / '.join(DATASETS)})")
        raw = read_pairs(path)
        if "dataset" not in raw.columns:
            raw["dataset"] = dataset_tag(path)
        pairs = validate_pairs(raw, path)
    if limit is not None:
        pairs = pairs.head(int(limit)).reset_index(drop=True)
    return validate_pairs(pairs, str(dataset))


def shortest(pairs: pd.DataFrame, n: int) -> pd.DataFrame:
    """The ``n`` shortest pairs: fewest characters in the prompt plus both responses (column
    ``n_chars``), ties broken by id. Deterministic, and cheap to judge on a CPU."""
    if not 1 <= n <= len(pairs):
        raise ConfigError(f"n_pairs must be between 1 and {len(pairs)} (got {n})")
    n_chars = sum(pairs[f].str.len() for f in TEXT_FIELDS)
    return (
        pairs.assign(n_chars=n_chars).sort_values(["n_chars", "id"]).head(n).reset_index(drop=True)
    )


def describe_sample(sample: pd.DataFrame, of: pd.DataFrame, dataset: str) -> str:
    """One line on a :func:`shortest` sample: how many of how many pairs, their lengths and
    domains."""
    domains = ", ".join(f"{d} {k}" for d, k in sample["domain"].value_counts().items())
    return (
        f"{len(sample)} of {len(of)} {dataset} pairs, {sample['n_chars'].min():,} to "
        f"{sample['n_chars'].max():,} characters; domains: {domains}"
    )
