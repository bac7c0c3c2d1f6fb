"""Chapter 07_budget_frontier, the paper's Fig. 4: accuracy against realized cost across budgets.

The area between a router's curve and Random's chord (:func:`area_above_random`, with the
per-run gaps in :func:`gap_to_random`), the oracle frontier thinned for drawing
(:func:`thinned_frontier`), one panel of the figure (:func:`frontier_panel`,
:func:`label_grid`), the page's RACER-against-Random view (:func:`racer_vs_random`) and §5.3's
"concave, higher-accuracy frontier" checked within noise (:func:`frontier_findings`,
:func:`concavity_deficits`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import experiments, plots
from racer_lib.paper.claims import add_status
from racer_lib.records import schema as rec
from racer_lib.routing import train


def area_above_random(points: pd.DataFrame, records: pd.DataFrame) -> float:
    """Area (accuracy points x cost ratio) between a policy's curve and Random's line.

    ``points`` has one row per budget with ``cost`` and ``accuracy`` of the policy on
    ``records``; Random at the same cost lies on the chord between the two endpoints. The
    trapezoid rule integrates the difference over the policy's cost range.
    """
    ends = evaluate.endpoints(records)
    (c0, a0), (c1, a1) = [
        (ends[k]["cost"], ends[k]["accuracy"]) for k in ("All-Instruct", "All-Reasoning")
    ]
    pts = points.sort_values("cost")
    chord = a0 + (a1 - a0) * (pts["cost"].to_numpy() - c0) / (c1 - c0)
    return float(np.trapezoid(pts["accuracy"].to_numpy() - chord, pts["cost"].to_numpy()))


#: "Concave" within noise: a RACER point may lie this many standard errors of its mean accuracy
#: (sd over seeds / sqrt(seeds)) below the chord of its two neighbours on the frontier.
CONCAVITY_SE = 2.0


def concavity_deficits(costs, accuracies, tolerances) -> tuple[np.ndarray, np.ndarray]:
    """For a frontier of points sorted by cost, each interior point's deficit: how far (points)
    it lies below the chord joining its two neighbours, a non-increasing slope being a
    deficit of at most zero; returned with the interior points' ``tolerances``. Neighbours of
    equal cost give no deficit (0)."""
    c, a = np.asarray(costs, dtype=float), np.asarray(accuracies, dtype=float)
    out = np.zeros(max(len(c) - 2, 0))
    for i in range(1, len(c) - 1):
        span = c[i + 1] - c[i - 1]
        if span > 0:
            out[i - 1] = a[i - 1] + (a[i + 1] - a[i - 1]) * (c[i] - c[i - 1]) / span - a[i]
    return out, np.asarray(tolerances, dtype=float)[1:-1]


def frontier_findings(summary: pd.DataFrame, ends: pd.DataFrame, provenance: str):
    """§5.3: "RACER traces a concave, higher-accuracy frontier", per judge and set: the
    frontier All-Instruct, RACER's mean point at each budget (sorted by mean cost), All-Reasoning
    has non-increasing slopes: no RACER point lies more than :data:`CONCAVITY_SE` standard
    errors of its mean accuracy below the chord of its neighbours
    (:func:`concavity_deficits`; the fixed modes are exact). Emerges from training."""
    rows = []
    racer = summary[summary["method"] == "RACER"]
    for (judge, name), sub in racer.groupby(["judge", "set"], sort=False):
        fixed = ends[(ends["judge"] == judge) & (ends["set"] == name)].set_index("method")
        sub = sub.sort_values("cost_mean")
        se = (sub["accuracy_sd"] / np.sqrt(sub["seeds"])).fillna(0.0).to_numpy()
        lo, hi = fixed.loc["All-Instruct"], fixed.loc["All-Reasoning"]
        deficit, tol = concavity_deficits(
            [lo["cost"], *sub["cost_mean"], hi["cost"]],
            [lo["accuracy"], *sub["accuracy_mean"], hi["accuracy"]],
            [0.0, *(CONCAVITY_SE * se), 0.0],
        )
        worst = int(np.argmax(deficit - tol))
        rows.append(
            {
                "finding": f"concave frontier: {judge}, {name}",
                "judge": judge,
                "set": name,
                "observed": f"dip below the neighbours' chord {deficit[worst]:+.2f} pts "
                f"(at C = {sub['budget'].iloc[worst]:g}, tolerance {tol[worst]:.2f}); "
                f"{int((deficit > tol).sum())} of {len(deficit)} points beyond it",
                "holds": bool((deficit <= tol).all()),
                "calibrated": False,
                "basis": experiments.BASIS_LEARNED,
            }
        )
    return add_status(rows, provenance)


def racer_vs_random(summary: pd.DataFrame, name: str) -> pd.DataFrame:
    """The page's view of an :func:`racer_lib.evaluation.metrics.over_seeds` table on one set
    ``name``: per judge and budget, RACER's and Random's mean accuracy and cost, and RACER's
    lead in points."""
    wide = summary[summary["set"] == name].pivot_table(
        index=["judge", "budget"], columns="method", values=["accuracy_mean", "cost_mean"]
    )
    wide.columns = [f"{m} {q.split('_')[0]}" for q, m in wide.columns]
    wide["RACER − Random"] = wide["RACER accuracy"] - wide["Random accuracy"]
    return wide


def thinned_frontier(records: pd.DataFrame, points: int = 400, **fixed: Any) -> pd.DataFrame:
    """The oracle frontier of a set (:func:`racer_lib.evaluation.metrics.oracle_frontier`) kept at
    about
    ``points`` evenly spaced vertices (enough to draw), with ``fixed`` columns appended."""
    frontier = evaluate.oracle_frontier(records)
    keep = np.unique(np.linspace(0, len(frontier) - 1, points).round().astype(int))
    return frontier.iloc[keep].assign(**fixed)


def gap_to_random(runs: pd.DataFrame, records: pd.DataFrame, **fixed: Any) -> dict[str, Any]:
    """How far a router's runs on one set (``RACER`` and its ``Random`` rows, in pairs) lie
    above Random: the area between the mean curve over budgets and Random's chord
    (:func:`area_above_random`), the covered cost range, and the mean
    and
    smallest per-run accuracy gap (points)."""
    racer, rand = runs[runs["method"] == "RACER"], runs[runs["method"] == "Random"]
    curve = racer.groupby("budget")[["cost", "accuracy"]].mean()
    gap = racer["accuracy"].to_numpy() - rand["accuracy"].to_numpy()
    return {
        **fixed,
        "area_above_random": area_above_random(curve, records),
        "cost_low": curve["cost"].min(),
        "cost_high": curve["cost"].max(),
        "mean_gap_points": gap.mean(),
        "min_gap_points": gap.min(),
    }


def _where(frame, where: dict):
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        mask &= (frame[column] == value).to_numpy()
    return frame[mask]


def frontier_panel(ax: plt.Axes, oracle, ends, summary, methods, **where) -> None:
    """One panel of Fig. 4: the oracle frontier (dotted, flat past its last vertex: more tokens
    buy nothing more), the two fixed modes and their chord, and each method's curve over
    budgets. ``oracle``, ``ends`` (rows per method with ``cost`` and ``accuracy``) and
    ``summary`` are whole tables, of which the rows matching ``where`` (e.g. ``judge=...,
    set=...``) are drawn."""
    orc, summary = _where(oracle, where), _where(summary, where)
    end = _where(ends, where).set_index("method")
    top = end.loc["All-Reasoning", "cost"] * 1.05
    ax.plot(
        [*orc["cost"], top],
        [*orc["accuracy"], orc["accuracy"].iloc[-1]],
        ls=":",
        color="black",
        lw=1,
        label="oracle",
    )
    plots.endpoints(ax, end["cost"].to_dict(), end["accuracy"].to_dict())
    plots.method_curves(ax, summary, methods)
    ax.set_ylim(end["accuracy"].min() - 2, max(orc["accuracy"].max(), end["accuracy"].max()) + 1.5)
    ax.set_xlim(min(0.8, orc["cost"].min() - 0.1), top)
    ax.set_title(" · ".join(str(v) for v in where.values()), fontsize=9)


def label_grid(axes, xlabel: str, ylabel: str) -> None:
    """Axis labels on the bottom row and the left column of a grid of panels only."""
    for ax in axes[-1]:
        ax.set_xlabel(xlabel)
    for row in axes:
        row[0].set_ylabel(ylabel)


@dataclass
class FrontierTables:
    """The chapter's tables, gathered judge by judge (:meth:`add`): the runs of RACER and its
    Random twin per set (``runs``, one frame per judge), the two fixed modes (``ends``), the
    thinned oracle frontier (``oracles``), the gap to Random (``areas``), the sets' sizes
    (``sizes``) and the records' provenances."""

    runs: list[pd.DataFrame] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    oracles: list[pd.DataFrame] = field(default_factory=list)
    areas: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[dict[str, Any]] = field(default_factory=list)
    provenances: set[str] = field(default_factory=set)

    def add(self, judge: str, result: train.TrainResult, sets: experiments.Sets) -> None:
        """Evaluate ``judge``'s trained routers (``result``) on each of ``sets`` beside Random at
        each router's reasoning rate, the fixed modes and the oracle, and append the rows."""
        mine = pd.DataFrame(
            experiments.policy_rows(
                result,
                sets,
                method="RACER",
                random=("RACER",),
                lead=("judge", "set", "budget", "seed", "method"),
                judge=judge,
            )
        )
        self.runs.append(mine)
        self.ends += experiments.reference_rows(sets, judge=judge)
        for name, (recs, _) in sets.items():
            self.provenances.add(rec.provenance(recs))
            self.sizes.append({"judge": judge, "set": name, "pairs": len(recs)})
            self.oracles.append(thinned_frontier(recs, judge=judge, set=name))
            self.areas.append(gap_to_random(mine[mine["set"] == name], recs, judge=judge, set=name))


def frontier_figure(oracle, ends, summary, judge: str, sets: list[str]) -> plt.Figure:
    """One judge's row of Fig. 4 as a figure of its own, at a readable size: a
    :func:`frontier_panel` per set of ``sets`` (Random and RACER), labelled on the outer
    panels, with the legend in the last, empty, panel."""
    fig, axes = plt.subplots(2, 3, figsize=(9.0, 5.6), squeeze=False)
    fig.subplots_adjust(hspace=0.5, wspace=0.32)
    for ax, name in zip(axes.flat, sets):
        frontier_panel(ax, oracle, ends, summary, ["Random", "RACER"], judge=judge, set=name)
    label_grid(axes, "realized cost ratio", "accuracy (%)")
    plots.legend_in(axes.flat[-1], axes[0][0])
    return fig
