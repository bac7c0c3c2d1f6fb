"""The reproduction report: every claim of the paper, one row each, with this build's value and
its status (:mod:`racer_lib.claims`), decided from the CSVs the other chapters wrote.

A claim names its artifact (table, figure or section of ``racer_paper.tex``), the paper's claim
with its number (:mod:`racer_lib.paper`), the chapter that tests it and a rule:

* :class:`Difference` — a claimed sign of a difference (per seed): the build's value is its
  mean ± sd and a 95 % percentile-bootstrap interval of the mean (seeded); it holds when the
  whole interval lies on the claimed side of zero;
* :class:`Level` — the paper's number(s): holds when every build value (mean over seeds) is
  within the claim's stated tolerance of the paper's (:data:`ACCURACY_TOLERANCE` points for an
  accuracy, :data:`RATIO_TOLERANCE` relative for a cost ratio, unless the claim says otherwise);
* :class:`Bound` — a check of the theory chapter: each column, reduced over the rows, meets
  the bound;
* :class:`Finding` — a finding a chapter decided itself (its findings CSV): holds when every
  matching row holds; the CSV's own ``status`` column is used when present;
* :class:`Unavailable` — the build cannot test the claim (the reason says why).

The status (:data:`racer_lib.claims.STATUSES`) is then ``not reproducible here`` when the
chapter did not run in the profile, its CSV is missing, or the claim needs records this build
lacks (``needs``, on simulated records); otherwise
:func:`racer_lib.claims.finding_status` of (holds, calibrated, provenance).
"""

from __future__ import annotations

import fnmatch
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import paper
from .claims import (
    BY_CONSTRUCTION,
    NOT_REPRODUCED,
    NOT_REPRODUCIBLE,
    REPRODUCED,
    STATUSES,
    finding_status,
)

#: Columns of the report, in order (see :func:`report`).
REPORT_COLUMNS = (
    "artifact",
    "claim",
    "build_value",
    "status",
    "reason",
    "rule",
    "provenance",
    "chapter",
    "link",
    "csv",
)
#: Tolerances of the level rules: accuracy in points, cost ratios relative.
ACCURACY_TOLERANCE = 1.0
RATIO_TOLERANCE = 0.05
NEEDS_QWEN3 = (
    "needs the paper's own judge records (40k pairs judged by the Qwen3 / Llama pairs on a "
    "GPU, profile paper): the simulated records are calibrated to the judges' endpoints, "
    "not to a router's accuracy"
)


class NotAvailable(Exception):
    """The claim cannot be evaluated on this build; the message is the reason."""


@dataclass(frozen=True)
class Outcome:
    """What a rule found: the build's value as text, whether the claim holds, the provenance
    of the rows read, and a ``status`` when a findings CSV gave one."""

    value: str
    holds: bool
    provenance: str
    csv: str
    status: str | None = None
    reason: str = ""


def bootstrap_interval(
    values: Sequence[float], seed: int, n_boot: int = 2000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of ``values`` (``n_boot`` resamples drawn
    from ``numpy.random.default_rng(seed)``); a single value gives the point interval."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values to bootstrap")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


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
    kind = "difference"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        table, path = _read(folder, self.csv)
        rows = _select(table, self.where, path)
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
        return Outcome(value, difference_holds(lo, hi, self.sign), _provenance(used), path.name)


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
    kind = "level"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        table, path = _read(folder, self.csv)
        parts, holds, used = [], [], []
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
        if not parts:
            raise NotAvailable(f"{path.name}: none of the paper's cells ran in this profile")
        return Outcome("; ".join(parts), all(holds), _provenance(pd.concat(used)), path.name)


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


@dataclass(frozen=True)
class Bound:
    """Each of ``columns``, reduced over the rows by ``agg`` (min, max, or all for a boolean
    column), meets ``op threshold``."""

    csv: str
    columns: tuple[str, ...]
    agg: str = "min"
    op: str = ">"
    threshold: float = 0.0
    where: Mapping[str, Any] = field(default_factory=dict)
    kind = "bound"

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
                v = float(getattr(rows[col].astype(float), self.agg)())
                parts.append(f"{self.agg} {col} = {_fmt(v)}")
                holds.append(_OPS[self.op](v, self.threshold))
        return Outcome("; ".join(parts), all(holds), _provenance(rows), path.name)


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
            holds = bool(ok.all())
            status = None
            if "status" in rows.columns:
                status = _weakest(rows["status"].dropna().astype(str))
            basis = rows["basis"].dropna().astype(str).unique() if "basis" in rows.columns else []
            reason = "; ".join(basis) or f"the status in {path.name}"
            return Outcome(" | ".join(texts), holds, _provenance(rows), path.name, status, reason)
        raise NotAvailable(f"{folder.name}: no finding matching {self.pattern!r}")


@dataclass(frozen=True)
class Unavailable:
    """A claim this build cannot test; ``reason`` says why."""

    reason: str
    kind = "none"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        raise NotAvailable(self.reason)


def _weakest(statuses: Iterable[str]) -> str | None:
    """The least favourable of the statuses of several rows of one finding."""
    found = [s for s in statuses if s in STATUSES]
    for s in (NOT_REPRODUCED, NOT_REPRODUCIBLE, BY_CONSTRUCTION, REPRODUCED):
        if s in found:
            return s
    return None


@dataclass(frozen=True)
class Claim:
    """One claim of the paper: its ``artifact`` (table, figure or section), the ``claim`` with
    the paper's number, the chapter that tests it, and the rule. ``calibrated``: the simulator
    was given it (:func:`finding_status`); ``needs``: why simulated records cannot test it."""

    artifact: str
    claim: str
    chapter: str
    rule: Rule
    calibrated: bool = False
    needs: str = ""


def decide(claim: Claim, outcome: Outcome) -> tuple[str, str]:
    """``(status, reason)`` of a claim whose rule gave ``outcome``."""
    if outcome.status in STATUSES:
        return outcome.status, outcome.reason
    if claim.needs and outcome.provenance == "simulated":
        return NOT_REPRODUCIBLE, claim.needs
    status = finding_status(outcome.holds, claim.calibrated, outcome.provenance)
    if status == BY_CONSTRUCTION:
        return status, "the simulator was given this (racer_lib.simulate)"
    return status, ""


def evaluate_claim(
    claim: Claim, folder: Path | None, ran: bool, profile: str, seed: int = 0, n_boot: int = 2000
) -> dict[str, Any]:
    """One row of the report (see :data:`REPORT_COLUMNS`)."""
    row = {
        "artifact": claim.artifact,
        "claim": claim.claim,
        "build_value": "",
        "rule": claim.rule.kind,
        "provenance": "",
        "chapter": claim.chapter,
        "link": f"{claim.chapter}.html",
        "csv": "",
    }
    if not ran:
        reason = f"chapter {claim.chapter} is not in profile {profile}"
        return row | {"status": NOT_REPRODUCIBLE, "reason": reason}
    if folder is None or not folder.is_dir():
        reason = (
            f"chapter {claim.chapter} left no results in profile {profile} (not run, or failed)"
        )
        return row | {"status": NOT_REPRODUCIBLE, "reason": reason}
    try:
        outcome = claim.rule.evaluate(folder, seed, n_boot)
    except NotAvailable as err:
        return row | {"status": NOT_REPRODUCIBLE, "reason": str(err)}
    status, reason = decide(claim, outcome)
    return row | {
        "build_value": outcome.value,
        "status": status,
        "reason": reason,
        "provenance": outcome.provenance,
        "csv": f"{claim.chapter}/{outcome.csv}",
    }


def report(
    results_root: str | Path,
    profile: str,
    chapters: Iterable[str] | None = None,
    seed: int = 0,
    n_boot: int = 2000,
    registry: Sequence[Claim] | None = None,
) -> pd.DataFrame:
    """The reproduction report: one row per claim of :data:`CLAIMS` (or ``registry``), decided
    from the CSVs under ``results_root`` (``results/<profile>``, one folder per chapter).
    ``chapters``: the stems the profile ran (default: every folder present); a claim of any
    other chapter is not reproducible here. ``seed`` seeds every bootstrap interval."""
    root = Path(results_root)
    ran = set(chapters) if chapters is not None else {p.name for p in root.glob("*") if p.is_dir()}
    rows = [
        evaluate_claim(c, root / c.chapter, c.chapter in ran, profile, seed, n_boot)
        for c in (CLAIMS if registry is None else registry)
    ]
    return pd.DataFrame(rows, columns=list(REPORT_COLUMNS))


def sources(results_root: str | Path, chapters: Iterable[str]) -> pd.DataFrame:
    """What the report read: per chapter of the profile, its results folder (as
    ``<profile>/<stem>``, relative to the results root, ``results/`` by default, so that the
    table does not depend on where the build ran), its CSV files and the provenance of their
    rows."""
    root = Path(results_root)
    rows = []
    for stem in chapters:
        folder = root / stem
        csvs = sorted(folder.glob("*.csv")) if folder.is_dir() else []
        kinds: set[str] = set()
        for path in csvs:
            table = pd.read_csv(path, usecols=lambda c: c == "provenance")
            kinds |= set(table.get("provenance", pd.Series(dtype=str)).dropna().astype(str))
        rows.append(
            {
                "chapter": stem,
                "folder": f"{root.name}/{stem}",
                "csv_files": len(csvs),
                "provenances": ", ".join(sorted(kinds)) or "(none)",
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class HalfCost:
    """Fig. 4 (§5.3): per judge and split, RACER's best mean accuracy over the budgets whose
    mean cost is at most ``share`` of All-Reasoning's cost, minus All-Reasoning's accuracy;
    holds when every gap is at least ``-tol`` (RACER matches All-Reasoning within ``tol``)."""

    sets: tuple[str, ...] = ("train", "test")
    share: float = paper.FRONTIER_HALF_COST
    tol: float = ACCURACY_TOLERANCE
    kind = "level"

    def evaluate(self, folder: Path, seed: int = 0, n_boot: int = 2000) -> Outcome:
        summary, path = _read(folder, "frontier_summary.csv")
        ends, _ = _read(folder, "frontier_endpoints.csv")
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
        return Outcome("; ".join(parts), all(holds), _provenance(rows), path.name)


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
        return Outcome("; ".join(parts), all(holds), _provenance(table), path.name)


Rule = Difference | Level | Bound | Finding | Unavailable | HalfCost | MarginOverBest

_QWEN3 = ("qwen3-1.7b", "qwen3-4b", "qwen3-8b")
_C = paper.ADVANCED_BASELINES_BUDGET
_CA = paper.ABLATION_BUDGET
_B0, _B1 = paper.TRAINING_CURVE_BUDGETS[0], paper.TRAINING_CURVE_BUDGETS[-1]
_OOD = ["judgebench", "rewardbench", "rewardbench2"]


def _paper_list(values: Iterable[float], fmt: str = "g") -> str:
    return " / ".join(format(v, fmt) for v in values)


#: Every claim of the paper the report decides: each figure and table, and each numbered or
#: quantitative finding of its text, in the paper's order.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 1(a)",
        "reasoning judges gain on difficult tasks at a higher cost, marginally on simple ones",
        "13_motivation_and_benchmarks",
        Finding(r"^\(a\)"),
        calibrated=True,
    ),
    Claim(
        "Fig. 1(b)",
        "RACER stays within budget under OOD inputs where a standard router does not",
        "13_motivation_and_benchmarks",
        Finding(r"^\(b\)"),
    ),
    Claim(
        "Table 4",
        "domain distribution of the OOD benchmarks (JudgeBench, RewardBench, RewardBench 2)",
        "13_motivation_and_benchmarks",
        Finding(r".", files="benchmark_domains.csv", column="domain"),
        calibrated=True,
    ),
    Claim(
        "Fig. 2 (upper)",
        "the largest gains of reasoning are in math and coding; safety and knowledge gain "
        "little or lose",
        "02_reasoning_vs_instruct",
        Finding(r"math and coding", files="*findings*.csv"),
        calibrated=True,
    ),
    Claim(
        "Fig. 2 (lower)",
        "the headroom when the two modes disagree shrinks with model size",
        "02_reasoning_vs_instruct",
        Finding(r"headroom", files="*findings*.csv"),
        calibrated=True,
    ),
    Claim(
        "§2.1 text",
        "reasoning improves judge accuracy (ΔAccuracy > 0 over the three benchmarks)",
        "02_reasoning_vs_instruct",
        Difference("agreement_patterns.csv", "acc_reasoning", second_column="acc_instruct"),
        calibrated=True,
    ),
    Claim(
        "§2.1 text (LLMBar's released judges)",
        "reasoning improves judge accuracy: tested on real judges other than the paper's",
        "11_llmbar_judges",
        Difference(
            "delta_accuracy_by_judge.csv",
            "acc_reasoning",
            second_column="acc_instruct",
            where={"order": "original"},
        ),
    ),
    Claim(
        "§2.2 / Table 6",
        "case studies: reasoning helps on explicit verification, is redundant on surface cues, "
        "hurts when it widens the scope",
        "01_judging",
        Unavailable(
            "a qualitative reading of excerpts; chapter 01 shows excerpts of the small judge "
            "it runs, not the paper's Qwen3 outputs, and no rule decides a case study"
        ),
    ),
    Claim(
        "Thm. 3.1",
        "the KL worst case has the closed (tilted) form: it equals the convex solver's optimum "
        "(relative gap < 1e-6)",
        "03_dro_theory",
        Bound(
            "thm31_exact_vs_cvxpy.csv", ("objective_rel_gap",), agg="max", op="<", threshold=1e-6
        ),
    ),
    Claim(
        "Thm. 4.1",
        "the regularised Lagrangian is strictly concave in π (midpoint margin > 0)",
        "03_dro_theory",
        Bound("thm41_checks.csv", ("min_concavity_margin",)),
    ),
    Claim(
        "Thm. 4.1",
        "its saddle point is unique: the dual iteration reaches one limit from every start "
        "(spread < 1e-6)",
        "03_dro_theory",
        Bound("thm41_checks.csv", ("limit_spread",), agg="max", op="<", threshold=1e-6),
    ),
    Claim(
        "Thm. 4.2",
        "the primal–dual iterates converge linearly: errors stay under the theorem's bounds",
        "03_dro_theory",
        Bound("thm42_rates.csv", ("under_bound_lambda", "under_bound_kl"), agg="all"),
    ),
    Claim(
        "Table 1",
        "cost ratios of the Skywork subsets: "
        + _paper_list(r for _, r in paper.DATASET_STATISTICS.values())
        + " (Magpie Ultra / WildGuardMix / OffsetBias)",
        "06_robustness_ablation",
        Level(
            "dataset_statistics.csv",
            "cost_ratio",
            tuple(({"subset": s}, r) for s, (_, r) in paper.DATASET_STATISTICS.items()),
            tol=RATIO_TOLERANCE,
            relative=True,
        ),
        calibrated=True,
    ),
    Claim(
        "Fig. 3(a)",
        f"cheaper shift (C = {_CA:g}): every method stays within budget in every run",
        "06_robustness_ablation",
        Finding(r"cheaper shift: every run"),
    ),
    Claim(
        "Fig. 3(a)",
        "cheaper shift: RACER-R (τ = 0.1) is more accurate than ACER",
        "06_robustness_ablation",
        Difference(
            "ablation_runs.csv",
            "accuracy",
            {"variant": "RACER-R", "tau": 0.1},
            {"variant": "ACER"},
            where={"scenario": "(a) cheaper shift"},
        ),
    ),
    Claim(
        "Fig. 3(a)",
        "cheaper shift: stronger robustness (τ = 0.1 rather than 1) gains further accuracy",
        "06_robustness_ablation",
        Difference(
            "ablation_runs.csv",
            "accuracy",
            {"variant": "RACER-R", "tau": 0.1},
            {"variant": "RACER-R", "tau": 1.0},
            where={"scenario": "(a) cheaper shift"},
        ),
    ),
    Claim(
        "Fig. 3(b)",
        "costlier shift: RACER-C (τ = 0.1) is less accurate than ACER",
        "06_robustness_ablation",
        Difference(
            "ablation_runs.csv",
            "accuracy",
            {"variant": "ACER"},
            {"variant": "RACER-C", "tau": 0.1},
            where={"scenario": "(b) costlier shift"},
        ),
    ),
    Claim(
        "Fig. 3(b)",
        "costlier shift: RACER-C keeps the OOD cost within budget more often than ACER",
        "06_robustness_ablation",
        Finding(r"costlier shift: RACER-C stays within budget"),
    ),
    Claim(
        "Fig. 3 (matched-spend control)",
        "costlier shift: the robust variants beat the matched-spend control (fewer budget "
        "violations than ACER trained at the budget they spent, at equal accuracy)",
        "06_robustness_ablation",
        Finding(r"costlier shift.*beats the matched-spend control"),
    ),
    Claim(
        "Fig. 3 (LLMBar's released judges, real shift)",
        "robust variants beat the matched-spend control under a real subset shift: tested on "
        "real judges other than the paper's",
        "15_llmbar_shift",
        Finding(r"beats the matched-spend control"),
    ),
    Claim(
        "Fig. 4",
        "on the in-distribution test split RACER is more accurate than Random at the same "
        "reasoning rate",
        "05_budget_frontier",
        Difference(
            "frontier_runs.csv",
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("judge", "budget", "seed"),
            where={"set": "test"},
        ),
    ),
    Claim(
        "Fig. 4",
        "on the OOD benchmarks RACER keeps a consistent gain over Random",
        "05_budget_frontier",
        Difference(
            "frontier_runs.csv",
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("judge", "set", "budget", "seed"),
            where={"set": _OOD},
        ),
    ),
    Claim(
        "Fig. 4",
        "RACER's frontier lies above Random's chord: the area between them is positive on "
        "every split",
        "05_budget_frontier",
        Bound("area_above_random.csv", ("area_above_random",)),
    ),
    Claim(
        "Fig. 4 (LLMBar's released judges)",
        "RACER is more accurate than Random: tested on real judges other than the paper's",
        "12_llmbar_routing",
        Difference(
            "llmbar_routing_runs.csv",
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("split_by", "judge", "budget", "seed"),
        ),
    ),
    Claim(
        "§5.3 text",
        f"at about {paper.FRONTIER_HALF_COST:g} x the All-Reasoning cost RACER matches "
        f"All-Reasoning's accuracy (within {ACCURACY_TOLERANCE:g} pt; train and test splits)",
        "05_budget_frontier",
        HalfCost(),
    ),
    Claim(
        "Table 2",
        f"RACER is the most accurate method at C = {_C:g} for every judge",
        "08_advanced_baselines",
        Finding(r"RACER is the most accurate"),
    ),
    Claim(
        "Table 2",
        f"every method stays within C = {_C:g} (mean OOD cost)",
        "08_advanced_baselines",
        Finding(r"mean OOD cost within"),
    ),
    Claim(
        "Table 2",
        "RACER's accuracy: "
        + _paper_list(paper.ADVANCED_BASELINES["RACER", j][0] for j in _QWEN3)
        + " % (Qwen3-1.7B / 4B / 8B)",
        "08_advanced_baselines",
        Level(
            "advanced_baselines_table.csv",
            "accuracy",
            tuple(
                ({"method": "RACER", "judge": j}, paper.ADVANCED_BASELINES["RACER", j][0])
                for j in _QWEN3
            ),
            sd_column="accuracy_sd",
        ),
        needs=NEEDS_QWEN3,
    ),
    Claim(
        "§5.4 text",
        "RACER improves over the strongest baseline by "
        + _paper_list(paper.ADVANCED_BASELINES_MARGINS.values(), ".2f")
        + " points (1.7B / 4B / 8B)",
        "08_advanced_baselines",
        MarginOverBest(),
        needs=NEEDS_QWEN3,
    ),
    Claim(
        "Table 3",
        "removing the entropy term (β = 0) lowers accuracy at the tightest budget C = 2",
        "07_beta_sensitivity",
        Difference(
            "beta_runs.csv", "accuracy", {"beta": 0.005}, {"beta": 0.0}, where={"budget": 2.0}
        ),
    ),
    Claim(
        "Table 3",
        "β = 0.005 and β = 0.01 perform alike",
        "07_beta_sensitivity",
        Finding(r"perform alike"),
    ),
    Claim(
        "Table 3",
        "β = 0.05 lowers accuracy (every budget)",
        "07_beta_sensitivity",
        Difference(
            "beta_runs.csv", "accuracy", {"beta": 0.005}, {"beta": 0.05}, pair_on=("budget", "seed")
        ),
    ),
    Claim(
        "Table 3",
        "RACER's accuracy at β = 0.005: "
        + _paper_list(paper.BETA_SENSITIVITY[0.005, c][0] for c in (2.0, 3.0, 4.0))
        + " % (C = 2 / 3 / 4)",
        "07_beta_sensitivity",
        Level(
            "beta_table.csv",
            "accuracy_mean",
            tuple(
                ({"beta": 0.005, "budget": c}, paper.BETA_SENSITIVITY[0.005, c][0])
                for c in (2.0, 3.0, 4.0)
            ),
            sd_column="accuracy_sd",
        ),
        needs=NEEDS_QWEN3,
    ),
    Claim(
        "Fig. 5",
        f"λ grows under the tight budget B = {_B0:g} and collapses towards zero at B = {_B1:g}",
        "04_training_dynamics",
        Difference(
            "training_summary.csv",
            "final_lambda",
            {"budget": _B0},
            {"budget": _B1},
            pair_on=(),
            unit="",
        ),
    ),
    Claim(
        "Fig. 5",
        f"the training cost is driven to the budget: final cost within 10 % of B = {_B0:g}",
        "04_training_dynamics",
        Level(
            "training_summary.csv",
            "final_train_cost",
            (({"budget": _B0}, _B0),),
            tol=0.10,
            relative=True,
        ),
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER is more accurate than Random at matched cost at every budget",
        "10_llama_family",
        Difference("llama_runs.csv", "racer_accuracy", second_column="random_at_cost_accuracy"),
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER often surpasses All-Reasoning's accuracy at lower cost",
        "10_llama_family",
        Finding(r"reaches All-Reasoning accuracy"),
    ),
    Claim(
        "Table 7",
        "Llama pair endpoints: All-Instruct "
        + _paper_list(v[0] for v in paper.LLAMA_FAMILY_ENDPOINTS.values())
        + " % (All-Instruct / All-Reasoning)",
        "10_llama_family",
        Level(
            "llama_table.csv",
            "accuracy_mean",
            tuple(({"method": m}, v[0]) for m, v in paper.LLAMA_FAMILY_ENDPOINTS.items()),
        ),
        calibrated=True,
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER's accuracy "
        + _paper_list(v[0] for v in paper.LLAMA_FAMILY.values())
        + " % at C = "
        + _paper_list(paper.LLAMA_FAMILY),
        "10_llama_family",
        Level(
            "llama_table.csv",
            "accuracy_mean",
            tuple(({"method": "RACER", "budget": c}, v[0]) for c, v in paper.LLAMA_FAMILY.items()),
            sd_column="accuracy_sd",
        ),
        needs=NEEDS_QWEN3,
    ),
    Claim(
        "Table 9",
        "self-routing reasons on nearly every pair: "
        + _paper_list(v[0] for v in paper.SELF_ROUTING.values())
        + " % (1.7B / 4B / 8B)",
        "09_self_routing",
        Finding(r"reasons on more than"),
        calibrated=True,
    ),
    Claim(
        "Table 9",
        "self-routing's accuracy equals All-Reasoning's: "
        + _paper_list(v[3] for v in paper.SELF_ROUTING.values())
        + " vs "
        + _paper_list(v[2] for v in paper.SELF_ROUTING.values())
        + " %",
        "09_self_routing",
        Finding(r"accuracy is within"),
        calibrated=True,
    ),
    Claim(
        "Table 9",
        "cost ratio of reasoning on the training mixture: "
        + _paper_list(v[4] for v in paper.SELF_ROUTING.values())
        + " (1.7B / 4B / 8B)",
        "09_self_routing",
        Level(
            "self_routing_table.csv",
            "cost_all_reasoning",
            tuple(
                ({"judge": j, "set": "training_mix"}, v[4]) for j, v in paper.SELF_ROUTING.items()
            ),
            tol=RATIO_TOLERANCE,
            relative=True,
        ),
        calibrated=True,
    ),
)


def profile_chapters(profile: str, results_root: str | Path, exclude: str = "") -> list[str]:
    """The chapters ``profile`` runs (``profiles/<profile>.yaml``, ``extends`` resolved), less
    ``exclude``; for a name that is no profile, the chapter folders under ``results_root``."""
    from .errors import RacerError
    from .pipeline import find_root, load_profile

    try:
        stems = list(load_profile(profile, find_root()).notebooks)
    except (RacerError, OSError):
        stems = sorted(p.name for p in Path(results_root).glob("*") if p.is_dir())
    return [s for s in stems if s != exclude]


def status_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Claims per status of a :func:`report` table, every status of
    :data:`racer_lib.claims.STATUSES` listed (0 where none)."""
    counts = table["status"].value_counts()
    return pd.DataFrame({"status": STATUSES, "claims": [int(counts.get(s, 0)) for s in STATUSES]})


#: The columns of a claims table on the page, under the reader's names: the status and the
#: records' provenance are the table's caption, and ``rule``, ``link`` and ``csv`` stay in
#: ``claims.csv``.
PAGE_COLUMNS = {
    "artifact": "artifact",
    "claim": "claim",
    "build_value": "this build",
    "reason": "why",
    "chapter": "chapter",
}


def claims_views(table: pd.DataFrame) -> list[tuple[str, str | None, pd.DataFrame]]:
    """The claims of a :func:`report` table as the page shows them: one table per status (in
    the order of :data:`racer_lib.claims.STATUSES`) and provenance of the records (``None``
    where a claim read none), each ``(status, provenance, claims)`` with the page's columns
    (:data:`PAGE_COLUMNS`, full texts) and no column that is empty on all its claims."""
    views = []
    for status in STATUSES:
        rows = table[table["status"] == status]
        for provenance in rows["provenance"].drop_duplicates():
            mine = (
                rows["provenance"].isna()
                if pd.isna(provenance)
                else (rows["provenance"] == provenance)
            )
            view = rows.loc[mine, list(PAGE_COLUMNS)].rename(columns=PAGE_COLUMNS)
            view = view.dropna(axis=1, how="all").reset_index(drop=True)
            views.append((status, None if pd.isna(provenance) else provenance, view))
    return views


#: The least width of a text column of a claims table on the page (in em): without it the
#: browser gives nearly all the width to the longest cells (a build value listing every judge)
#: and wraps an artifact's name a few letters a line.
PAGE_MIN_WIDTH = {"artifact": 5, "claim": 16, "why": 12}


def linked(shown: str, table: pd.DataFrame, chapters: Iterable[str]) -> str:
    """``shown``, the HTML of a claims table as :func:`racer_lib.chapter.show` displays it
    (:func:`claims_views`), with each chapter that ran linked to its page (``link`` of
    ``table``, relative to this chapter's page; a chapter that did not run stays plain text)
    and the text columns at least :data:`PAGE_MIN_WIDTH` wide."""
    ran = set(chapters)
    for stem, link in set(zip(table["chapter"], table["link"], strict=True)):
        if stem in ran and isinstance(link, str):
            shown = shown.replace(f"<td>{stem}</td>", f'<td><a href="{link}">{stem}</a></td>')
    for column, em in PAGE_MIN_WIDTH.items():
        shown = shown.replace(f"<th>{column}</th>", f'<th style="min-width: {em}em">{column}</th>')
    return shown
