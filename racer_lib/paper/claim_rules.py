"""The rules that decide a claim of the paper from the CSVs a chapter wrote (the reproduction
report, :mod:`racer_lib.paper.report`, applies them to every claim of
:data:`racer_lib.paper.claims_table.CLAIMS`):

* :class:`Difference` — a claimed sign of a difference (per seed): the build's value is its
  mean ± sd and a 95 % percentile-bootstrap interval of the mean (seeded); it holds when the
  whole interval lies on the claimed side of zero;
* :class:`Level` — the paper's number(s): holds when every build value (mean over seeds) is
  within the claim's stated tolerance of the paper's (:data:`ACCURACY_TOLERANCE` points for an
  accuracy, :data:`RATIO_TOLERANCE` relative for a cost ratio, unless the claim says otherwise);
* :class:`Bound` — each column, reduced over the rows, meets a bound;
* :class:`Identity` — a mathematical statement checked numerically (a :class:`Bound` on the
  theory chapter's instances), optionally with a second bound shown beside it;
* :class:`Finding` — a finding a chapter decided itself (its findings CSV): holds when every
  matching row holds (the report computes the status, never copies the CSV's);
* :class:`HalfCost`, :class:`MarginOverBest` — two rules of one claim each (Fig. 4, §5.4);
* :class:`Excerpts` — §2.2's case studies: never decided by a rule; the reason says what the
  build's excerpts are of.

Each rule's :class:`Outcome` lists what it read (:class:`racer_lib.paper.given.Read`), from
which the report tells whether the simulator was given the claim (:mod:`racer_lib.paper.given`).
"""

from __future__ import annotations

import fnmatch
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from racer_lib.evaluation.intervals import bootstrap_interval
from racer_lib.paper import numbers as paper
from racer_lib.paper.given import Read

#: Tolerances of the level rules: accuracy in points, cost ratios relative.
ACCURACY_TOLERANCE = 1.0
RATIO_TOLERANCE = 0.05


class NotAvailable(Exception):
    """The claim cannot be evaluated on this build; the message is the reason."""


@dataclass(frozen=True)
class Outcome:
    """What a rule found: the build's value as text, whether the claim holds, the provenance
    of the rows read, the CSV, what it read (``reads``), the basis a findings CSV gives
    (``reason``) and, for a level that misses its tolerance, by how much (``miss``)."""

    value: str
    holds: bool
    provenance: str
    csv: str
    reads: tuple[Read, ...] = ()
    reason: str = ""
    miss: str = ""


def difference_holds(lo: float, hi: float, sign: int = 1) -> bool:
    """A claimed positive (``sign`` 1) or negative (-1) difference holds when the whole
    interval ``[lo, hi]`` lies on that side of zero."""
    return lo > 0 if sign > 0 else hi < 0


def level_holds(value: float, paper_value: float, tol: float, relative: bool = False) -> bool:
    """A level holds when ``|value - paper_value| <= tol`` (``tol * |paper_value|`` when
    ``relative``)."""
    return abs(value - paper_value) <= (tol * abs(paper_value) if relative else tol)


def _read(folder: Path, csv: str) -> tuple[pd.DataFrame, Path]:
    path = folder / csv
    if not path.is_file():
        raise NotAvailable(f"{folder.name} wrote no {csv}")
    return pd.read_csv(path), path


def _select(table: pd.DataFrame, where: Mapping[str, Any], path: Path) -> pd.DataFrame:
    """Rows where each column equals its value (a list or tuple: is one of them)."""
    mask = pd.Series(True, index=table.index)
    for name, wanted in where.items():
        if name not in table.columns:
            raise NotAvailable(f"{path.name} has no column {name!r}")
        col = table[name]
        options = list(wanted) if isinstance(wanted, list | tuple) else [wanted]
        if pd.api.types.is_numeric_dtype(col):
            hit = np.zeros(len(col), dtype=bool)
            for w in options:
                hit |= np.isclose(col.to_numpy(dtype=float), float(w))
            mask &= hit
        else:
            mask &= col.astype(str).isin([str(w) for w in options])
    return table[mask]


def _provenance(rows: pd.DataFrame, default: str = "simulated") -> str:
    if "provenance" not in rows.columns:
        return default
    kinds = set(rows["provenance"].dropna().astype(str))
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _fmt(x: float) -> str:
    if abs(x) >= 1000 and float(x).is_integer():
        return f"{x:.0f}"  # a count (pairs)
    return f"{x:.3g}" if abs(x) < 0.01 and x != 0 else f"{x:.2f}"


@dataclass(frozen=True)
class Difference:
    """The claimed sign of ``column`` at rows ``first`` minus rows ``second`` (paired on
    ``pair_on``), or of ``column`` minus ``second_column`` on the same rows."""

    csv: str
    column: str
    first: Mapping[str, Any] = field(default_factory=dict)
    second: Mapping[str, Any] = field(default_factory=dict)
    pair_on: tuple[str, ...] = ("seed",)
    where: Mapping[str, Any] = field(default_factory=dict)
    second_column: str | None = None
    sign: int = 1
    unit: str = " pts"
    final: str = ""
    kind = "difference"

    def reads(self) -> tuple[Read, ...]:
        """The column(s) at the rows of each side."""
        columns = (self.column,) + ((self.second_column,) if self.second_column else ())
        if self.second_column is not None:
            return (Read(self.csv, columns, dict(self.where)),)
        return tuple(
            Read(self.csv, columns, {**self.where, **w}) for w in (self.first, self.second)
        )

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        """``final``: a column (``epoch``) whose largest value alone is kept (the last epoch)."""
        table, path = _read(folder, self.csv)
        rows = _select(table, self.where, path)
        if self.final:
            if self.final not in rows.columns:
                raise NotAvailable(f"{path.name} has no column {self.final!r}")
            rows = rows[rows[self.final] == rows[self.final].max()]
        if self.second_column is not None:
            used = rows.dropna(subset=[self.column, self.second_column])
            d = (used[self.column] - used[self.second_column]).to_numpy(dtype=float)
        else:
            a, b = _select(rows, self.first, path), _select(rows, self.second, path)
            used = pd.concat([a, b])
            keys = list(self.pair_on)
            if keys:
                joined = (
                    a.set_index(keys)[self.column]
                    .to_frame("a")
                    .join(b.set_index(keys)[self.column].to_frame("b"), how="inner")
                )
            else:
                joined = pd.DataFrame({"a": a[self.column].to_numpy()[:1]})
                joined["b"] = b[self.column].to_numpy()[:1] if len(b) else np.nan
            d = (joined["a"] - joined["b"]).dropna().to_numpy(dtype=float)
        if d.size == 0:
            raise NotAvailable(f"{path.name}: no rows for this comparison")
        lo, hi = bootstrap_interval(d, seed, n_boot)
        sd = f" ± {d.std(ddof=1):.2f}" if d.size > 1 else ""
        value = f"{d.mean():+.2f}{sd}{self.unit} (95 % CI {lo:+.2f} to {hi:+.2f}; n = {d.size})"
        holds = difference_holds(lo, hi, self.sign)
        return Outcome(value, holds, _provenance(used), path.name, self.reads())


@dataclass(frozen=True)
class Level:
    """``column`` (mean ± sd over the matching rows, e.g. seeds) at each ``cells`` entry
    ``(where, paper value)`` within ``tol`` of the paper's value (relative with ``relative``)."""

    csv: str
    column: str
    cells: tuple[tuple[Mapping[str, Any], float], ...]
    tol: float = ACCURACY_TOLERANCE
    relative: bool = False
    sd_column: str | None = None
    unit: str = " pts"
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
        return f"off by {_fmt(off)}{self.unit} (tolerance {self.tol:g}{self.unit})"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        table, path = _read(folder, self.csv)
        parts, holds, used, misses = [], [], [], []
        for where, paper_value in self.cells:
            rows = _select(table, where, path).dropna(subset=[self.column])
            if rows.empty:
                continue  # a cell this profile did not run (another judge or budget)
            x = rows[self.column].to_numpy(dtype=float)
            sd = (
                rows[self.sd_column].mean()
                if self.sd_column
                else (x.std(ddof=1) if x.size > 1 else np.nan)
            )
            label = ", ".join(
                f"{k} {_fmt(v) if isinstance(v, float) else v}" for k, v in where.items()
            )
            sd_text = f" ± {_fmt(sd)}" if np.isfinite(sd) else ""
            parts.append(f"{label}: {_fmt(x.mean())}{sd_text} (paper {paper_value:g})")
            holds.append(level_holds(x.mean(), paper_value, self.tol, self.relative))
            used.append(rows)
            if not holds[-1]:
                misses.append((float(x.mean()), paper_value))
        if not parts:
            raise NotAvailable(f"{path.name}: none of the paper's cells ran in this profile")
        provenance = _provenance(pd.concat(used))
        return Outcome(
            "; ".join(parts),
            all(holds),
            provenance,
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
    """Each of ``columns``, reduced over the rows by ``agg`` (min, max, absmax: the largest
    absolute value, or all for a boolean column), meets ``op threshold``."""

    csv: str
    columns: tuple[str, ...]
    agg: str = "min"
    op: str = ">"
    threshold: float = 0.0
    where: Mapping[str, Any] = field(default_factory=dict)
    kind = "bound"

    def reads(self) -> tuple[Read, ...]:
        """The columns at the rows of ``where``."""
        return (Read(self.csv, self.columns, dict(self.where)),)

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        table, path = _read(folder, self.csv)
        rows = _select(table, self.where, path)
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
                parts.append(f"{self.agg} {col} = {_fmt(v)}")
                holds.append(_OPS[self.op](v, self.threshold))
        return Outcome("; ".join(parts), all(holds), _provenance(rows), path.name, self.reads())


@dataclass(frozen=True)
class Identity:
    """A mathematical statement of the paper checked numerically: ``check`` (a :class:`Bound` on
    the theory chapter's instances) decides it; ``context``, when given, is a second bound shown
    beside it (``context_label`` first) that does not decide (Thm. 4.2's bound at the paper's
    β). Its rows are numerical instances, not judge records (``provenance``). The report's
    status is ``verified numerically`` when it holds."""

    check: Bound
    context: Bound | None = None
    context_label: str = ""
    provenance: str = "random instances"
    kind = "identity"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        outcome = self.check.evaluate(folder, seed, n_boot)
        value = outcome.value
        if self.context is not None:
            try:
                beside = self.context.evaluate(folder, seed, n_boot).value
            except NotAvailable as err:
                beside = str(err)
            value = f"{value}; {self.context_label}{beside}"
        return Outcome(value, outcome.holds, self.provenance, outcome.csv, outcome.reads)


@dataclass(frozen=True)
class Finding:
    """The rows of the chapter's findings CSVs (file names matching ``files``) whose
    ``column`` (default ``finding``) matches the regular expression ``pattern``
    (case-insensitive). The value is the rows' ``detail`` or ``observed`` text, else the count
    of rows that hold."""

    pattern: str
    files: str = "*findings*.csv"
    column: str = "finding"
    kind = "finding"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        paths = sorted(p for p in folder.glob("*.csv") if fnmatch.fnmatch(p.name, self.files))
        if not paths:
            raise NotAvailable(f"{folder.name} wrote no {self.files}")
        for path in paths:
            table = pd.read_csv(path)
            if self.column not in table.columns or "holds" not in table.columns:
                continue
            rows = table[table[self.column].astype(str).str.contains(self.pattern, case=False)]
            if rows.empty:
                continue
            ok = rows["holds"].astype(str).str.lower().eq("true")
            detail = next((c for c in ("detail", "observed") if c in rows.columns), None)
            texts = rows[detail].astype(str) if detail else [f"{ok.sum()} of {len(ok)} rows hold"]
            basis = rows["basis"].dropna().astype(str).unique() if "basis" in rows.columns else []
            read = Read(path.name, (self.column,), texts=tuple(rows[self.column].astype(str)))
            return Outcome(
                " | ".join(texts),
                bool(ok.all()),
                _provenance(rows),
                path.name,
                (read,),
                reason="; ".join(basis),
            )
        raise NotAvailable(f"{folder.name}: no finding matching {self.pattern!r}")


@dataclass(frozen=True)
class Excerpts:
    """§2.2's case studies, a qualitative reading of the paper's judges' outputs: no rule
    decides one. The reason is computed from what the judging chapter ran (``csv``'s
    ``column``, the models it judged with): none of the paper's ``judges`` (the build has none
    of their outputs), or some (their excerpts are on the chapter's page, for the reader)."""

    csv: str = "run.csv"
    column: str = "model"
    judges: tuple[str, ...] = ("qwen3-1.7b", "qwen3-4b", "qwen3-8b")
    kind = "reading"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        table, path = _read(folder, self.csv)
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


@dataclass(frozen=True)
class HalfCost:
    """Fig. 4 (§5.3): per judge and split, RACER's best mean accuracy over the budgets whose
    mean cost is at most ``share`` of All-Reasoning's cost, minus All-Reasoning's accuracy;
    holds when every gap is at least ``-tol`` (RACER matches All-Reasoning within ``tol``)."""

    sets: tuple[str, ...] = ("train", "test")
    share: float = paper.FRONTIER_HALF_COST
    tol: float = ACCURACY_TOLERANCE
    kind = "bound"  # a bound on a gap within the build, not a level against the paper's number

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        summary, path = _read(folder, "frontier_summary.csv")
        ends, ends_path = _read(folder, "frontier_endpoints.csv")
        parts, holds, used = [], [], []
        for (judge, name), end in _select(ends, {"set": self.sets}, path).groupby(
            ["judge", "set"], sort=False
        ):
            top = end[end["method"] == "All-Reasoning"].iloc[0]
            racer = _select(summary, {"judge": judge, "set": name, "method": "RACER"}, path)
            cheap = racer[racer["cost_mean"] <= self.share * top["cost"]]
            if cheap.empty:
                parts.append(f"{judge} {name}: no budget at <= {self.share:g} x its cost")
                holds.append(False)
                continue
            best = cheap.loc[cheap["accuracy_mean"].idxmax()]
            gap = best["accuracy_mean"] - top["accuracy"]
            parts.append(
                f"{judge} {name}: {gap:+.2f} pts at cost {best['cost_mean']:.2f} "
                f"(All-Reasoning {top['cost']:.2f})"
            )
            holds.append(gap >= -self.tol)
            used.append(cheap)
        if not parts:
            raise NotAvailable(f"{path.name}: no train or test split")
        rows = pd.concat(used) if used else summary
        reads = (
            Read(path.name, ("accuracy_mean", "cost_mean"), {"method": "RACER", "set": self.sets}),
            Read(ends_path.name, ("accuracy", "cost"), {"method": "All-Reasoning"}),
        )
        return Outcome("; ".join(parts), all(holds), _provenance(rows), path.name, reads)


@dataclass(frozen=True)
class MarginOverBest:
    """§5.4 text: per judge, RACER's accuracy minus the best baseline's in the advanced
    baselines table, each within ``tol`` points of the paper's margin."""

    margins: Mapping[str, float] = field(default_factory=lambda: paper.ADVANCED_BASELINES_MARGINS)
    tol: float = ACCURACY_TOLERANCE
    kind = "level"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        table, path = _read(folder, "advanced_baselines_table.csv")
        parts, holds = [], []
        for judge, rows in table.groupby("judge", sort=False):
            if judge not in self.margins or "RACER" not in set(rows["method"]):
                continue
            racer = rows.loc[rows["method"] == "RACER", "accuracy"].mean()
            others = rows[rows["method"] != "RACER"].groupby("method")["accuracy"].mean()
            margin = racer - others.max()
            parts.append(
                f"{judge}: {margin:+.2f} pts over {others.idxmax()} "
                f"(paper {self.margins[judge]:+.2f})"
            )
            holds.append(level_holds(margin, self.margins[judge], self.tol))
        if not parts:
            raise NotAvailable(f"{path.name}: none of the paper's judges ran")
        read = Read(path.name, ("accuracy",), {"judge": list(self.margins)})
        return Outcome("; ".join(parts), all(holds), _provenance(table), path.name, (read,))


Rule = Difference | Level | Bound | Identity | Finding | Excerpts | HalfCost | MarginOverBest


@dataclass(frozen=True)
class Claim:
    """One claim of the paper: its ``artifact`` (table, figure or section), the ``claim`` with
    the paper's number, the chapter that tests it, and the rule. No status: the report computes
    it from the outcome, what the rule read (:mod:`racer_lib.paper.given`) and the records'
    provenance. ``sensitivity``: the key of the claim in chapter 16's ``claim_robustness.csv``
    (how the verdict moves with the simulator's choices), empty when it has none."""

    artifact: str
    claim: str
    chapter: str
    rule: Rule
    sensitivity: str = ""
