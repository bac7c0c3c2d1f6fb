"""Chapter 05, the theory checked numerically (the paper's Theorems 3.1, 4.1 and 4.2): the
chapter's figures. The checks themselves are the method's own code, in
:mod:`racer_lib.routing.dro` (Theorem 3.1's exponential tilt) and :mod:`racer_lib.routing.theory`
(the tabular primal-dual of appendix A.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.rules import Bound, Claim, Identity
from racer_lib.paper import plots, registry
from racer_lib.paper.numbers import PAPER_BETA


def batch_gap_figure(gaps) -> plt.Figure:
    """Algorithm 1 against the exact worst case (:func:`racer_lib.routing.dro.batch_gap`): the gap
    against the temperature per batch size, for rewards and for costs, and the KL radius each
    temperature implies on cost batches and on all values."""
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.5))
    fig.subplots_adjust(wspace=0.4)
    for ax, kind in zip(axes[:2], ["reward", "cost"], strict=True):
        for b, sub in gaps[gaps["kind"] == kind].groupby("batch_size"):
            ax.plot(sub["tau"], sub["gap"], marker="o", label=f"batch {b}")
        ax.axhline(0, color="black", lw=0.8)
        ax.set(
            xscale="log",
            xlabel="temperature τ",
            title=f"{kind}: algorithm − exact",
            ylabel="gap (reward)" if kind == "reward" else "gap (cost units)",
        )
    axes[0].legend()
    for b, sub in gaps[gaps["kind"] == "cost"].groupby("batch_size"):
        axes[2].plot(sub["tau"], sub["batch_delta_mean"], marker="o", label=f"batch {b}")
    full = gaps[(gaps["kind"] == "cost")].drop_duplicates("tau")
    axes[2].plot(full["tau"], full["exact_delta"], color="black", ls="--", label="all pairs")
    axes[2].set(
        xscale="log",
        yscale="log",
        xlabel="temperature τ",
        ylabel="implied KL radius δ",
        title="cost: radius implied by τ",
    )
    axes[2].legend()
    return fig


def convergence_figure(convergence, instance: int = 0) -> plt.Figure:
    """Theorem 4.2 on one instance per ``beta`` (:func:`racer_lib.routing.theory.theorem42_checks`):
    the dual error and the policy KL against the iteration, each with its bound (dashed)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharex=True)
    betas = list(dict.fromkeys(convergence["beta"]))
    colors = dict(zip(betas, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    first = convergence[convergence["instance"] == instance]
    for beta, sub in first.groupby("beta"):
        axes[0].plot(sub["t"], sub["lambda_error"], color=colors[beta], label=f"β = {beta}")
        axes[0].plot(sub["t"], sub["bound_lambda"], color=colors[beta], ls="--", lw=1)
        floor = sub["policy_kl"].where(sub["policy_kl"] > 1e-15)  # below: rounding noise
        axes[1].plot(sub["t"], floor, color=colors[beta], label=f"β = {beta}")
        axes[1].plot(sub["t"], sub["bound_kl"], color=colors[beta], ls="--", lw=1)
    axes[0].set(
        yscale="log",
        xlabel="iteration t",
        ylabel="|λ_t − λ*|",
        ylim=(1e-16, None),
        title="dual error (solid) and bound (dashed)",
    )
    axes[1].set(
        yscale="log",
        xlabel="iteration t",
        ylabel="KL(π_t ‖ π*)",
        ylim=(1e-16, None),
        title="policy error and Theorem 4.2 (dashed)",
    )
    axes[0].legend()
    return fig


#: The gaps of Theorem 3.1's table shown in scientific notation (1.0e-08).
THM31_SCI = ("objective_rel_gap", "weights_max_gap", "tilted_form_max_gap")


def thm31_view(thm31: pd.DataFrame) -> pd.DataFrame:
    """Theorem 3.1's table (:func:`racer_lib.routing.dro.cvxpy_comparison`) for the page: the
    exact worst case :math:`\\inf_{KL(\\tilde\\rho\\|\\rho_n)\\le\\delta} E_{\\tilde\\rho}[f]` next
    to cvxpy's, its gaps in scientific notation, without the solver's τ, s and mean."""
    sci = thm31[list(THM31_SCI)].map(lambda v: "cvxpy stalled" if v != v else f"{v:.1e}")
    return thm31.drop(columns=["tau", "s", "mean"]).assign(**sci).rename(columns=plots.LABELS)


def thm41_view(thm41: pd.DataFrame) -> pd.DataFrame:
    """Theorem 4.1's checks (:func:`racer_lib.routing.theory.theorem41_checks`) per β: the worst
    concavity margin of L_β in π, the widest spread of the saddle points reached from different
    λ_0, and the largest gap between the closed-form policy step and a generic optimiser."""
    worst = {
        "min_concavity_margin": "min",
        "limit_spread": "max",
        "closed_form_vs_optimiser": "max",
    }
    return thm41.groupby("beta").agg(worst).map("{:.1e}".format).rename(columns=plots.LABELS)


def thm42_view(rates: pd.DataFrame) -> pd.DataFrame:
    """Theorem 4.2's rates (:func:`racer_lib.routing.theory.theorem42_checks`) per β: the bound's
    contraction q = M²K²/(M²K² + 2β²) and the one seen (means), the most iterations a run
    needed, the fewest the bound allows, and whether every run meets them."""
    summary = {
        "bound_rate_q": "mean",
        "observed_rate": "mean",
        "steps_observed": "max",
        "steps_bound": "min",
        "steps_within_bound": "all",
        "under_bound_lambda": "all",
        "under_bound_kl": "all",
    }
    return rates.groupby("beta").agg(summary).rename(columns=plots.LABELS)


def decay_view(decay: pd.DataFrame, instance: int = 0) -> pd.DataFrame:
    """One instance of :func:`racer_lib.routing.theory.decay_table` per β and iteration t: both
    errors of Theorem 4.2 and their bounds, in scientific notation."""
    shown = decay[decay["instance"] == instance].set_index(["beta", "t"]).drop(columns="instance")
    sci = shown.drop(columns="under_bound").map("{:.1e}".format)
    return shown.assign(**sci).rename(columns=plots.LABELS)


def paper_beta_table(rates: pd.DataFrame, beta: float) -> dict:
    """Theorem 4.2's contraction for the paper's entropy weight ``beta`` on the instances of
    ``rates`` (their M and K): q = M²K²/(M²K² + 2β²), 1 - q, and the iterations per factor e by
    which the bound shrinks, -1/log(q)."""
    mk = (rates["M"] * rates["K"]) ** 2
    one_minus_q = 2 * beta**2 / (mk + 2 * beta**2)
    return {
        "M": rates["M"],
        "K": rates["K"],
        "beta": beta,
        "q": 1 - one_minus_q,
        "one_minus_q": one_minus_q,
        "iterations_per_factor_e": -1 / np.log1p(-one_minus_q),
    }


#: The glued values of :func:`paper_beta_table` on the page: (name, column, aggregate).
PAPER_BETA_GLUES = (
    ("paper_beta", "beta", "max"),
    ("paper_gap", "one_minus_q", "max"),
    ("paper_steps", "iterations_per_factor_e", "min"),
)

#: Below this 1 - q the bound of Theorem 4.2 shrinks by a factor e only every thousand
#: iterations or more: near-vacuous for any iteration budget a check can spend.
NEAR_VACUOUS = 1e-3


def bound_by_beta(rates: pd.DataFrame, paper_beta: float) -> pd.DataFrame:
    """Theorem 4.2's contraction q = M²K²/(M²K² + 2β²) per β, the checked instances' (the β of
    ``rates``) beside the paper's entropy weight ``paper_beta`` on the same instances
    (:func:`paper_beta_table`): the range of 1 - q and of the iterations per factor e by which
    the bound shrinks, and whether the bound is informative on every instance (1 - q of at
    least :data:`NEAR_VACUOUS`), near-vacuous on every one, or mixed."""
    paper = pd.DataFrame(paper_beta_table(rates, paper_beta))
    both = pd.concat(
        [
            rates.assign(one_minus_q=1 - rates["bound_rate_q"], beta_of="checked instances"),
            paper.assign(beta_of="the paper's β"),
        ]
    )
    both["steps"] = -1 / np.log1p(-both["one_minus_q"])
    table = both.groupby(["beta_of", "beta"], sort=False).agg(
        lo=("one_minus_q", "min"), hi=("one_minus_q", "max"), few=("steps", "min"),
        most=("steps", "max"),
    )  # fmt: skip
    informative = np.where(table["lo"] >= NEAR_VACUOUS, "informative", "mixed")
    table["bound"] = np.where(table["hi"] < NEAR_VACUOUS, "near-vacuous", informative)
    table["1 − q"] = [f"{lo:.1e} to {hi:.1e}" for lo, hi in zip(table["lo"], table["hi"])]
    table["iterations per factor e"] = [
        f"{few:,.0f} to {most:,.0f}" for few, most in zip(table["few"], table["most"])
    ]
    return table[["1 − q", "iterations per factor e", "bound"]]


# The numbers the page's sentences state, as ``(name, csv, column, agg, where)`` for
# :meth:`racer_lib.book.chapter.Prose.value`.
Read = tuple[str, str, str, str, dict[str, Any]]
THM31_CSV, BATCH_GAP_CSV = "thm31_exact_vs_cvxpy.csv", "thm31_batch_gap.csv"
THM41_CSV, RATES_CSV = "thm41_checks.csv", "thm42_rates.csv"
PAPER_BETA_CSV = "thm42_paper_beta.csv"
#: Theorem 3.1: the largest gaps to cvxpy (objective, weights), the instances whose tilt lies
#: on the wrong side, and the instances.
THM31_READS: list[Read] = [
    ("obj_gap", THM31_CSV, "objective_rel_gap", "max", {}),
    ("weight_gap", THM31_CSV, "weights_max_gap", "max", {}),
    ("wrong_side", THM31_CSV, "s", "count", {"s_on_the_right_side": False}),
    ("instances", THM31_CSV, "s", "count", {}),
]
#: Theorem 4.1: the checks, the worst concavity margin, spread of limits and step error.
THM41_READS: list[Read] = [
    ("thm41_n", THM41_CSV, "beta", "count", {}),
    ("margin", THM41_CSV, "min_concavity_margin", "min", {}),
    ("spread", THM41_CSV, "limit_spread", "max", {}),
    ("step_gap", THM41_CSV, "closed_form_vs_optimiser", "max", {}),
]
#: Theorem 4.2: the runs, those that meet each bound, and the range of the steps and rates.
THM42_READS: list[Read] = [("runs", RATES_CSV, "beta", "count", {})]
THM42_READS += [
    (column, RATES_CSV, "beta", "count", {column: True})
    for column in ("under_bound_lambda", "under_bound_kl", "steps_within_bound")
]
THM42_READS += [
    (f"{column}_{agg}", RATES_CSV, column, agg, {})
    for column in ("steps_observed", "steps_bound", "bound_rate_q", "observed_rate")
    for agg in ("min", "max")
]


def batch_gap_reads(batch_sizes: Sequence[int], taus: Sequence[float]) -> list[Read]:
    """Algorithm 1's gap (:data:`BATCH_GAP_CSV`): the range of the batch sizes and of τ, then
    the mean reward and cost gap at the smallest and largest batch and the coldest and hottest
    τ."""
    reads = [
        (f"{name}_{end}", BATCH_GAP_CSV, column, agg, {})
        for name, column in (("batch", "batch_size"), ("tau", "tau"))
        for end, agg in (("lo", "min"), ("hi", "max"))
    ]
    ends = {
        "small": {"batch_size": min(batch_sizes)},
        "large": {"batch_size": max(batch_sizes)},
        "cold": {"tau": min(taus)},
        "hot": {"tau": max(taus)},
    }
    return reads + [
        (f"{kind}_{end}", BATCH_GAP_CSV, "gap", "mean", {"kind": kind, **where})
        for kind in ("reward", "cost")
        for end, where in ends.items()
    ]


#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Thm. 3.1",
        "the KL worst case has the closed (tilted) form: it equals the convex solver's optimum "
        "(relative gap < 1e-6)",
        registry.THEORY,
        Identity(Bound(THM31_CSV, ("objective_rel_gap",), agg="max", op="<", threshold=1e-6)),
    ),
    Claim(
        "Thm. 4.1",
        "the regularised Lagrangian is strictly concave in π (midpoint margin > 0)",
        registry.THEORY,
        Identity(Bound(THM41_CSV, ("min_concavity_margin",))),
    ),
    Claim(
        "Thm. 4.1",
        "its saddle point is unique: the dual iteration reaches one limit from every start "
        "(spread < 1e-6)",
        registry.THEORY,
        Identity(Bound(THM41_CSV, ("limit_spread",), agg="max", op="<", threshold=1e-6)),
    ),
    Claim(
        "Thm. 4.2",
        "the primal–dual iterates converge linearly: errors stay under the theorem's bounds "
        "(checked where the bound is informative, q <= 0.9; at the paper's β = "
        f"{PAPER_BETA:g} its 1 − q is about 4e-5, a near-vacuous bound)",
        registry.THEORY,
        Identity(
            Bound(RATES_CSV, ("under_bound_lambda", "under_bound_kl"), agg="all"),
            context=Bound(PAPER_BETA_CSV, ("one_minus_q",), agg="max", op="<", threshold=1),
            context_label=f"at the paper's β = {PAPER_BETA:g} (near-vacuous): ",
        ),
    ),
)
