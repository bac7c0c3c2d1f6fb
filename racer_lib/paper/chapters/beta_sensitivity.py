"""Chapter 09_beta_sensitivity, the paper's β-sensitivity table (§5.4, Table 3): the entropy
weight β against the budget.

One row per trained policy (:func:`config_rows`; a replicate seed re-draws the records and
trains every β and budget on them), the table over seeds next to the paper's
(:func:`beta_table`), the paper's three statements decided over the replicate seeds by the
report's own rules (:func:`beta_findings`) and the figure (:func:`beta_panels`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.rules import SEED, Claim, Difference, Equivalence
from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import experiments, files, plots, registry
from racer_lib.paper.claims import add_status
from racer_lib.paper.effects import ROUTER_ACCURACY
from racer_lib.paper.engine import rule_findings
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.paper.numbers import BETA_SENSITIVITY, PAPER_BETA
from racer_lib.paper.rules import level, paper_list
from racer_lib.records.sets import judge_set
from racer_lib.routing import train

#: The CSVs the chapter writes that its claims read (the runs, shared with chapter 16:
#: :mod:`racer_lib.paper.files`) or that its page decides them in.
RUNS_CSV, FINDINGS_CSV = files.BETA_RUNS_CSV, "beta_findings.csv"


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


def train_replicates(
    judge: str,
    seeds: Sequence[int],
    betas: Sequence[float],
    budgets: Sequence[float],
    settings: train.TrainSettings,
    source: Mapping[str, Any],
    split_shares: Sequence[float] = (),
    **common: Any,
) -> tuple[pd.DataFrame, pd.DataFrame, experiments.Fit, pd.DataFrame]:
    """The β grid trained on each replicate seed of ``seeds``: the training mixture of ``judge``
    drawn anew with the seed (:func:`racer_lib.records.sets.judge_set` with ``source``:
    ``records_dir``, ``dim``, ``scale``, ``simulator``) and, when simulated, split anew by
    dataset with the seed by ``split_shares`` (train, valid, test; empty: the simulator's own
    split; records read from ``records_dir`` keep their files' split), every β
    and budget trained in one pass with policies of that seed (``common``: more
    :class:`~racer_lib.routing.train.PolicyConfig` fields), each evaluated on the seed's test
    split. Returns the runs (:func:`config_rows` by beta, budget and seed), and the last
    replicate's records, fit and test split."""
    rows = []
    for s in seeds:
        records, embeddings = judge_set(
            judge, "training_mix", seed=s, split_shares=split_shares, **source
        )
        configs = experiments.grid(budgets, [s], outer={"beta": list(betas)}, **common)
        fit = experiments.fit(records, embeddings, configs, settings)
        test, test_emb = experiments.evaluation_sets(judge, records, embeddings)["test"]
        rows += config_rows(fit.result, test, test_emb, ("beta", "budget", "seed"))
    return pd.DataFrame(rows), records, fit, test


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


def table_view(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`beta_table` as the page shows it beside the paper
    (:func:`racer_lib.paper.plots.paper_comparison`): per β and budget, each quantity's
    mean ± sd and the paper's value."""
    shown = table.rename(columns={"accuracy_mean": "accuracy", "cost_mean": "cost"})
    betas, budgets = (shown[c].astype(str).unique() for c in ("beta", "budget"))
    return plots.paper_comparison(shown, "beta", "budget", betas, budgets).stack(0)


#: The numbers the closing sentence states, as ``(name, csv, column, agg, where)`` for
#: :meth:`racer_lib.book.chapter.Prose.value`: the findings and how many have each status, the
#: fewest seeds of a cell, the range of the mean accuracies and the largest sd.
PROSE_READS = [("n_findings", FINDINGS_CSV, "status", "count", {})]
PROSE_READS += [
    (f"n_{status.replace(' ', '_')}", FINDINGS_CSV, "status", "count", {"status": status})
    for status in ("reproduced", "not reproduced", "inconclusive")
]
PROSE_READS += [
    ("seeds_min", "beta_table.csv", "seeds", "min", {}),
    ("acc_lo", "beta_table.csv", "accuracy_mean", "min", {}),
    ("acc_hi", "beta_table.csv", "accuracy_mean", "max", {}),
    ("sd_max", "beta_table.csv", "accuracy_sd", "max", {}),
]

#: The kinds of claim rule this chapter decides on its own page, as the report does.
FINDING_KINDS = ("difference", "equivalence")


def beta_findings(folder: str | Path, provenance: str) -> pd.DataFrame:
    """The paper's reading of its β table (β = 0 lowers accuracy at the tightest budget;
    β = 0.005 and 0.01 perform alike; β = 0.05 lowers accuracy), decided on the :data:`RUNS_CSV`
    in ``folder`` by the reproduction report's own rules (the claims of this chapter in
    :data:`CLAIMS` whose rule is a difference or an equivalence:
    paired per replicate seed, a one-sided t-test or TOST, Holm over the budgets), so the page
    and the report cannot disagree. A claim whose betas or budget this run left out is left out
    (the report says why). Columns ``finding`` (the claim), ``key`` (its name in chapter 16),
    ``observed``, the verdict's, ``status`` and ``basis``; β acts on training only, so the
    simulator is given none of them."""
    rows = rule_findings(CLAIMS, folder, FINDING_KINDS, BASIS_LEARNED)
    return add_status(rows, provenance, registry.BETA, FINDINGS_CSV)


def beta_panels(table) -> plt.Figure:
    """Accuracy and realized cost against the entropy weight β, one line per budget: the means
    over seeds of :func:`beta_table` with their 95 % t-intervals over the seeds (the interval
    the claims are decided on, :func:`racer_lib.paper.plots.seed_interval`), the β values
    equally spaced, the budgets dashed on the cost panel."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    fig.subplots_adjust(wspace=0.3)
    position = {b: i for i, b in enumerate(sorted(table["beta"].unique()))}
    for budget, sub in table.groupby("budget"):
        x = sub["beta"].map(position)
        for ax, q in zip(axes, ("accuracy", "cost"), strict=True):
            ax.errorbar(
                x,
                sub[f"{q}_mean"],
                yerr=plots.seed_interval(sub, q),
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


#: The equivalence margin of "β = 0.005 and β = 0.01 perform alike" (accuracy points): the SESOI
#: of an accuracy difference between routers, as for "β = 0 lowers" and "β = 0.05 lowers", so
#: that no data set supports both readings.
_ALIKE = ROUTER_ACCURACY.sesoi
_BUDGETS = (2.0, 3.0, 4.0)
#: The paper's claims this chapter tests (the reproduction report decides them; the page the
#: comparisons, :func:`beta_findings`).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Table 3",
        "removing the entropy term (β = 0) lowers accuracy at the tightest budget C = 2",
        registry.BETA,
        Difference(
            RUNS_CSV,
            "accuracy",
            {"beta": PAPER_BETA},
            {"beta": 0.0},
            where={"budget": 2.0},
            effect=ROUTER_ACCURACY,
        ),  # fmt: skip
        sensitivity="beta_zero_lowers",
    ),
    Claim(
        "Table 3",
        f"β = 0.005 and β = 0.01 perform alike (within ±{_ALIKE:g} pt at every budget)",
        registry.BETA,
        Equivalence(
            RUNS_CSV,
            "accuracy",
            {"beta": 0.01},
            {"beta": PAPER_BETA},
            pair_on=("budget", SEED),
            members=("budget",),
            margin=_ALIKE,
            effect=ROUTER_ACCURACY,
        ),  # fmt: skip
        sensitivity="beta_alike",
    ),
    Claim(
        "Table 3",
        "β = 0.05 lowers accuracy (every budget)",
        registry.BETA,
        Difference(
            RUNS_CSV,
            "accuracy",
            {"beta": PAPER_BETA},
            {"beta": 0.05},
            pair_on=("budget", SEED),
            members=("budget",),
            effect=ROUTER_ACCURACY,
        ),  # fmt: skip
        sensitivity="beta_large_lowers",
    ),
    *(
        Claim(
            "Table 3",
            f"RACER's {quantity} at β = {b:g}: "
            + paper_list(BETA_SENSITIVITY[b, c][k] for c in _BUDGETS)
            + (" %" if k == 0 else "")
            + " (C = 2 / 3 / 4)",
            registry.BETA,
            level(
                RUNS_CSV,
                quantity,
                tuple(({"beta": b, "budget": c}, BETA_SENSITIVITY[b, c][k]) for c in _BUDGETS),
                accuracy=k == 0,
            ),
        )
        for b in (0.0, PAPER_BETA, 0.01, 0.05)
        for k, quantity in enumerate(("accuracy", "cost"))
    ),
)
