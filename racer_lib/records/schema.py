"""Judge records: one row per preference pair, both judge modes side by side.

A router needs both outcomes of every pair, so a record holds the pair's identity and, for
each mode ``a`` (0 = instruct, 1 = reasoning, as in the paper's notation), the parsed verdict,
the correctness ``r(z, a, l) = 1[Phi_a(z) = l]`` and the generated-token count. Embeddings live
in a second file beside the records, keyed by id (:mod:`racer_lib.records.io` reads and writes
both; :mod:`racer_lib.records.sets` reads a folder of them). The pair schema
(:data:`PAIR_COLUMNS`) is here too, beside the records' (:mod:`racer_lib.records.pairs` reads
and checks pairs).

Every reader validates (:func:`validate_records`, one named check per field). A bad value
raises :class:`RecordsError`, whose message names the file, the row (counted from 0, in file
order) and the field, e.g.::

    train.parquet: row 17 (id 'sky-00017'), field 'label': 2 is not a label; labels are 0 or 1

Cost unit (the paper's "cost ratio", made explicit): ``c(z, a) = tokens_a(z) / mean_z
tokens_0(z)``, the mean taken on the training set, so All-Instruct costs 1.0 on training data.
The *realized cost ratio* of a policy on an evaluation set is measured against that set's own
All-Instruct tokens (:func:`realized_cost_ratio`).
"""

from __future__ import annotations

import difflib
import os
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from racer_lib.errors import ConfigError, InputError, RacerError

MODES: tuple[str, str] = ("instruct", "reasoning")  # index = the paper's action a
VERDICTS: tuple[str, ...] = ("A", "B", "unparseable")
UNPARSEABLE = "unparseable"

ID_COLUMNS = ["id", "dataset", "subset", "domain", "split", "label", "judge", "source"]
STRING_COLUMNS = ["id", "dataset", "subset", "domain", "split", "judge", "source"]
#: A preference pair (:mod:`racer_lib.records.pairs`): the prompt and the two responses.
TEXT_FIELDS: tuple[str, str, str] = ("prompt", "response_a", "response_b")
#: The columns of a labelled pair; ``label = 1`` means response A is preferred.
PAIR_COLUMNS: list[str] = ["id", "dataset", "subset", "domain", *TEXT_FIELDS, "label"]


def mode_columns(mode: str) -> dict[str, str]:
    """Column names of one mode: verdict, correct, tokens, thinking_tokens."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; modes are {MODES}")
    return {k: f"{k}_{mode}" for k in ("verdict", "correct", "tokens", "thinking_tokens")}


REQUIRED_COLUMNS = ID_COLUMNS + [
    mode_columns(m)[k] for m in MODES for k in ("verdict", "correct", "tokens")
]
#: The self-routing decision (the instruct mode asked whether it needs reasoning, see
#: :mod:`racer_lib.judging.prompts`): ``yes``, ``no``, ``unparseable``, or missing where not asked.
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


def raise_at(df: pd.DataFrame, file, field: str, mask, problem) -> None:
    """Raise for the first row where ``mask`` holds; ``problem`` may be a callable of the value."""
    row, more = _first_bad(np.asarray(mask, dtype=bool))
    if row is None:
        return
    value = df[field].iloc[row]
    value = value.item() if isinstance(value, np.generic) else value  # 2, not np.int64(2)
    value = value.tolist() if isinstance(value, np.ndarray) else value  # one line, as a list
    text = problem(value) if callable(problem) else problem
    rid = df["id"].iloc[row] if "id" in df.columns else None
    raise RecordsError(file, field, text, row=row, record_id=_record_id(rid), more=more)


def _record_id(value) -> str | None:
    """A row's id as its error names it: None where it is missing; a list or mapping (a bad
    id, refused on its own) as its text."""
    value = value.tolist() if isinstance(value, np.ndarray) else value  # a list column's value
    if isinstance(value, (list, tuple, dict, set)):
        return str(value)
    return None if value is None or pd.isna(value) else str(value)


#: What a cell of a records or pairs table may not hold: a parquet file's binary, list or
#: struct values, a JSON array or object.
NOT_A_VALUE = (bytes, bytearray, list, tuple, dict, np.ndarray)


def check_single_values(df: pd.DataFrame, file, columns: Iterable[str]) -> None:
    """Refuse a cell of ``columns`` (those ``df`` has) that is not a single text or number (a
    list, a mapping, bytes), naming the file, row and field."""
    for col in columns:
        if col in df.columns and df[col].dtype == object:
            raise_at(
                df,
                file,
                col,
                [isinstance(v, NOT_A_VALUE) for v in df[col]],
                lambda v: f"{v!r} is {type(v).__name__}, not a text or a number",
            )


def validate_records(df: pd.DataFrame, file: str | os.PathLike = IN_MEMORY) -> pd.DataFrame:
    """Check a records table and return it with normalised dtypes (a copy).

    Checks: every required column is present; ids are present and unique; labels are 0 or 1;
    token counts are present, whole and non-negative; thinking tokens, where given, lie in
    ``[0, tokens]``; verdicts are ``A``, ``B`` or ``unparseable``; ``correct`` agrees with the
    verdict and the label (an unparseable verdict counts as incorrect); the self-routing
    decision, where given, is ``yes``, ``no`` or ``unparseable``.
    """
    _check_columns(df, file)
    out = df.reset_index(drop=True).copy()
    for col in OPTIONAL_COLUMNS:
        if col not in out.columns:
            out[col] = pd.NA
    check_single_values(out, file, COLUMNS)
    _check_ids(out, file)
    _check_labels(out, file)
    for mode in MODES:
        tokens = _check_tokens(out, file, mode)
        _check_thinking_tokens(out, file, mode, tokens)
        _check_verdicts(out, file, mode)
    _check_self_route(out, file)
    return out


#: Characters that draw nothing (zero-width spaces and joiners, the soft hyphen, the BOM).
INVISIBLE = {"\u00ad", "\u180e", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"}
#: Cyrillic and Greek letters drawn like a Latin one (Unicode's confusables, the common ones).
CONFUSABLES = str.maketrans(
    "\u0430\u0432\u0435\u0456\u0458\u043a\u043c\u043d\u043e\u0440\u0441\u0442\u0443\u0445\u0455\u0501\u04bb"
    "\u0410\u0412\u0415\u0406\u0408\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0423\u0425\u0405"
    "\u03b1\u03bf\u03b9\u03ba\u03bd\u03c1\u03c4\u03c5\u03c7"
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
    "abeijkmhopctyxsdhABEIJKMHOPCTYXSaoikvptuxABEZHIKMNOPTYX",
)


def _skeleton(name: str) -> str:
    """What ``name`` looks like: NFKC-normalised (fullwidth and other compatibility forms to
    their plain letters), invisible characters dropped, look-alike Cyrillic and Greek letters
    read as the Latin ones they resemble."""
    plain = unicodedata.normalize("NFKC", name)
    return "".join(c for c in plain if c not in INVISIBLE).translate(CONFUSABLES)


def _odd_character(char: str) -> str:
    """A character a reader would not tell from a Latin one, in words (``Cyrillic і``)."""
    if char in INVISIBLE:
        return (
            unicodedata.name(char, "invisible character")
            .lower()
            .replace("zero width", "zero-width")
        )
    name = unicodedata.name(char, "")
    for script, word in (("CYRILLIC", "Cyrillic"), ("GREEK", "Greek"), ("FULLWIDTH", "fullwidth")):
        if name.startswith(script):
            return f"{word} {char}"
    return char


def _look_alike(found: str, wanted: str) -> str | None:
    """``'іd' (Cyrillic і, U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I) looks like
    'id'`` when column ``found`` is not ``wanted`` but looks like it (:func:`_skeleton`), else
    ``None``."""
    if found == wanted or _skeleton(found) != _skeleton(wanted):
        return None
    odd = list(dict.fromkeys(c for c in found if not c.isascii()))
    words = ", ".join(_odd_character(c) for c in odd)
    codes = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, '(unnamed)')}" for c in odd)
    return f"{found!r} ({words}) looks like {wanted!r}: it holds {codes}"


def look_alikes(columns: Iterable, wanted: Iterable[str]) -> str:
    """``"; the file's column ... looks like ..."`` for every column of ``columns`` that looks
    like one of ``wanted`` without being it ("" when none does)."""
    found = [
        hint
        for want in wanted
        for col in columns
        if isinstance(col, str) and (hint := _look_alike(col, want)) is not None
    ]
    return "".join(f"; the column {hint}" for hint in found) + (
        " (rename it)" if len(found) == 1 else " (rename them)" if found else ""
    )


def _check_columns(df: pd.DataFrame, file) -> None:
    """Every required column present; an unknown column close to an optional one is a typo,
    and a column that looks like a missing one (look-alike letters) is named as such."""
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise RecordsError(
            file,
            missing[0],
            "missing column"
            + look_alikes(df.columns, missing)
            + "; judge records need the columns "
            + ", ".join(REQUIRED_COLUMNS)
            + (f" (also missing: {', '.join(missing[1:])})" if missing[1:] else ""),
        )
    for want in [c for c in OPTIONAL_COLUMNS if c not in df.columns]:
        if hint := look_alikes(df.columns, [want]):
            raise RecordsError(file, want, f"unknown column{hint}")
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


def _check_ids(out: pd.DataFrame, file) -> None:
    """String columns present (made ``str``); ids non-empty and unique."""
    for col in STRING_COLUMNS:
        raise_at(out, file, col, out[col].isna().to_numpy(), "missing value")
        out[col] = out[col].astype(str)
    raise_at(out, file, "id", (out["id"].str.len() == 0).to_numpy(), "empty id")
    dup = out["id"].duplicated(keep="first").to_numpy()
    if dup.any():
        row = int(np.flatnonzero(dup)[0])
        # pandas' own comparison: a numpy scalar drops trailing NULs ("\x00" reads as "")
        first = int(np.flatnonzero((out["id"] == out["id"].iloc[row]).to_numpy())[0])
        raise RecordsError(
            file,
            "id",
            f"duplicate id, first seen at row {first}",
            row=row,
            record_id=out["id"].iloc[row],
            more=int(dup.sum()) - 1,
        )


def _check_labels(out: pd.DataFrame, file) -> None:
    """Labels ``l`` are 0 or 1 (made ``int8``)."""
    label = pd.to_numeric(out["label"], errors="coerce")
    raise_at(
        out,
        file,
        "label",
        ~label.isin([0, 1]).to_numpy(),
        lambda v: (
            f"{v!r} is not a label; labels are 0 (response B preferred) or 1 (response A preferred)"
        ),
    )
    out["label"] = label.astype("int8")


def _check_tokens(out: pd.DataFrame, file, mode: str) -> pd.Series:
    """The token counts of ``mode``: present, finite, whole, in ``[0, MAX_TOKENS]`` (made
    ``int64``); returns them as numbers."""
    tok_col = mode_columns(mode)["tokens"]
    tokens = pd.to_numeric(out[tok_col], errors="coerce")
    checks = [
        (tokens.isna().to_numpy(), lambda v: f"missing or non-numeric token count ({v!r})"),
        (
            ~np.isfinite(tokens.to_numpy(dtype=np.float64)),
            lambda v: f"token count {v} is not finite",
        ),
        ((tokens < 0).to_numpy(), lambda v: f"negative token count ({v})"),
        (
            (tokens > MAX_TOKENS).to_numpy(),
            lambda v: f"token count {v} is out of range (at most 2**53 = {MAX_TOKENS:,})",
        ),
        (
            (tokens != np.floor(tokens)).to_numpy(),
            lambda v: f"token count {v} is not a whole number",
        ),
    ]
    for mask, problem in checks:
        raise_at(out, file, tok_col, mask, problem)
    out[tok_col] = tokens.astype("int64")
    return tokens


def _check_thinking_tokens(out: pd.DataFrame, file, mode: str, tokens: pd.Series) -> None:
    """Thinking tokens of ``mode``, where given, are numbers in ``[0, tokens]`` (``Int64``)."""
    think_col, tok_col = mode_columns(mode)["thinking_tokens"], mode_columns(mode)["tokens"]
    think = pd.to_numeric(out[think_col], errors="coerce")
    given = out[think_col].notna().to_numpy()
    raise_at(out, file, think_col, given & think.isna().to_numpy(), "non-numeric value")
    raise_at(
        out,
        file,
        think_col,
        given & ((think < 0) | (think > tokens)).to_numpy(),
        lambda v: f"thinking tokens {v} outside [0, {tok_col}]",
    )
    raise_at(
        out,
        file,
        think_col,
        given & (think != np.floor(think)).to_numpy(),
        lambda v: f"thinking tokens {v} is not a whole number",
    )
    out[think_col] = think.astype("Int64")


#: Spellings of a correctness value in a text column.
CORRECT_SPELLINGS = {
    True: 1,
    False: 0,
    "True": 1,
    "False": 0,
    "true": 1,
    "false": 0,
    "1": 1,
    "0": 0,
}


def _check_verdicts(out: pd.DataFrame, file, mode: str) -> None:
    """Verdicts of ``mode`` are in :data:`VERDICTS`; correctness ``r(z, a, l) = 1[Phi_a(z) =
    l]`` is 0/1 and agrees with the verdict and the label (made ``bool``)."""
    verdict_col, correct_col = mode_columns(mode)["verdict"], mode_columns(mode)["correct"]
    raise_at(
        out,
        file,
        verdict_col,
        ~out[verdict_col].isin(VERDICTS).to_numpy(),
        lambda v: f"{v!r} is not a verdict; verdicts are {', '.join(VERDICTS)}",
    )
    correct = out[correct_col]
    if correct.dtype == object or str(correct.dtype) in ("string", "str"):
        correct = correct.map(CORRECT_SPELLINGS)
    correct = pd.to_numeric(correct, errors="coerce")
    raise_at(
        out,
        file,
        correct_col,
        ~correct.isin([0, 1]).to_numpy(),
        lambda v: f"{v!r} is not a correctness value; use 0/1 or False/True",
    )
    expected = out[verdict_col].to_numpy() == np.where(out["label"] == 1, "A", "B")
    raise_at(
        out,
        file,
        correct_col,
        correct.to_numpy().astype(bool) != expected,
        f"disagrees with {verdict_col} and label (correct means the verdict names the "
        "preferred response; unparseable counts as incorrect)",
    )
    out[correct_col] = correct.astype(bool)


def _check_self_route(out: pd.DataFrame, file) -> None:
    """The self-routing decision, where given, is one of :data:`SELF_ROUTE_VALUES`."""
    route = out[SELF_ROUTE]
    given = route.notna().to_numpy()
    raise_at(
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
    raise_at(
        records, file, SELF_ROUTE, route.isna().to_numpy(), "no self-routing decision for this pair"
    )
    return np.where(
        route == "unparseable", MODES.index(unparseable), (route == "yes").astype(int)
    ).astype(np.int8)


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
    "table": "imported from a table of judge outputs (racer records import --format table)",
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
