"""Chapter 06, training dynamics (the paper's Fig. 5, appendix C.1): the checkpoint kept per
budget and replicate seed, the reading of the training curves, the caption's "reward increases
monotonically" decided over the replicate seeds at every budget (:func:`training_findings`: a
rising trend and no dip larger than the accuracy SESOI), and the curves: the training reward,
the realized training cost and the multiplier λ after Algorithm 1's projected dual step
λ <- [λ + η(E_ρ̄[c] - C - βλ)]_+ , per epoch, each with its 95 % t-interval over the seeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.families import PER_SEED, Family, Member, Test, from_rows
from racer_lib.claims.rules import Claim, Difference, Equivalence, Finding
from racer_lib.evaluation import intervals, verdicts
from racer_lib.paper import effects, experiments, registry
from racer_lib.paper.claims import VERDICT_COLUMNS, add_status
from racer_lib.paper.effects import LAMBDA, TRAINING_COST
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.paper.numbers import TRAINING_CURVE_BUDGETS
from racer_lib.records.sets import judge_set
from racer_lib.routing import train

#: "Reward increases monotonically" (Fig. 5's caption) at a budget: the Spearman rank correlation
#: of a run's training reward with the epoch exceeds this, on average over the replicate seeds
#: (a one-sided t-test; fixed before any run).
MONOTONE_RHO = 0.9
#: ... and no dip: a run's largest drop of the training reward below its best earlier epoch
#: (the run's drawdown) stays under the accuracy SESOI, as a share (the paper's smallest
#: accuracy difference between routers, :data:`racer_lib.paper.effects.ROUTER_ACCURACY`), on
#: average over the seeds. A rank correlation alone read a curve that visibly dips as
#: monotone (issue 42: Fig. 6.1 at B = 2, mean ρ 0.94, a 2.4-point dip).
MONOTONE_DIP = effects.ROUTER_ACCURACY.sesoi / 100
#: The finding's text, and its key (column ``key``; the chapter's claim reads it).
MONOTONE_FINDING = "reward increases monotonically over the epochs"
MONOTONE_KEY = "reward_monotone"
#: The CSVs the chapter writes: the training history (per epoch) and its findings.
HISTORY_CSV, FINDINGS_CSV = "training_history.csv", "training_findings.csv"


def train_replicates(
    judge: str,
    seeds: Sequence[int],
    budgets: Sequence[float],
    settings: train.TrainSettings,
    source: Mapping[str, Any],
    **common: Any,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, experiments.Fit]:
    """Every budget trained on each replicate seed of ``seeds``: the training mixture of
    ``judge`` drawn anew with the seed (:func:`racer_lib.records.sets.judge_set` with
    ``source``: ``records_dir``, ``dim``, ``scale``, ``simulator``), the budgets trained in one
    pass with policies of that seed (``common``: more :class:`~racer_lib.routing.train.PolicyConfig`
    fields). Returns the histories (without the batch's ``policy`` index), the selected
    checkpoints (:func:`selected_checkpoints`), and the last replicate's records and fit."""
    histories, selected = [], []
    for s in seeds:
        records, embeddings = judge_set(judge, "training_mix", seed=s, **source)
        fit = experiments.fit(
            records, embeddings, experiments.grid(budgets, [s], **common), settings
        )
        histories.append(fit.result.history.drop(columns="policy"))
        selected.append(selected_checkpoints(fit.result))
    return (
        pd.concat(histories, ignore_index=True),
        pd.concat(selected, ignore_index=True),
        records,
        fit,
    )


def selected_checkpoints(result: train.TrainResult) -> pd.DataFrame:
    """Each policy's best valid checkpoint (appendix B.3): its budget, seed, epoch, and the
    validation accuracy and cost at that epoch, from the training history."""
    configs = result.configs
    selected = pd.DataFrame(
        {
            "budget": [c.budget for c in configs],
            "seed": [c.seed for c in configs],
            "best_epoch": result.best_epoch,
        }
    )
    at = result.history[["budget", "seed", "epoch", "valid_accuracy", "valid_cost"]]
    return selected.merge(
        at, left_on=["budget", "seed", "best_epoch"], right_on=["budget", "seed", "epoch"]
    ).drop(columns="epoch")


def training_summary(history: pd.DataFrame) -> pd.DataFrame:
    """Per budget, the last epoch's multiplier, training cost and reward (means over seeds),
    the largest multiplier of any epoch, and how far the final training cost lies from the
    budget (appendix C.1's reading of the curves)."""
    last = (
        history[history["epoch"] == history["epoch"].max()]
        .groupby("budget")
        .agg(
            final_lambda=("lambda", "mean"),
            final_train_cost=("train_cost", "mean"),
            final_train_reward=("train_reward", "mean"),
        )
    )
    peak = history.groupby("budget")["lambda"].max().rename("max_lambda_any_epoch")
    summary = last.join(peak).reset_index()
    summary["final_cost_minus_budget"] = summary["final_train_cost"] - summary["budget"]
    return summary


def monotone_rhos(history: pd.DataFrame) -> pd.DataFrame:
    """Per budget and replicate seed of ``history``: the Spearman rank correlation ``rho`` of
    the epoch's training reward (the mean of the seed's rows at that epoch) with the epoch, the
    share of epoch-to-epoch steps that do not lower it, its largest drop below its best earlier
    epoch (``drop``) and its first and last value."""
    rows = []
    for (budget, seed), sub in history.groupby(["budget", "seed"], sort=True):
        curve = sub.groupby("epoch")["train_reward"].mean().sort_index()
        rho = pd.Series(curve.index, dtype=float).corr(
            pd.Series(curve.to_numpy()), method="spearman"
        )
        steps = curve.diff().dropna()
        rows.append(
            {
                "budget": budget,
                "seed": seed,
                "rho": rho,
                "rising_steps": float((steps >= 0).mean()) if len(steps) else np.nan,
                "drop": float((curve.cummax() - curve).max()),
                "first_reward": float(curve.iloc[0]),
                "last_reward": float(curve.iloc[-1]),
            }
        )
    return pd.DataFrame(rows)


def monotone_family(history: pd.DataFrame) -> Family:
    """Fig. 5's "reward increases monotonically" as a family over the budgets of ``history``,
    two members each, decided over the replicate seeds of :func:`monotone_rhos`: the mean
    Spearman correlation above :data:`MONOTONE_RHO` (``B = 2``; its power stated at a
    monotone curve, ρ = 1) and the mean largest drop below :data:`MONOTONE_DIP` (``B = 2
    dip``; power at no drop), each a one-sided test
    (:func:`racer_lib.evaluation.verdicts.directional`), every member holding."""
    members: tuple[Member, ...] = ()
    for budget, sub in monotone_rhos(history).groupby("budget", sort=True):
        members += from_rows("", {f"B = {budget:g}": sub["rho"]}, Test(1, MONOTONE_RHO, expected=1))
        members += from_rows(
            "", {f"B = {budget:g} dip": sub["drop"]}, Test(-1, MONOTONE_DIP, expected=0)
        )
    return Family(members)


def monotone_members(history: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, verdicts.Verdict]]:
    """The members of :func:`monotone_family`, per budget of ``history``. Returns the page's
    table (``budget``, ``rising_steps``: the mean share of non-decreasing steps, the ρ
    verdict's columns, its ``effect`` the mean ρ, then ``drop`` and ``drop_hi``, the mean
    largest drop and its upper bound, and ``drop_decision``) and the members' verdicts by
    name."""
    rhos = monotone_rhos(history)
    members = monotone_family(history).verdicts().get("", {})
    table = []
    for budget, sub in rhos.groupby("budget", sort=True):
        verdict, dip = members[f"B = {budget:g}"], members[f"B = {budget:g} dip"]
        table.append(
            {
                "budget": budget,
                "rising_steps": sub["rising_steps"].mean(),
                **verdict.columns(),
                "drop": dip.effect,
                "drop_hi": dip.hi,
                "drop_decision": dip.decision,
            }
        )
    return pd.DataFrame(table), members


def training_findings(history: pd.DataFrame, provenance: str) -> pd.DataFrame:
    """Fig. 5's caption, "reward increases monotonically over the epochs", as one finding
    decided by the book's protocol: every budget's rise and dip members
    (:func:`monotone_members`), Holm over them (:func:`racer_lib.evaluation.verdicts.every`).
    Columns ``finding``, ``observed`` (each budget's mean ρ and largest drop), ``interval``
    (the weakest member's estimate and interval, as text), the verdict's, ``status`` and
    ``basis``; it emerges from training (the simulator is given no router's curve)."""
    table, members = monotone_members(history)
    family = monotone_family(history)
    verdict = family.join({"": members})
    tests = f"one-sided t and bootstrap-t (ρ > {MONOTONE_RHO:g}; largest drop < {MONOTONE_DIP:g})"
    verdict = replace(verdict, test=verdict.test.split(": ", 1)[0] + ": " + tests)
    observed = "; ".join(
        f"B = {b:g}: mean Spearman ρ(epoch, reward) {r:+.3f}, {s:.0%} of steps non-decreasing, "
        f"largest drop {d:.2g}"
        for b, r, s, d in zip(
            table["budget"], table["effect"], table["rising_steps"], table["drop"], strict=True
        )
    )
    claim = f"mean ρ > {MONOTONE_RHO:g} and mean largest drop < {MONOTONE_DIP:g} at every budget"
    row = {
        "finding": MONOTONE_FINDING,
        "key": MONOTONE_KEY,
        "observed": f"{observed} (claim: {claim})",
        "interval": verdict.interval_text(digits=3),
        **{k: v for k, v in verdict.columns().items() if k in VERDICT_COLUMNS},
        "basis": BASIS_LEARNED,
        PER_SEED: family.to_json(),
    }
    return add_status([row], provenance, registry.DYNAMICS, FINDINGS_CSV)


#: The panels of the training-dynamics figure (appendix C.1): history column and title.
TRAINING_PANELS = (
    ("train_reward", "training reward (exp. accuracy)"),
    ("train_cost", "training cost (cost units)"),
    ("lambda", "dual variable λ"),
)


def training_curves(history) -> plt.Figure:
    """Reward, cost and λ per epoch, one colour per budget: the mean over seeds with its 95 %
    t-interval over the seeds shaded (:func:`racer_lib.evaluation.intervals.t_half_width`, the
    interval the chapter's claims are decided on), and each budget dashed on the cost panel
    (appendix C.1's figure)."""
    fig, axes = plt.subplots(1, len(TRAINING_PANELS), figsize=(9.6, 3.5))
    fig.subplots_adjust(wspace=0.35)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    columns = [c for c, _ in TRAINING_PANELS]
    for color, (budget, sub) in zip(colors, history.groupby("budget")):
        per_seed = sub.groupby(["epoch", "seed"])[columns].mean()  # a seed's rows: one run
        band = per_seed.groupby("epoch").agg(["mean", "std", "count"])
        for ax, col in zip(axes, columns):
            mean = band[(col, "mean")]
            half = intervals.t_half_width(band[(col, "std")], band[(col, "count")])
            ax.plot(band.index, mean, color=color, label=f"B = {budget:g}")
            ax.fill_between(band.index, mean - half, mean + half, color=color, alpha=0.2, lw=0)
        axes[columns.index("train_cost")].axhline(budget, color=color, ls="--", lw=1)
    for ax, (_, label) in zip(axes, TRAINING_PANELS):
        ax.set(xlabel="epoch", title=label)
    axes[0].legend()
    return fig


_B0, _B1 = TRAINING_CURVE_BUDGETS[0], TRAINING_CURVE_BUDGETS[-1]
#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 5",
        f"λ grows under the tight budget B = {_B0:g} and collapses towards zero at B = {_B1:g} "
        "(last epoch, paired on seed)",
        registry.DYNAMICS,
        Difference(
            HISTORY_CSV,
            "lambda",
            {"budget": _B0},
            {"budget": _B1},
            unit="",
            final="epoch",
            effect=LAMBDA,
        ),  # fmt: skip
    ),
    Claim(
        "Fig. 5",
        f"the training cost is driven to the budget: final cost within ±10 % of B = {_B0:g}",
        registry.DYNAMICS,
        Equivalence(
            HISTORY_CSV,
            "train_cost",
            second_column="budget",
            relative=True,
            where={"budget": _B0},
            final="epoch",
            unit=" (cost / B - 1)",
            effect=TRAINING_COST,
        ),
    ),
    Claim(
        "Fig. 5",
        "the training reward increases monotonically over the epochs",
        registry.DYNAMICS,
        Finding(MONOTONE_KEY),
    ),
)


#: The words and numbers the page's sentences state, as ``(name, csv, column, agg, where)`` for
#: :meth:`racer_lib.book.chapter.Prose.glue_reads`: the monotone finding's words, the first
#: epoch's training cost over budgets and seeds, and the ranges over the budgets of the final
#: and largest multiplier and of the final cost's distance from the budget.
PROSE_READS = [
    (f"monotone_{column}", FINDINGS_CSV, column, "text", {})
    for column in ("status", "decision", "note", "interval")
]
PROSE_READS += [
    (f"first_cost_{agg}", HISTORY_CSV, "train_cost", agg, {"epoch": 1})
    for agg in ("mean", "min", "max")
]
PROSE_READS += [
    (f"{column}_{agg}", "training_summary.csv", column, agg, {})
    for column in ("final_lambda", "max_lambda_any_epoch", "final_cost_minus_budget")
    for agg in ("min", "max")
]
