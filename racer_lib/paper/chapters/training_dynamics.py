"""Chapter 06, training dynamics (the paper's Fig. 5, appendix C.1): the checkpoint kept per
budget and seed, the reading of the training curves, the caption's "reward increases
monotonically" checked per budget (:func:`training_findings`), and the curves: the training
reward, the
realized training cost and the multiplier λ after Algorithm 1's projected dual step
λ <- [λ + η(E_ρ̄[c] - C - βλ)]_+ , per epoch.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from racer_lib.paper.claims import add_status
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.routing import train

#: "Reward increases monotonically" (Fig. 5's caption) holds at a budget when the Spearman rank
#: correlation of the training reward (mean over seeds) with the epoch is at least this.
MONOTONE_RHO = 0.9


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


def training_findings(history: pd.DataFrame, provenance: str) -> pd.DataFrame:
    """Fig. 5's caption, "reward increases monotonically", checked per budget of ``history``:
    the Spearman rank correlation of the training reward (mean over seeds) with the epoch is at
    least :data:`MONOTONE_RHO`, beside the share of epoch-to-epoch steps that do not decrease
    it and its first and last value (``finding``, ``budget``, ``observed``, ``holds``,
    ``status``, ``basis``). Emerges from training: the simulator is given no router's curve."""
    rows = []
    for budget, sub in history.groupby("budget"):
        curve = sub.groupby("epoch")["train_reward"].mean()
        rho = pd.Series(curve.index, dtype=float).corr(
            pd.Series(curve.to_numpy()), method="spearman"
        )
        steps = curve.diff().dropna()
        rows.append(
            {
                "finding": f"reward increases monotonically: B = {budget:g}",
                "budget": budget,
                "observed": f"Spearman ρ(epoch, reward) = {rho:+.2f}; "
                f"{(steps >= 0).mean():.0%} of {len(steps)} steps non-decreasing; "
                f"reward {curve.iloc[0]:.4f} at epoch {curve.index[0]} to {curve.iloc[-1]:.4f}",
                "holds": bool(rho >= MONOTONE_RHO),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
    return add_status(rows, provenance)


#: The panels of the training-dynamics figure (appendix C.1): history column and title.
TRAINING_PANELS = (
    ("train_reward", "training reward (exp. accuracy)"),
    ("train_cost", "training cost (cost units)"),
    ("lambda", "dual variable λ"),
)


def training_curves(history) -> plt.Figure:
    """Reward, cost and λ per epoch, one colour per budget: the mean over seeds with their range
    shaded, and each budget dashed on the cost panel (appendix C.1's figure)."""
    fig, axes = plt.subplots(1, len(TRAINING_PANELS), figsize=(9.6, 3.5))
    fig.subplots_adjust(wspace=0.35)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    columns = [c for c, _ in TRAINING_PANELS]
    for color, (budget, sub) in zip(colors, history.groupby("budget")):
        band = sub.groupby("epoch")[columns].agg(["mean", "min", "max"])
        for ax, col in zip(axes, columns):
            ax.plot(band.index, band[(col, "mean")], color=color, label=f"B = {budget:g}")
            ax.fill_between(
                band.index, band[(col, "min")], band[(col, "max")], color=color, alpha=0.2, lw=0
            )
        axes[columns.index("train_cost")].axhline(budget, color=color, ls="--", lw=1)
    for ax, (_, label) in zip(axes, TRAINING_PANELS):
        ax.set(xlabel="epoch", title=label)
    axes[0].legend()
    return fig
