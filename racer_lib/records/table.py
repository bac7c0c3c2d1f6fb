"""Judge records from a table in the engineer's own format, and seeded splits of records.

``racer records import --format table`` reads a CSV, JSONL or parquet file whose columns are
named as its author named them, and writes judge records (:mod:`racer_lib.records.schema`).
A :class:`TableMap` says which column holds which field of a record (``--map
label=human_pref,verdict_instruct=fast_choice`` or the ``columns:`` of a YAML map file), how
the file writes a label and a verdict (``--label-map 1=A,2=B``; ``--verdict-map
fast_a=A,fast_b=B,*=unparseable``, ``*`` catching every other value) and, optionally, the price
of a token per mode (``--prices instruct_output=0.6,reasoning_output=2.4,...``).

**Cost.** A pair's cost in mode ``m`` is ``input_tokens_m x price(m, input) + output_tokens_m x
price(m, output)``. The default prices are 0 per input token and 1 per output token, so by
default the cost is the output tokens, as everywhere in the book. With prices, the records'
``tokens_m`` hold that cost in *instruct output-token equivalents* (the cost divided by the
instruct mode's output price, or by the smallest positive price given when that one is 0),
rounded to whole tokens; the cost unit (:class:`~racer_lib.records.schema.CostUnit`, mean
instruct cost of the training pairs) is then a unit of money. Input tokens without prices do
not change the cost (the default input price is 0): give prices to count them.

:func:`assign_splits` gives records a ``split`` (``train``/``valid``/``test``) stratified by
label and seeded, which ``racer records split`` writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from racer_lib.errors import InputError
from racer_lib.records import files
from racer_lib.records.schema import (
    MODES,
    STRING_COLUMNS,
    TEXT_FIELDS,
    UNPARSEABLE,
    RecordsError,
    mode_columns,
    raise_at,
)

__all__ = [
    "FIELDS",
    "PRICE_KEYS",
    "TableMap",
    "assign_splits",
    "parse_pairs",
    "read_map_file",
    "read_table",
    "table_records",
]

#: The fields a column of the table may fill: the record's own (``tokens_m`` are the output
#: tokens) and the input tokens of each mode. Label, both verdicts and both output token
#: counts are required; the rest have defaults (``id``: ``row-N``; ``dataset``: the file's
#: stem; ``subset``, ``domain``: ``all``; ``split``: ``all``; ``judge``: ``--judge``).
REQUIRED_FIELDS = ("label", *(f"{k}_{m}" for k in ("verdict", "tokens") for m in MODES))
OPTIONAL_FIELDS = (
    "id",
    "dataset",
    "subset",
    "domain",
    "split",
    "judge",
    *TEXT_FIELDS,
    *(f"input_tokens_{m}" for m in MODES),
    *(f"thinking_tokens_{m}" for m in MODES),
)
FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
#: Price keys (``--prices``), per token; defaults 0 (input) and 1 (output).
PRICE_KEYS = tuple(f"{m}_{kind}" for m in MODES for kind in ("input", "output"))
DEFAULT_PRICES = {k: (1.0 if k.endswith("_output") else 0.0) for k in PRICE_KEYS}
#: A label names the preferred response; the schema's label is 1 for A, 0 for B.
LABEL_VALUES = {"A": 1, "B": 0}
#: Where the verdict map sends every value it does not name.
OTHER = "*"
TABLE_SUFFIXES = (".csv", ".jsonl", ".parquet")


@dataclass(frozen=True)
class TableMap:
    """How a table becomes records: ``columns`` (record field -> the table's column), the
    table's ``labels`` and ``verdicts`` (its value -> ``A``/``B``; verdicts also
    ``unparseable``, and ``*`` for every other value), ``prices`` per token (:data:`PRICE_KEYS`)
    and ``judge`` (the judge's name when no column holds it)."""

    columns: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    prices: dict[str, float] = field(default_factory=dict)
    judge: str | None = None

    def merged(self, other: TableMap) -> TableMap:
        """This map with ``other``'s entries on top (the command line over the map file)."""
        return TableMap(
            {**self.columns, **other.columns},
            {**self.labels, **other.labels},
            {**self.verdicts, **other.verdicts},
            {**self.prices, **other.prices},
            other.judge or self.judge,
        )

    def check(self, where: str = "the column map") -> None:
        """Refuse an unknown field, a missing required one, a value map to something other
        than A/B (or unparseable), an unknown or negative price."""
        unknown = sorted(set(self.columns) - set(FIELDS))
        if unknown:
            raise InputError(
                f"{where}: unknown field {unknown[0]!r}; fields are {', '.join(FIELDS)}"
            )
        for name, values, allowed in (
            ("label map", self.labels, ("A", "B")),
            ("verdict map", self.verdicts, ("A", "B", UNPARSEABLE)),
        ):
            for key, value in values.items():
                if value not in allowed:
                    raise InputError(
                        f"{where}: {name} sends {key!r} to {value!r}; values are "
                        f"{', '.join(allowed)}"
                    )
        for key, price in self.prices.items():
            if key not in PRICE_KEYS:
                raise InputError(
                    f"{where}: unknown price {key!r}; prices are {', '.join(PRICE_KEYS)}"
                )
            if not (np.isfinite(price) and price >= 0):
                raise InputError(f"{where}: price {key} = {price} is not a number >= 0")

    def all_prices(self) -> dict[str, float]:
        return {**DEFAULT_PRICES, **self.prices}


def parse_pairs(text: str, option: str) -> dict[str, str]:
    """``"a=b,c=d"`` -> ``{"a": "b", "c": "d"}``; a piece without ``=`` is refused, naming
    ``option``."""
    out: dict[str, str] = {}
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        key, eq, value = piece.partition("=")
        if not eq or not key.strip():
            raise InputError(f"{option}: {piece!r} is not KEY=VALUE (e.g. label=human_pref)")
        out[key.strip()] = value.strip()
    return out


def parse_prices(text: str, option: str = "--prices") -> dict[str, float]:
    """``"instruct_output=0.6,..."`` as prices per token (numbers), refused naming ``option``."""
    out = {}
    for key, value in parse_pairs(text, option).items():
        try:
            out[key] = float(value)
        except ValueError:
            raise InputError(f"{option}: price {key}={value!r} is not a number") from None
    return out


def read_map_file(path: str | os.PathLike) -> TableMap:
    """A YAML map file: ``columns:``, ``labels:``, ``verdicts:`` (mappings), ``prices:``
    (numbers) and ``judge:`` (text), each optional; read as data, no anchor or alias
    (:class:`~racer_lib.records.files.DataLoader`)."""
    import yaml

    path = files.check_file(path, "map file")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=files.DataLoader) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = " ".join(str(exc).split())[:200]
        raise InputError(f"{path}: not a YAML map file ({first})") from None
    keys = ("columns", "labels", "verdicts", "prices", "judge")
    if not isinstance(data, dict) or set(map(str, data)) - set(keys):
        raise InputError(f"{path}: a map file holds only the keys {', '.join(keys)}")
    parts = {}
    for key in keys[:4]:
        value = data.get(key) or {}
        if not isinstance(value, dict):
            raise InputError(f"{path}: '{key}' must be a mapping (KEY: VALUE lines)")
        parts[key] = {str(k): (v if key == "prices" else str(v)) for k, v in value.items()}
    try:
        parts["prices"] = {k: float(v) for k, v in parts["prices"].items()}
    except (TypeError, ValueError):
        raise InputError(f"{path}: 'prices' must map price keys to numbers") from None
    judge = data.get("judge")
    return TableMap(**parts, judge=None if judge is None else str(judge))


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """A CSV, JSONL or parquet table, every value as the file holds it (CSV cells as text)."""
    path = files.check_file(path, "table")
    if path.suffix not in TABLE_SUFFIXES:
        raise InputError(
            f"{path}: not a table ({path.suffix or 'no suffix'}); tables are "
            f"{', '.join(TABLE_SUFFIXES)}"
        )
    try:
        if path.suffix == ".csv":
            table = pd.read_csv(path, dtype=str, keep_default_na=False)
        elif path.suffix == ".jsonl":
            table = pd.read_json(path, lines=True, dtype=False)
        else:
            table = pd.read_parquet(path)
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        first = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise InputError(f"{path}: cannot be read as {path.suffix[1:]} ({first})") from None
    if table.empty:
        raise InputError(f"{path}: the table has no rows")
    return table


def _column(table: pd.DataFrame, name: str, fields: dict[str, str], file) -> pd.Series | None:
    """The table's column for record field ``name`` (``None`` where the map names none and
    the table has no column of that name); a mapped column missing from the table is refused."""
    source = fields.get(name, name if name in table.columns else None)
    if source is None:
        return None
    if source not in table.columns:
        raise RecordsError(
            file,
            source,
            f"missing column (mapped to {name!r}); the table's columns are "
            + ", ".join(map(str, table.columns)),
        )
    return table[source]


def _frame(values: pd.Series, field_name: str, ids) -> pd.DataFrame:
    """One column named as the table names it, with the rows' ids (for the error's words)."""
    frame = pd.DataFrame({field_name: values.to_numpy()})
    if ids is not None:
        frame["id"] = ids
    return frame


def _mapped(values: pd.Series, mapping: dict[str, str], file, where: tuple, kind: str):
    """Each value through ``mapping`` (keys compared as text; ``*`` for the rest), values
    already ``A``/``B`` (or ``unparseable``) kept; the first value with no image refused."""
    text = values.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else v)
    text = text.map(lambda v: str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))
    keep = {"A", "B"} | ({UNPARSEABLE} if kind == "verdict" else set())
    out = text.map(lambda v: mapping.get(v, v if v in keep else mapping.get(OTHER)))
    field_name, ids = where
    frame = _frame(values, field_name, ids)
    hint = (
        "--label-map (e.g. 1=A,2=B)"
        if kind == "label"
        else "--verdict-map (e.g. x=A,*=unparseable)"
    )
    raise_at(
        frame,
        file,
        field_name,
        out.isna().to_numpy(),
        lambda v: f"{v!r} is not a {kind} the map knows; map it with {hint}",
    )
    return out


def _tokens(values: pd.Series, file, where: tuple) -> np.ndarray:
    """Whole, non-negative, present token counts; the first other refused."""
    numbers = pd.to_numeric(values, errors="coerce")
    field_name, ids = where
    frame = _frame(values, field_name, ids)
    bad = numbers.isna() | (numbers < 0) | (numbers != np.floor(numbers))
    raise_at(
        frame,
        file,
        field_name,
        bad.to_numpy(),
        lambda v: f"{v!r} is not a token count (a whole number >= 0)",
    )
    return numbers.to_numpy(np.float64)


def _costs(table: pd.DataFrame, tmap: TableMap, file, ids) -> dict[str, np.ndarray]:
    """``tokens_m`` per mode: the priced cost (module docstring) in instruct output-token
    equivalents, whole."""
    prices = tmap.all_prices()
    ref = prices["instruct_output"] or min((p for p in prices.values() if p > 0), default=1.0)
    out = {}
    for mode in MODES:
        target = mode_columns(mode)["tokens"]
        output = _tokens(
            _column(table, target, tmap.columns, file),
            file,
            (tmap.columns.get(target, target), ids),
        )
        cost = output * prices[f"{mode}_output"]
        name = f"input_tokens_{mode}"
        given = _column(table, name, tmap.columns, file)
        if prices[f"{mode}_input"] > 0:
            if given is None:
                raise InputError(
                    f"{file}: a price for {mode} input tokens needs their column; map it with "
                    f"--map {name}=COLUMN"
                )
            where = (tmap.columns.get(name, name), ids)
            cost = cost + _tokens(given, file, where) * prices[f"{mode}_input"]
        out[target] = np.rint(cost / ref).astype(np.int64)
    return out


def table_records(table: pd.DataFrame, tmap: TableMap, file: str | os.PathLike) -> pd.DataFrame:
    """Judge records from ``table`` through ``tmap`` (not yet validated: the writer validates
    them, :func:`racer_lib.records.io.write_records`)."""
    tmap.check()
    missing = [f for f in REQUIRED_FIELDS if f not in tmap.columns and f not in table.columns]
    if missing:
        raise RecordsError(
            file,
            missing[0],
            "no column for this field; name it with --map "
            + ",".join(f"{f}=COLUMN" for f in missing),
        )
    n = len(table)
    id_column = _column(table, "id", tmap.columns, file)
    ids = None if id_column is None else id_column.astype(str).to_numpy()
    label = _mapped(
        _column(table, "label", tmap.columns, file),
        tmap.labels,
        file,
        (tmap.columns.get("label", "label"), ids),
        "label",
    )
    records = pd.DataFrame({"label": label.map(LABEL_VALUES).to_numpy()})
    defaults = {
        "id": [f"row-{i}" for i in range(n)],
        "dataset": Path(file).stem,
        "subset": "all",
        "domain": "all",
        "split": "all",
        "judge": tmap.judge,
    }
    for name in [c for c in STRING_COLUMNS if c != "source"] + list(TEXT_FIELDS):
        column = _column(table, name, tmap.columns, file)
        value = column.astype(str).to_numpy() if column is not None else defaults.get(name)
        if value is None and name == "judge":
            raise InputError(f"{file}: name the judge with --judge NAME or --map judge=COLUMN")
        if value is not None:
            records[name] = value
    records["source"] = f"table:{Path(file).name}"
    correct_letter = np.where(records["label"] == 1, "A", "B")
    for mode in MODES:
        cols = mode_columns(mode)
        verdict = _mapped(
            _column(table, cols["verdict"], tmap.columns, file),
            tmap.verdicts,
            file,
            (tmap.columns.get(cols["verdict"], cols["verdict"]), ids),
            "verdict",
        )
        records[cols["verdict"]] = verdict.to_numpy()
        records[cols["correct"]] = verdict.to_numpy() == correct_letter
        thinking = _column(table, cols["thinking_tokens"], tmap.columns, file)
        if thinking is not None and not tmap.prices:  # priced costs are no token counts
            records[cols["thinking_tokens"]] = pd.to_numeric(thinking, errors="coerce")
    for name, values in _costs(table, tmap, file, ids).items():
        records[name] = values
    return records


# ----------------------------------------------------------------------------------------
# Splits


SPLITS = ("train", "valid", "test")


def assign_splits(records: pd.DataFrame, fractions=(0.6, 0.2, 0.2), seed: int = 0) -> pd.DataFrame:
    """``records`` with a ``split`` column: ``train``/``valid``/``test`` in ``fractions``,
    within each label (stratified), the rows of a label shuffled by ``default_rng(seed)``.
    Counts are rounded per label, so each split's share of either label matches the whole's."""
    f = np.asarray(fractions, dtype=np.float64)
    if f.shape != (3,) or not np.isfinite(f).all() or (f < 0).any() or not np.isclose(f.sum(), 1):
        raise InputError(
            f"split fractions must be three numbers >= 0 summing to 1 (train, valid, test); "
            f"got {', '.join(map(str, np.atleast_1d(f)))}"
        )
    rng = np.random.default_rng(seed)
    split = np.empty(len(records), dtype=object)
    for label in sorted(records["label"].unique()):
        rows = rng.permutation(np.flatnonzero(records["label"].to_numpy() == label))
        cuts = np.rint(np.cumsum(f)[:2] * len(rows)).astype(int)
        for name, part in zip(SPLITS, np.split(rows, cuts)):
            split[part] = name
    out = records.copy()
    out["split"] = split.astype(str)
    return out
