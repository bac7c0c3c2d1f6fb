"""Chapter 09_beta_sensitivity, the paper's β-sensitivity table (§5.4, Table 3): the entropy
weight β against the budget.

One row per trained policy (:func:`config_rows`), the table over seeds next to the paper's
(:func:`beta_table`), the paper's three statements checked on it (:func:`beta_findings`, with
:func:`mean_difference`) and the figure (:func:`beta_panels`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper.claims import add_status
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.routing import train


def config_rows(
    result: train.TrainResult,
    records: pd.DataFrame,
    embeddings: np.ndarray,
    fields: Sequence[str] = ("budget", "seed"),
) -> list[dict[str, Any]]:
    """One row per policy of ``result``: the :class:`~racer_lib.routing.train.PolicyConfig`
    ``fields`` (e.g. ``("beta", "budget", "seed")``), ``best_epoch``, then its accuracy, cost and
    reasoning rate on ``records`` (:func:`racer_lib.evaluation.metrics.policy_point`)."""
    p = result.p_reasoning(embeddings)
    return [
        {
            **{f: getattr(cfg, f) for f in fields},
            "best_epoch": best,
            **evaluate.policy_point(records, pi),
        }
        for cfg, pi, best in zip(result.configs, p, result.best_epoch, strict=True)
    ]


def beta_table(
    runs: pd.DataFrame, paper: Mapping[tuple[float, float], tuple[float, float]]
) -> pd.DataFrame:
    """The β table: :func:`racer_lib.evaluation.metrics.over_seeds` of :func:`config_rows` by beta
    and
    budget, with the paper's accuracy and cost of each (beta, budget) cell (``paper``; NaN
    where it has none)."""
    table = evaluate.over_seeds(runs, ["beta", "budget"])
    cells = [
        paper.get(key, (np.nan, np.nan)) for key in zip(table["beta"], table["budget"], strict=True)
    ]
    table["paper_accuracy"] = [v[0] for v in cells]
    table["paper_cost"] = [v[1] for v in cells]
    return table


def mean_difference(
    table: pd.DataFrame, keys: Sequence[str], first: tuple, second: tuple, column: str = "accuracy"
) -> tuple[float, float]:
    """``column``'s mean over seeds at row ``first`` minus that at row ``second`` of an
    :func:`racer_lib.evaluation.metrics.over_seeds` ``table`` (rows named by their ``keys``
    values), and the standard error of that difference (``inf`` with a single seed)."""
    cells = table.set_index(list(keys))
    m = cells.loc[first, f"{column}_mean"] - cells.loc[second, f"{column}_mean"]
    se = np.sqrt(
        sum(cells.loc[k, f"{column}_sd"] ** 2 / cells.loc[k, "seeds"] for k in (first, second))
    )
    return m, (se if np.isfinite(se) else np.inf)


def beta_findings(
    table: pd.DataFrame, betas: Sequence[float], budgets: Sequence[float], provenance: str
) -> pd.DataFrame:
    """The paper's three statements on its β table, checked on a :func:`beta_table` wherever
    the betas they need were run (``finding``, ``budget``, ``observed``, ``holds``, ``status``,
    ``basis``; β acts on training only, so none is given to the simulator): without
    entropy (β = 0) accuracy drops at the tightest budget; β = 0.005 and 0.01 perform alike
    (within half a point or the standard error, if larger); β = 0.05 lowers accuracy. A
    difference counts only beyond the standard error of the difference of the two means."""

    def diff(b1, b2, c):
        return mean_difference(table, ("beta", "budget"), (b1, c), (b2, c))

    tight = min(budgets)
    findings = []
    if {0.0, 0.005} <= set(betas):
        m, se = diff(0.005, 0.0, tight)
        findings.append(
            {
                "finding": "without entropy, accuracy drops at the tightest budget",
                "budget": tight,
                "observed": f"β=0.005 minus β=0: {m:+.2f} ± {se:.2f} pts",
                "holds": bool(m > se),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
    if {0.005, 0.01} <= set(betas):
        for c in budgets:
            m, se = diff(0.01, 0.005, c)
            findings.append(
                {
                    "finding": "β = 0.005 and β = 0.01 perform alike",
                    "budget": c,
                    "observed": f"β=0.01 minus β=0.005: {m:+.2f} ± {se:.2f} pts",
                    "holds": bool(abs(m) <= max(se, 0.5)),
                    "calibrated": False,
                    "basis": BASIS_LEARNED,
                }
            )
    if {0.005, 0.05} <= set(betas):
        for c in budgets:
            m, se = diff(0.05, 0.005, c)
            findings.append(
                {
                    "finding": "β = 0.05 lowers accuracy",
                    "budget": c,
                    "observed": f"β=0.05 minus β=0.005: {m:+.2f} ± {se:.2f} pts",
                    "holds": bool(m < -se),
                    "calibrated": False,
                    "basis": BASIS_LEARNED,
                }
            )
    return add_status(findings, provenance)


def beta_panels(table) -> plt.Figure:
    """Accuracy and realized cost against the entropy weight β, one line per budget: the means
    and sds over seeds of :func:`beta_table`, the β values equally
    spaced, the budgets dashed on the cost panel."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    fig.subplots_adjust(wspace=0.3)
    position = {b: i for i, b in enumerate(sorted(table["beta"].unique()))}
    for budget, sub in table.groupby("budget"):
        x = sub["beta"].map(position)
        for ax, q in zip(axes, ("accuracy", "cost"), strict=True):
            ax.errorbar(
                x,
                sub[f"{q}_mean"],
                yerr=sub[f"{q}_sd"].fillna(0),
                marker="o",
                capsize=3,
                label=f"C = {budget:g}",
            )
        axes[1].axhline(budget, color="grey", ls="--", lw=0.8)
    for ax, q in zip(axes, ("accuracy (%)", "realized cost ratio"), strict=True):
        ax.set_xticks(list(position.values()), [f"{b:g}" for b in position])
        ax.set(xlabel="entropy weight β", ylabel=q, title=f"{q.split(' (')[0]} on the test split")
    axes[0].legend()
    return fig
