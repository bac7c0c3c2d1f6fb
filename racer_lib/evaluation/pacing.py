"""A budget pacer judged against static thresholds: one set offline on validation pairs
(:func:`recalibrated_threshold`), the best in hindsight on a stream (:func:`hindsight_path`,
:func:`matched_decisions`), and the numeric check of dual descent's bound.

With the step ``eta0 / sqrt(T)``, dual descent on a price of cost
(:class:`racer_lib.routing.pacing.BudgetPacer`) has a budget violation and a regret against the
best static threshold in hindsight that grow like ``O(sqrt(T))`` on a stream of ``T`` i.i.d.
pairs (Balseiro, Lu & Mirrokni 2023), so both per pair shrink like ``T^(-1/2)``.
:func:`bound_rows` measures them on draws of a stream, :func:`bound_summary` averages them over
seeds, and :func:`bound_slopes` fits their log-log slopes against ``T``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from racer_lib.routing.pacing import BudgetPacer

__all__ = [
    "BoundCheck",
    "bound_rows",
    "bound_slopes",
    "bound_summary",
    "hindsight_path",
    "matched_decisions",
    "recalibrated_threshold",
]


@dataclass(frozen=True)
class BoundCheck:
    """The bound check's setting: the ``budget`` C, the stream ``lengths`` T, the step
    ``eta0 / sqrt(T)`` and the i.i.d. ``draws`` of a stream per length."""

    budget: float
    lengths: Sequence[int] = (100, 200, 400, 800, 1600, 3200)
    eta0: float = 1.0
    draws: int = 10


def hindsight_path(scores, costs, correct) -> tuple[np.ndarray, np.ndarray]:
    """Every static threshold on ``scores`` in hindsight: reasoning on the ``k`` pairs of
    highest score, ``k = 0 .. n``. Returns the total cost and the number correct of each
    (``costs`` and ``correct`` of shape ``(n, 2)``: instruct, reasoning)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    c, r = np.asarray(costs, dtype=np.float64)[order], np.asarray(correct)[order]
    total = c[:, 0].sum() + np.concatenate([[0.0], np.cumsum(c[:, 1] - c[:, 0])])
    right = r[:, 0].sum() + np.concatenate([[0.0], np.cumsum(r[:, 1] - r[:, 0])])
    return total, right


def recalibrated_threshold(p_valid, costs_valid, budget: float) -> float:
    """The threshold on a router's scores (``p_valid``: ``pi(1 | z)`` or its rule's scores,
    :meth:`racer_lib.routing.decision.DecisionRule.scores`) that a deployment would set
    offline: reasoning on the validation pairs of highest score, as many as keep their mean
    cost (``costs_valid``, shape ``(n, 2)``) within ``budget``; reason iff score > threshold."""
    p = np.asarray(p_valid, dtype=np.float64)
    order = np.argsort(-p, kind="stable")
    c = np.asarray(costs_valid, dtype=np.float64)[order]
    spend = c[:, 0].sum() + np.concatenate([[0.0], np.cumsum(c[:, 1] - c[:, 0])])
    k = int(np.flatnonzero(spend <= budget * len(p)).max(initial=0))
    return float(p[order][k]) if k < len(p) else -np.inf


def matched_decisions(p, costs, correct, spent: float) -> np.ndarray:
    """A static threshold's decisions at a realized total cost of at most ``spent``: reasoning
    on the most pairs of highest ``p`` that fit (:func:`hindsight_path`)."""
    total, _ = hindsight_path(p, costs, correct)
    k = int(np.flatnonzero(total <= spent + 1e-9).max(initial=0))
    decision = np.zeros(len(p), dtype=np.int64)
    decision[np.argsort(-np.asarray(p), kind="stable")[:k]] = 1
    return decision


def bound_rows(scores, costs, correct, threshold: float, check: BoundCheck, rng) -> list[dict]:
    """The pacing bound on one stream: for each length ``T`` of ``check.lengths``, the first
    ``T`` pairs of ``check.draws`` i.i.d. draws (``rng``) of the pairs (``scores`` under a
    rule whose ``threshold`` it is, ``costs``, ``correct``) paced with step ``eta0 /
    sqrt(T)``: the budget violation, the largest excess of the cumulative cost over ``C t``
    within the first ``T`` pairs (``max(0, max_t sum_{s <= t} c_s - C t)``), and the regret
    (pairs correct) against the best static threshold in hindsight within ``C T``, each also
    per pair (violation relative to C, regret in points), averaged over the draws."""
    scores, costs, correct = (np.asarray(a) for a in (scores, costs, correct))
    draws = rng.integers(0, len(scores), (check.draws, max(check.lengths)))
    rows = []
    for T in check.lengths:
        eta = check.eta0 / np.sqrt(T)
        found = []
        for i in draws[:, :T]:
            paced = BudgetPacer(check.budget, threshold=threshold, eta=eta).replay(
                scores[i], costs[i]
            )
            total, right = hindsight_path(scores[i], costs[i], correct[i])
            best = float(right[total <= check.budget * T + 1e-9].max(initial=right[0]))
            excess = paced["spent"] - check.budget * np.arange(1, T + 1)
            got = float(correct[i][np.arange(T), paced["decision"]].sum())
            found.append((max(0.0, float(excess.max())), best - got))
        violation, regret = np.mean(found, axis=0)
        rows.append(
            {
                "T": T,
                "eta": eta,
                "violation": violation,
                "regret": regret,
                "violation_per_pair": violation / (check.budget * T),
                "regret_per_pair": 100 * regret / T,
            }
        )
    return rows


def bound_summary(bound: pd.DataFrame) -> pd.DataFrame:
    """The bound check over seeds, per stream length ``T``: the step, the violation and
    regret per pair (mean, sd) and the seeds."""
    return bound.groupby("T", as_index=False).agg(
        eta=("eta", "first"),
        violation_per_pair_mean=("violation_per_pair", "mean"),
        violation_per_pair_sd=("violation_per_pair", "std"),
        regret_per_pair_mean=("regret_per_pair", "mean"),
        regret_per_pair_sd=("regret_per_pair", "std"),
        seeds=("seed", "nunique"),
    )


def bound_slopes(summary: pd.DataFrame) -> pd.DataFrame:
    """The log-log slope of each per-pair quantity of :func:`bound_summary` against ``T`` (a
    least-squares line through the lengths where its mean is positive; NaN with fewer than
    two) beside the bound's ``-1/2``: a slope at or below it is the bound's rate or faster."""
    rows = []
    for q in ("violation_per_pair", "regret_per_pair"):
        sub = summary[summary[f"{q}_mean"] > 0]
        slope = (
            np.polyfit(np.log(sub["T"]), np.log(sub[f"{q}_mean"]), 1)[0]
            if len(sub) >= 2
            else np.nan
        )
        rows.append({"quantity": q, "slope": slope, "bound": -0.5, "lengths": len(sub)})
    return pd.DataFrame(rows)
