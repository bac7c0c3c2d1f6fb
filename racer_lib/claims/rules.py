"""The rules that decide a claim from the CSVs a chapter wrote, and the :class:`Claim` that
names one (each chapter module of :mod:`racer_lib.paper.chapters` declares its own ``CLAIMS``;
the engine, :mod:`racer_lib.claims.engine`, decides them). Every rule but the numerical
identities goes through the book's statistical protocol (:mod:`racer_lib.evaluation.verdicts`):
its data are one number per replicate seed (rows sharing a seed are averaged first), and its
decision carries the test, the interval and the seeds.

* :class:`Difference` — a claimed sign of a difference (a one-sided t-test over seeds), or a
  one-sided bound on a value ("stays within budget": ``cost / budget - 1`` below a margin);
  with ``members`` ("every budget"), one test per member, Holm-corrected;
* :class:`Equivalence` — "alike", "matches": TOST over seeds with the margin the claim states;
* :class:`Level` — the paper's number(s): TOST of the build's per-seed values against the
  paper's, within the claim's tolerance (:data:`ACCURACY_TOLERANCE` points for an accuracy,
  :data:`RATIO_TOLERANCE` relative for a cost ratio), Holm over the cells; the value says how
  far the build is from the paper;
* :class:`Identity` — a mathematical statement checked numerically (a :class:`Bound` on the
  theory chapter's instances), optionally with a second bound shown beside it;
* :class:`Finding` — a finding a chapter decided with the protocol itself (its findings CSV's
  verdict columns), found by the ``key`` the chapter's code wrote beside it (never by its
  text); the engine computes the status, never copies the CSV's, and decides the finding again
  on the per-seed family written beside it (:mod:`racer_lib.claims.families`), refusing a row
  that disagrees with it;
* :class:`Excerpts` — a qualitative reading (§2.2's case studies): never decided by a rule; the
  reason says what the build's excerpts are of.

A rule with no such generic form is written by its chapter (:mod:`racer_lib.paper.rules`): any
object with a ``kind`` and ``evaluate(folder) -> Outcome`` (:class:`Rule`). Each rule's
:class:`Outcome` lists what it read (:class:`racer_lib.claims.given.Read`), from which the
engine tells whether the simulator was given the claim (the "given" table passed in).
"""

from __future__ import annotations

import fnmatch
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from racer_lib.claims.data import (
    ACCURACY_TOLERANCE,
    RATIO_TOLERANCE,
    SEED,
    Effect,
    NotAvailable,
    Outcome,
    decide_members,
    fmt,
    per_seed,
    provenance_of,
    read_csv,
    select,
    verdict_text,
)
from racer_lib.claims.families import PER_SEED, Family, Test, from_rows, joined
from racer_lib.claims.given import Read
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import FAILS, HOLDS, INCONCLUSIVE, MIN_SEEDS, Verdict

__all__ = [  # the shared pieces are re-exported: the chapters import them here
    "ACCURACY_TOLERANCE",
    "EMERGENT_KINDS",
    "RATIO_TOLERANCE",
    "SEED",
    "Bound",
    "Claim",
    "Difference",
    "Effect",
    "Equivalence",
    "Excerpts",
    "Finding",
    "Identity",
    "Level",
    "NotAvailable",
    "Outcome",
    "Rule",
    "decide_members",
    "per_seed",
    "verdict_text",
]


def _described(where: Mapping[str, Any]) -> str:
    """A selection as words: ``policy = paced RACER, provenance = release``."""
    return ", ".join(f"{k} = {v}" for k, v in where.items()) or "every row"


@dataclass(frozen=True)
class _Paired:
    """The rows a comparison reads and how it pairs them (shared by :class:`Difference` and
    :class:`Equivalence`): ``column`` at rows ``first`` minus rows ``second`` (joined on
    ``pair_on``, the seed always among them), or ``column`` minus ``second_column`` on the same
    rows (``relative``: ``column / second_column - 1``); ``final``: a column (``epoch``) whose
    largest value alone is kept; ``members``: the family's axes (every member tested);
    ``effect``: the quantity's smallest effect of interest (:class:`Effect`; the paper's are
    :mod:`racer_lib.paper.effects`),
    fixed before any run."""

    csv: str
    column: str
    first: Mapping[str, Any] = field(default_factory=dict)
    second: Mapping[str, Any] = field(default_factory=dict)
    pair_on: tuple[str, ...] = (SEED,)
    where: Mapping[str, Any] = field(default_factory=dict)
    second_column: str | None = None
    relative: bool = False
    members: tuple[str, ...] = ()
    unit: str = " pts"
    final: str = ""
    effect: Effect | None = None

    def reads(self) -> tuple[Read, ...]:
        """The column(s) at the rows of each side."""
        columns = (self.column,) + ((self.second_column,) if self.second_column else ())
        if self.second_column is not None or not (self.first or self.second):
            return (Read(self.csv, columns, dict(self.where)),)
        return tuple(
            Read(self.csv, columns, {**self.where, **w}) for w in (self.first, self.second)
        )

    def differences(self, folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
        """``(d, used, path)``: the paired differences (column ``d`` with the pairing keys) and
        the rows read."""
        table, path = read_csv(folder, self.csv)
        rows = select(table, self.where, path)
        if self.final:
            if self.final not in rows.columns:
                raise NotAvailable(f"{path.name} has no column {self.final!r}")
            rows = rows[rows[self.final] == rows[self.final].max()]
        keys = [k for k in dict.fromkeys([*self.pair_on, *self.members]) if k in rows.columns]
        if self.second_column is None and not self.first and not self.second:
            used = rows.dropna(subset=[self.column])
            d = used[keys].assign(d=used[self.column].astype(float))
        elif self.second_column is not None:
            used = rows.dropna(subset=[self.column, self.second_column])
            a, b = used[self.column].astype(float), used[self.second_column].astype(float)
            d = used[keys].assign(d=(a / b - 1) if self.relative else (a - b))
        else:
            a, b = select(rows, self.first, path), select(rows, self.second, path)
            used = pd.concat([a, b])
            if not keys:
                raise NotAvailable(f"{path.name} has none of the columns {self.pair_on}")
            joined = (
                a.groupby(keys)[self.column]
                .mean()
                .to_frame("a")
                .join(b.groupby(keys)[self.column].mean().to_frame("b"), how="inner")
            )
            d = (joined["a"] - joined["b"]).rename("d").dropna().reset_index()
        if d.empty:
            sides = "; ".join(_described({**self.where, **w}) for w in self._sides())
            raise NotAvailable(f"{path.name}: no rows for this comparison ({sides})")
        return d, used, path

    def _sides(self) -> tuple[Mapping[str, Any], ...]:
        return (self.first, self.second) if self.first or self.second else ({},)

    def family(self, folder: Path) -> Family:
        """The claim's per-seed values on ``folder`` with the subclass's test (:meth:`test`),
        one member per group of ``members`` (every member holding), as the engine redraws
        them."""
        d, _, _ = self.differences(folder)
        if not self.members:
            groups = {"": per_seed(d, "d")["d"]}
        else:
            rows = per_seed(d, "d", self.members)
            groups = {str(k): g["d"] for k, g in rows.groupby(list(self.members), sort=False)}
        return Family(from_rows("", groups, self.test()))

    def evaluate(self, folder: Path) -> Outcome:
        """The claim decided on ``folder``: each member's per-seed differences tested by the
        subclass's ``decide``, every member holding when ``members`` is set."""
        d, used, path = self.differences(folder)
        verdict, members = decide_members(d, self.members, self.decide)
        value = verdict_text(verdict, self.unit, members)
        return Outcome(value, verdict, provenance_of(used), path.name, self.reads())


@dataclass(frozen=True)
class Difference(_Paired):
    """A directional claim: the per-seed mean of the paired difference lies above
    ``threshold`` (``sign`` 1) or below it (-1) by at least the SESOI of ``effect``; a
    minimum-effect test over the seeds (:func:`racer_lib.evaluation.verdicts.directional`),
    every member holding when ``members`` is set. With ``bound`` the claim is a one-sided
    bound ("stays within budget") whose threshold is the effect's SESOI itself."""

    sign: int = 1
    threshold: float = 0.0
    min_seeds: int = MIN_SEEDS
    bound: bool = False
    kind = "difference"

    def boundary(self) -> float:
        """Where the claim's minimum-effect test puts its null: ``threshold + sign * SESOI``,
        or the SESOI itself for a bound."""
        sesoi = self.effect.sesoi if self.effect is not None else 0.0
        return sesoi if self.bound else self.threshold + self.sign * sesoi

    def test(self) -> Test:
        """The claim's test of one member (:meth:`decide`), its power stated at the effect its
        quantity expects (:meth:`racer_lib.claims.data.Effect.expected`, the paper's; for a
        bound, the paper's own overspend, half the SESOI)."""
        sesoi = self.effect.sesoi if self.effect is not None else 0.0
        if self.effect is None:
            expected = math.nan
        elif self.bound:
            expected = sesoi / 2
        else:
            expected = self.threshold + self.sign * self.effect.expected()
        return Test(self.sign, self.boundary(), 0.0, expected, sesoi, self.min_seeds)

    def decide(self, x) -> Verdict:
        """The claim's test on one member's per-seed values ``x``."""
        return self.test().decide(x)


@dataclass(frozen=True)
class Equivalence(_Paired):
    """An equivalence claim ("alike", "matches"): the per-seed mean of the paired difference
    lies within ``±margin``, the SESOI of ``effect`` when one is given (fixed before the run):
    TOST over the seeds (:func:`racer_lib.evaluation.verdicts.equivalent`), every member
    holding when ``members`` is set."""

    margin: float = 0.5
    min_seeds: int = MIN_SEEDS
    kind = "equivalence"

    def boundary(self) -> float:
        """The equivalence margin: the effect's SESOI, else ``margin``."""
        return self.effect.sesoi if self.effect is not None else self.margin

    def test(self) -> Test:
        """The claim's test of one member (:meth:`decide`), its power stated at no
        difference."""
        return Test(0, 0.0, self.boundary(), 0.0, min_n=self.min_seeds)

    def decide(self, x) -> Verdict:
        """The claim's test on one member's per-seed values ``x``."""
        return self.test().decide(x)


@dataclass(frozen=True)
class Level:
    """The paper's numbers: ``column`` at each ``cells`` entry ``(where, paper value)``, one
    value per seed, against the paper's within ``tol`` (relative with ``relative``): TOST per
    cell, Holm over the cells. The value shows the build's mean, its interval and its distance
    from the paper's number, also where the status is not reproducible here."""

    csv: str
    column: str
    cells: tuple[tuple[Mapping[str, Any], float], ...]
    tol: float = ACCURACY_TOLERANCE
    relative: bool = False
    unit: str = " pts"
    min_seeds: int = MIN_SEEDS
    kind = "level"

    def reads(self) -> tuple[Read, ...]:
        """The column at each cell's rows."""
        return tuple(Read(self.csv, (self.column,), dict(where)) for where, _ in self.cells)

    def _miss_text(self, misses: list[tuple[float, float]]) -> str:
        """The largest distance from the paper's value among the cells off their tolerance."""
        if not misses:
            return ""
        off = max(abs(v - p) / (abs(p) if self.relative else 1.0) for v, p in misses)
        if self.relative:
            return f"off by {100 * off:.1f} % (tolerance {100 * self.tol:g} %)"
        return f"off by {fmt(off)}{self.unit} (tolerance {self.tol:g}{self.unit})"

    def evaluate(self, folder: Path) -> Outcome:
        table, path = read_csv(folder, self.csv)
        parts, members, used, misses = [], {}, [], []
        for where, paper_value in self.cells:
            rows = select(table, where, path).dropna(subset=[self.column])
            if rows.empty:
                continue  # a cell this profile did not run (another judge or budget)
            x = per_seed(rows, self.column)[self.column].to_numpy(dtype=float)
            margin = self.tol * abs(paper_value) if self.relative else self.tol
            label = ", ".join(  # a list of values (the OOD benchmarks) is averaged, not named
                f"{k} {fmt(v) if isinstance(v, float) else v}"
                for k, v in where.items()
                if not isinstance(v, list | tuple)
            )
            member = verdicts.equivalent(x - paper_value, margin, self.min_seeds)
            members[label] = member
            mean = float(x.mean())
            gap = mean - paper_value
            spread = (
                f" [{member.lo + paper_value:.2f}, {member.hi + paper_value:.2f}]"
                if math.isfinite(member.lo)
                else ""
            )
            parts.append(
                f"{label}: {fmt(mean)}{spread} vs paper {paper_value:g} "
                f"({gap:+.2f}{self.unit}, n = {x.size})"
            )
            used.append(rows)
            if abs(gap) > margin:
                misses.append((mean, paper_value))
        if not parts:
            raise NotAvailable(f"{path.name}: none of the paper's cells ran in this profile")
        verdict = verdicts.every(members)
        value = "; ".join(parts) + f"; {verdict.test}"
        return Outcome(
            value,
            verdict,
            provenance_of(pd.concat(used)),
            path.name,
            self.reads(),
            miss=self._miss_text(misses),
        )


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


@dataclass(frozen=True)
class Bound:
    """A numerical check of the theory chapter: each of ``columns``, reduced over the rows by
    ``agg`` (min, max, absmax: the largest absolute value, or all for a boolean column), meets
    ``op threshold``. Used only inside :class:`Identity`: its rows are numerical instances, not
    replicates, and it decides no claim about records."""

    csv: str
    columns: tuple[str, ...]
    agg: str = "min"
    op: str = ">"
    threshold: float = 0.0
    where: Mapping[str, Any] = field(default_factory=dict)

    def reads(self) -> tuple[Read, ...]:
        """The columns at the rows of ``where``."""
        return (Read(self.csv, self.columns, dict(self.where)),)

    def check(self, folder: Path) -> tuple[str, bool, pd.DataFrame, Path]:
        """``(value, holds, rows, path)``."""
        table, path = read_csv(folder, self.csv)
        rows = select(table, self.where, path)
        if rows.empty:
            raise NotAvailable(f"{path.name}: no rows")
        parts, holds = [], []
        for col in self.columns:
            if col not in rows.columns:
                raise NotAvailable(f"{path.name} has no column {col!r}")
            if self.agg == "all":
                ok = rows[col].astype(str).str.lower().eq("true")
                parts.append(f"{col}: {int(ok.sum())} of {len(ok)} rows")
                holds.append(bool(ok.all()))
            else:
                x = rows[col].astype(float)
                v = float(x.abs().max() if self.agg == "absmax" else getattr(x, self.agg)())
                parts.append(f"{self.agg} {col} = {fmt(v)}")
                holds.append(_OPS[self.op](v, self.threshold))
        return "; ".join(parts), all(holds), rows, path


@dataclass(frozen=True)
class Identity:
    """A mathematical statement of the paper checked numerically: ``check`` (a :class:`Bound` on
    the theory chapter's instances) decides it; ``context``, when given, is a second bound shown
    beside it (``context_label`` first) that does not decide (Thm. 4.2's bound at the paper's
    β). Its rows are numerical instances, not judge records (``provenance``): the check is
    exact arithmetic on every instance, not a test. The report's status is ``verified
    numerically`` when it holds."""

    check: Bound
    context: Bound | None = None
    context_label: str = ""
    provenance: str = "random instances"
    kind = "identity"

    def evaluate(self, folder: Path) -> Outcome:
        value, holds, _, path = self.check.check(folder)
        if self.context is not None:
            try:
                beside = self.context.check(folder)[0]
            except NotAvailable as err:
                beside = str(err)
            value = f"{value}; {self.context_label}{beside}"
        return Outcome(value, None, self.provenance, path.name, self.check.reads(), check=holds)


def _row_verdict(row: Mapping[str, Any]) -> Verdict:
    """A findings row's verdict columns (:data:`racer_lib.claims.statuses.VERDICT_COLUMNS`)."""

    def number(name: str) -> float:
        try:
            return float(row.get(name, math.nan))
        except (TypeError, ValueError):
            return math.nan

    n = number("n")
    note = row.get("note", "")
    return Verdict(
        number("effect"),
        number("lo"),
        number("hi"),
        number("p"),
        int(n) if math.isfinite(n) else 0,
        str(row.get("test", "")),
        str(row["decision"]),
        note if isinstance(note, str) else "",
        sesoi=number("sesoi"),
    )


#: The column of a findings CSV that holds a finding's key (:class:`Finding`).
FINDING_KEY = "key"


@dataclass(frozen=True)
class Finding:
    """The rows of the chapter's findings CSVs (file names matching ``files``) whose
    :data:`FINDING_KEY` column equals ``key``: a structured key the chapter's code writes beside
    each finding it decides (a named constant of that chapter's module), never its text. Each
    row was decided by the chapter with the protocol (its verdict columns). Several rows are a
    conjunction: the claim holds when every row holds, fails when one fails, and is
    inconclusive otherwise (an intersection of tests needs no correction). The value is the
    rows' ``observed`` or ``detail`` text with their intervals."""

    key: str
    files: str = "*findings*.csv"
    kind = "finding"

    def _rows(self, folder: Path) -> tuple[pd.DataFrame, Path]:
        """The finding's rows and the CSV they are in."""
        paths = sorted(p for p in folder.glob("*.csv") if fnmatch.fnmatch(p.name, self.files))
        if not paths:
            raise NotAvailable(f"{folder.name} wrote no {self.files}")
        for path in paths:
            table = pd.read_csv(path, keep_default_na=False, na_values=[""])
            if FINDING_KEY not in table.columns or "decision" not in table.columns:
                continue
            rows = table[table[FINDING_KEY].astype(str) == self.key]
            if not rows.empty:
                return rows, path
        raise NotAvailable(f"{folder.name}: no finding with {FINDING_KEY} {self.key!r}")

    def family(self, folder: Path) -> Family | None:
        """The per-seed values and tests the chapter decided the finding on (its rows'
        :data:`racer_lib.claims.families.PER_SEED` column), several rows a conjunction; None
        when the chapter decided it on no per-seed family (a check on one draw). A damaged
        family is named (:class:`NotAvailable`), never used."""
        rows, path = self._rows(folder)
        if PER_SEED not in rows.columns or rows[PER_SEED].isna().any():
            return None
        try:
            return joined(Family.from_json(str(text)) for text in rows[PER_SEED])
        except ValueError as err:
            raise NotAvailable(f"{path.name}, finding {self.key!r}: {PER_SEED}: {err}") from err

    def evaluate(self, folder: Path) -> Outcome:
        rows, path = self._rows(folder)
        found = [_row_verdict(r) for r in rows.to_dict("records")]
        decisions = {v.decision for v in found}
        decision = HOLDS if decisions == {HOLDS} else FAILS if FAILS in decisions else INCONCLUSIVE
        family = self.family(folder)
        redecided = family.decide().decision if family is not None else decision
        if redecided != decision:
            raise NotAvailable(
                f"{path.name}, finding {self.key!r}: its per-seed values decide "
                f"{redecided}, the row says {decision}: the file is damaged or "
                "stale; rebuild the chapter"
            )
        weakest = next(v for v in found if v.decision == decision)
        verdict = Verdict(
            weakest.effect,
            weakest.lo,
            weakest.hi,
            weakest.p,
            weakest.n,
            weakest.test,
            decision,
            weakest.note,
            sesoi=weakest.sesoi,
        )
        detail = next((c for c in ("observed", "detail") if c in rows.columns), None)
        texts = []
        for i, v in enumerate(found):
            text = str(rows[detail].iloc[i]) if detail else ""
            stated = verdict_text(v) if math.isfinite(v.effect) else v.test
            texts.append(f"{text} ({stated})" if text else stated)
        basis = rows["basis"].dropna().astype(str).unique() if "basis" in rows.columns else []
        read = Read(path.name, ("finding",), keys=tuple(rows[FINDING_KEY].astype(str)))
        return Outcome(
            " | ".join(texts),
            verdict,
            provenance_of(rows),
            path.name,
            (read,),
            reason="; ".join(basis),
        )


@dataclass(frozen=True)
class Excerpts:
    """§2.2's case studies, a qualitative reading of the paper's judges' outputs: no rule
    decides one. The reason is computed from what the judging chapter ran (``csv``'s
    ``column``, the models it judged with): none of the paper's ``judges`` (the build has none
    of their outputs), or some (their excerpts are on the chapter's page, for the reader)."""

    csv: str
    judges: tuple[str, ...]
    column: str = "model"
    kind = "reading"

    def evaluate(self, folder: Path) -> Outcome:
        table, path = read_csv(folder, self.csv)
        if self.column not in table.columns:
            raise NotAvailable(f"{path.name} has no column {self.column!r}")
        models = sorted({Path(str(m)).name for m in table[self.column].dropna()})
        theirs = [m for m in models if any(j in m.lower() for j in self.judges)]
        if not theirs:
            raise NotAvailable(
                f"the case studies quote the paper's judges ({', '.join(self.judges)}); "
                f"chapter {folder.name} judged with {', '.join(models) or 'no model'} only"
            )
        raise NotAvailable(
            f"a qualitative reading: chapter {folder.name} shows excerpts of "
            f"{', '.join(theirs)} for the reader; no rule decides a case study"
        )


class Rule(Protocol):
    """What decides a claim: its ``kind`` (``difference``, ``equivalence``, ``level``,
    ``identity``, ``finding`` or ``reading``) and its outcome on a chapter's results folder
    (:class:`NotAvailable` when the folder lacks what it reads)."""

    kind: str

    def evaluate(self, folder: Path) -> Outcome: ...


#: The kinds of rule whose claims are evidence about the method when the simulator was not
#: given them (the emergent claims; a level is compared with the paper's own records).
EMERGENT_KINDS = ("difference", "equivalence", "finding")


@dataclass(frozen=True)
class Claim:
    """One claim of the paper: its ``artifact`` (table, figure or section), the ``claim`` with
    the paper's number, the chapter that tests it, and the rule. No status: the engine computes
    it from the outcome, what the rule read (the "given" table) and the records' provenance.
    ``sensitivity``: the key of the claim in chapter 16's ``claim_robustness.csv``
    (how the verdict moves with the simulator's choices), empty when it has none. ``null``: the
    control under which the claim's effect is absent by design (``"embedding"``: the null
    simulator's embedding says nothing, so an accuracy gain from selecting pairs is zero),
    used to measure the rule's false-positive rate (``make bench-verdicts``); ``planted``: the
    claim is true by design when the embedding carries a strong signal (a gain from selecting
    pairs over Random), used to measure the rule's power."""

    artifact: str
    claim: str
    chapter: str
    rule: Rule
    sensitivity: str = ""
    null: str = ""
    planted: bool = False
