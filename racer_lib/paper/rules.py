"""What the chapters' claims share beyond the generic rules (:mod:`racer_lib.claims.rules`):
the paper's two rules that have no generic form, each deciding one claim (:class:`HalfCost`,
Fig. 4, §5.3: RACER at about half All-Reasoning's cost matches its accuracy;
:class:`MarginOverBest`, §5.4: RACER's margin over the strongest baseline), a level claim on the
paper's cells (:func:`level`) and the paper's numbers as a claim states them
(:func:`paper_list`). Their defaults are the paper's numbers (:mod:`racer_lib.paper.numbers`)
and effects (:mod:`racer_lib.paper.effects`); the CSVs they read are named by the chapter that
declares the claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from racer_lib.claims.data import (
    ACCURACY_TOLERANCE,
    RATIO_TOLERANCE,
    SEED,
    NotAvailable,
    Outcome,
    decide_members,
    per_seed,
    provenance_of,
    read_csv,
    select,
    verdict_text,
)
from racer_lib.claims.families import Family, Test, from_rows
from racer_lib.claims.given import Read
from racer_lib.claims.rules import Level
from racer_lib.evaluation import verdicts
from racer_lib.paper import numbers as paper
from racer_lib.paper.effects import ROUTER_ACCURACY

__all__ = ["COUNT_TOLERANCE", "HalfCost", "MarginOverBest", "level", "paper_list"]

#: A count of pairs matches the paper's when it is equal (the margin of its TOST).
COUNT_TOLERANCE = 0.5


def paper_list(values: Iterable[float], fmt: str = "g") -> str:
    """The paper's numbers as a claim states them: ``72.4 / 75.1 / 77.3``."""
    return " / ".join(format(v, fmt) for v in values)


def level(csv: str, column: str, cells, accuracy: bool) -> Level:
    """A level claim on paper cells: an accuracy within :data:`ACCURACY_TOLERANCE` points of
    the paper's, a cost within :data:`RATIO_TOLERANCE` of it (relative)."""
    return Level(
        csv,
        column,
        tuple(cells),
        tol=ACCURACY_TOLERANCE if accuracy else RATIO_TOLERANCE,
        relative=not accuracy,
        unit=" pts" if accuracy else "",
    )


@dataclass(frozen=True)
class HalfCost:
    """Fig. 4 (§5.3): per judge, split and seed, RACER's best accuracy over the budgets whose
    cost is at most ``share`` of All-Reasoning's cost, minus All-Reasoning's accuracy; a
    non-inferiority test per judge and split that the gap is above ``-tol`` (RACER matches
    All-Reasoning within ``tol`` or beats it), every judge (``judges``, default all) and split.
    ``tol`` is the SESOI of an accuracy difference between routers, as "surpasses
    All-Reasoning" on the same gap uses."""

    runs: str
    ends: str
    sets: tuple[str, ...] = ("train", "test")
    judges: tuple[str, ...] = ()
    share: float = paper.FRONTIER_HALF_COST
    tol: float = ROUTER_ACCURACY.sesoi
    kind = "difference"

    def _gaps(self, folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
        """``(d, racer, path)``: per judge, split and seed the gap (column ``d``), the RACER
        rows read and the runs' CSV."""
        runs, path = read_csv(folder, self.runs)
        ends, _ = read_csv(folder, self.ends)
        if self.judges:
            runs = select(runs, {"judge": self.judges}, path)
        top = select(ends, {"set": self.sets, "method": "All-Reasoning"}, path)
        on = [c for c in ("judge", "set", SEED) if c in top.columns]
        racer = select(runs, {"set": self.sets, "method": "RACER"}, path)
        racer = racer.merge(
            top[[*on, "accuracy", "cost"]].rename(
                columns={"accuracy": "ar_acc", "cost": "ar_cost"}
            ),
            on=on,
        )
        cheap = racer[racer["cost"] <= self.share * racer["ar_cost"]]
        if cheap.empty:
            raise NotAvailable(f"{path.name}: no RACER run at <= {self.share:g} x All-Reasoning")
        keys = [c for c in ("judge", "set", SEED) if c in cheap.columns]
        best = cheap.groupby(keys).apply(
            lambda g: g["accuracy"].max() - g["ar_acc"].iloc[0], include_groups=False
        )
        return best.rename("d").reset_index(), racer, path

    def test(self) -> Test:
        """One member's test: the gap above ``-tol`` (non-inferiority), its power stated at
        equal accuracy."""
        return Test(1, -self.tol, 0.0, expected=0.0, shown=self.tol)

    def family(self, folder: Path) -> Family:
        """The gaps per judge and split (a member each, every member holding), as the engine
        redraws them."""
        d, _, _ = self._gaps(folder)
        rows = per_seed(d, "d", ("judge", "set"))
        groups = {str(k): g["d"] for k, g in rows.groupby(["judge", "set"], sort=False)}
        return Family(from_rows("", groups, self.test()))

    def evaluate(self, folder: Path) -> Outcome:
        d, racer, path = self._gaps(folder)
        verdict, members = decide_members(d, ("judge", "set"), self.test().decide)
        chosen = {"judge": self.judges} if self.judges else {}
        reads = (
            Read(path.name, ("accuracy", "cost"), {"method": "RACER", "set": self.sets, **chosen}),
            Read(self.ends, ("accuracy", "cost"), {"method": "All-Reasoning"}),
        )
        value = verdict_text(verdict, " pts", members)
        return Outcome(value, verdict, provenance_of(racer), path.name, reads)


@dataclass(frozen=True)
class MarginOverBest:
    """§5.4 text: per judge and seed, RACER's accuracy minus the best baseline's (the baseline
    most accurate on average) in ``csv`` at ``where``, against the paper's margin within ``tol``
    points: a level (TOST per judge, Holm over the judges)."""

    csv: str
    margins: Mapping[str, float] = field(default_factory=lambda: paper.ADVANCED_BASELINES_MARGINS)
    tol: float = ACCURACY_TOLERANCE
    where: Mapping[str, Any] = field(default_factory=dict)
    kind = "level"

    def evaluate(self, folder: Path) -> Outcome:
        table, path = read_csv(folder, self.csv)
        table = select(table, self.where, path)
        parts, members, misses = [], {}, []
        for judge, rows in table.groupby("judge", sort=False):
            if judge not in self.margins or "RACER" not in set(rows["method"]):
                continue
            by_method = per_seed(rows, "accuracy", ("method",)).pivot_table(
                index=SEED if SEED in rows.columns else None,
                columns="method",
                values="accuracy",
            )
            others = by_method.drop(columns="RACER")
            best = others.mean().idxmax()
            x = (by_method["RACER"] - others[best]).dropna().to_numpy(dtype=float)
            member = verdicts.equivalent(x - self.margins[judge], self.tol)
            members[str(judge)] = member
            parts.append(
                f"{judge}: {x.mean():+.2f} pts over {best} (paper {self.margins[judge]:+.2f}; "
                f"n = {x.size})"
            )
            if abs(x.mean() - self.margins[judge]) > self.tol:
                misses.append(abs(x.mean() - self.margins[judge]))
        if not parts:
            raise NotAvailable(f"{path.name}: none of the paper's judges ran")
        verdict = verdicts.every(members)
        read = Read(path.name, ("accuracy",), {"judge": list(self.margins)})
        miss = f"off by {max(misses):.2f} pts (tolerance {self.tol:g} pts)" if misses else ""
        return Outcome(
            "; ".join(parts) + f"; {verdict.test}",
            verdict,
            provenance_of(table),
            path.name,
            (read,),
            miss=miss,
        )
