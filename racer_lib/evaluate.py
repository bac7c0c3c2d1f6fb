"""Evaluation of judge records: accuracy of each mode, cost ratios and agreement patterns.

The quantities of the paper's §2 (Fig. 2):

* ``acc_a = mean_z r(z, a, l)`` for a in {instruct, reasoning}, in percent;
* ``delta_accuracy = Acc(M_R) - Acc(M_noR)`` (points);
* ``cost_ratio = sum_z tokens_1(z) / sum_z tokens_0(z)`` — the set's All-Reasoning cost in the
  unit of its own All-Instruct tokens (:func:`racer_lib.records.realized_cost_ratio` with p = 1);
* the four agreement cells of the two modes: both right, only reasoning right, only instruct
  right, both wrong (pair counts), and the oracle accuracy that picks the right mode whenever
  one exists.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .records import MODES, correct_matrix, mode_columns, realized_cost_ratio, token_matrix

AGREEMENT_CELLS = ("both_right", "only_reasoning", "only_instruct", "both_wrong")


def _summary(group: pd.DataFrame) -> dict[str, float]:
    r = correct_matrix(group).astype(bool)
    acc = 100 * r.mean(axis=0)
    out = {"n": len(group), "acc_instruct": acc[0], "acc_reasoning": acc[1],
           "delta_accuracy": acc[1] - acc[0],
           "cost_ratio": realized_cost_ratio(group, 1.0),
           "both_right": int((r[:, 0] & r[:, 1]).sum()),
           "only_reasoning": int((~r[:, 0] & r[:, 1]).sum()),
           "only_instruct": int((r[:, 0] & ~r[:, 1]).sum()),
           "both_wrong": int((~r[:, 0] & ~r[:, 1]).sum()),
           "oracle_accuracy": 100 * (r[:, 0] | r[:, 1]).mean()}
    for mode in MODES:
        out[f"unparseable_{mode}"] = int((group[mode_columns(mode)["verdict"]]
                                          == "unparseable").sum())
    return out


def mode_summary(records: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per group of ``by`` (or one row in all): accuracies, cost ratio, agreement."""
    by = list(by)
    if not by:
        return pd.DataFrame([_summary(records)])
    rows = [{**dict(zip(by, key if isinstance(key, tuple) else (key,))), **_summary(g)}
            for key, g in records.groupby(by, sort=False)]
    return pd.DataFrame(rows)


def agreement_shares(summary: pd.DataFrame) -> pd.DataFrame:
    """The agreement cells of a :func:`mode_summary` table as shares of each group (sum 1)."""
    out = summary.copy()
    total = out[list(AGREEMENT_CELLS)].sum(axis=1)
    for c in AGREEMENT_CELLS:
        out[c] = out[c] / total
    return out


def headroom(summary: pd.DataFrame) -> pd.Series:
    """Points an oracle router gains over the better single mode (the room when modes disagree)."""
    return summary["oracle_accuracy"] - np.maximum(summary["acc_instruct"],
                                                   summary["acc_reasoning"])


# ----------------------------------------------------------------------------------------
# Routing policies on a record set (§5 of the paper): accuracy, realized cost, baselines


def expected(p_reasoning, values):
    """``E_{a ~ pi(.|z)}[v(z, a)]`` averaged over pairs: the objective and the constraint of
    Eq. (1) for a policy, with ``values`` the reward ``r(z, a, l)`` or the cost ``c(z, a)``.

    ``values`` has shape ``(n, 2)`` (instruct, reasoning); ``p_reasoning`` is ``pi(1|z)``, shape
    ``(n,)`` or ``(P, n)`` for ``P`` policies at once, which gives ``P`` means. NumPy arrays and
    torch tensors both work, so the trainer's validation pass and the chapters share this one
    definition.
    """
    return ((1 - p_reasoning) * values[:, 0] + p_reasoning * values[:, 1]).mean(-1)


def policy_point(records: pd.DataFrame, p_reasoning) -> dict[str, float]:
    """Expected accuracy (%), realized cost ratio and reasoning rate of a policy on a set.

    ``p_reasoning`` is ``pi(1|z)`` per pair (or 0/1 decisions). Expectations are taken under
    the policy rather than sampling decisions (:func:`expected`); the cost is against the set's
    own All-Instruct tokens (:func:`racer_lib.records.realized_cost_ratio`).
    """
    p = np.broadcast_to(np.asarray(p_reasoning, dtype=np.float64), (len(records),))
    return {"accuracy": 100 * float(expected(p, correct_matrix(records))),
            "cost": realized_cost_ratio(records, p), "reasoning_rate": float(p.mean())}


def split_point(r, c, p_reasoning) -> dict[str, float]:
    """Expected accuracy (%), cost and reasoning rate of a policy on a training-unit split:
    ``r`` and ``c`` of shape ``(n, 2)`` (e.g. a :class:`racer_lib.train.Split`'s, as arrays),
    the cost in the training unit rather than the set's own (:func:`expected`)."""
    p = np.asarray(p_reasoning, dtype=np.float64)
    return {"accuracy": 100 * float(expected(p, np.asarray(r))),
            "cost": float(expected(p, np.asarray(c))), "reasoning_rate": float(p.mean())}


def endpoints(records: pd.DataFrame) -> dict[str, dict[str, float]]:
    """All-Instruct and All-Reasoning on a set."""
    return {"All-Instruct": policy_point(records, 0.0),
            "All-Reasoning": policy_point(records, 1.0)}


def random_point(records: pd.DataFrame, rate: float) -> dict[str, float]:
    """Random routing: reasoning with probability ``rate`` on every pair, independently."""
    return policy_point(records, rate)


def oracle_frontier(records: pd.DataFrame) -> pd.DataFrame:
    """The best accuracy reachable at each cost with hindsight (both outcomes known).

    Start from the cheapest policy that is never worse than instruct (reasoning where it is
    both right-or-tied and cheaper); then switch to reasoning, cheapest extra tokens first,
    the pairs only the reasoning mode gets right. Columns: ``cost`` (realized cost ratio) and
    ``accuracy`` (%).
    """
    r = correct_matrix(records).astype(bool)
    t = token_matrix(records)
    free = (r[:, 1] >= r[:, 0]) & (t[:, 1] <= t[:, 0])
    p = free.astype(float)
    gain = ~r[:, 0] & r[:, 1] & ~free
    order = np.flatnonzero(gain)[np.argsort((t[:, 1] - t[:, 0])[gain], kind="stable")]
    base_tokens = np.where(p > 0, t[:, 1], t[:, 0]).sum()
    base_correct = np.where(p > 0, r[:, 1], r[:, 0]).sum()
    extra = np.concatenate([[0.0], np.cumsum(t[order, 1] - t[order, 0])])
    correct = base_correct + np.arange(len(order) + 1)
    return pd.DataFrame({"cost": (base_tokens + extra) / t[:, 0].sum(),
                         "accuracy": 100 * correct / len(records)})


def area_above_random(points: pd.DataFrame, records: pd.DataFrame) -> float:
    """Area (accuracy points x cost ratio) between a policy's curve and Random's line.

    ``points`` has one row per budget with ``cost`` and ``accuracy`` of the policy on
    ``records``; Random at the same cost lies on the chord between the two endpoints. The
    trapezoid rule integrates the difference over the policy's cost range.
    """
    ends = endpoints(records)
    (c0, a0), (c1, a1) = [(ends[k]["cost"], ends[k]["accuracy"])
                          for k in ("All-Instruct", "All-Reasoning")]
    pts = points.sort_values("cost")
    chord = a0 + (a1 - a0) * (pts["cost"].to_numpy() - c0) / (c1 - c0)
    return float(np.trapezoid(pts["accuracy"].to_numpy() - chord, pts["cost"].to_numpy()))


def over_seeds(table: pd.DataFrame, by: Sequence[str], budget_col: str = "budget"
               ) -> pd.DataFrame:
    """Mean and sd over seeds of accuracy and cost, and the budget violation rate."""
    g = table.assign(violated=table["cost"] > table[budget_col]).groupby(list(by), sort=True,
                                                                      dropna=False)
    out = g.agg(accuracy_mean=("accuracy", "mean"), accuracy_sd=("accuracy", "std"),
                cost_mean=("cost", "mean"), cost_sd=("cost", "std"),
                reasoning_rate=("reasoning_rate", "mean"),
                violation_rate=("violated", "mean"), seeds=("accuracy", "size"))
    return out.reset_index()


def random_at_cost(records: pd.DataFrame, cost: float) -> dict[str, float]:
    """Random routing whose expected realized cost equals ``cost`` (clipped to the endpoints).

    Random's cost is linear in its rate ``q``: ``cost(q) = 1 + q (ratio - 1)`` on the set's own
    unit, so ``q = (cost - 1) / (ratio - 1)``.
    """
    ratio = realized_cost_ratio(records, 1.0)
    rate = 0.0 if ratio == 1.0 else float(np.clip((cost - 1.0) / (ratio - 1.0), 0.0, 1.0))
    return policy_point(records, rate)


# ----------------------------------------------------------------------------------------
# RouteLLM's summaries of an accuracy-cost curve (Ong et al., 2025, §5.1)


def routing_metrics(points: pd.DataFrame, records: pd.DataFrame,
                    pgr_target: float = 0.5) -> dict[str, float]:
    """AUC, APGR and CPT of one method's operating points on a set.

    ``points`` has one row per operating point (e.g. per budget) with ``reasoning_rate``,
    ``accuracy`` (%) and ``cost`` (realized cost ratio) on ``records``. The curve runs through
    the two endpoints, All-Instruct (rate 0) and All-Reasoning (rate 1), and is linear between
    points:

    * ``auc``: area under accuracy against cost, divided by the cost span of the endpoints,
      i.e. the curve's mean accuracy (%) over ``[1, ratio]``; Random scores the midpoint of the
      endpoints' accuracies;
    * ``apgr``: area under the *performance gap recovered*,
      ``PGR = (acc - acc_instruct) / (acc_reasoning - acc_instruct)``, against the share of
      calls to the reasoning mode (Random: 0.5);
    * ``cpt``: the smallest share of reasoning calls at which the curve reaches
      ``PGR = pgr_target`` (CPT(50%) by default); NaN if the gap is zero.

    With several points at one rate (e.g. seeds) their mean is used.
    """
    if not 0 < pgr_target <= 1:
        raise ValueError(f"pgr_target must lie in (0, 1] (got {pgr_target})")
    ends = endpoints(records)
    lo, hi = ends["All-Instruct"], ends["All-Reasoning"]
    pts = points[["reasoning_rate", "accuracy", "cost"]].astype(float)
    pts = pd.concat([pd.DataFrame([{k: lo[k] for k in pts.columns}]), pts,
                     pd.DataFrame([{k: hi[k] for k in pts.columns}])], ignore_index=True)
    by_cost = pts.groupby("cost", sort=True)["accuracy"].mean()
    span = hi["cost"] - lo["cost"]
    auc = (float(np.trapezoid(by_cost.to_numpy(), by_cost.index.to_numpy())) / span
           if span > 0 else float(lo["accuracy"]))
    by_rate = pts.groupby("reasoning_rate", sort=True)["accuracy"].mean()
    gap = hi["accuracy"] - lo["accuracy"]
    if gap == 0:
        return {"auc": auc, "apgr": float("nan"), "cpt": float("nan")}
    rate, pgr = by_rate.index.to_numpy(), (by_rate.to_numpy() - lo["accuracy"]) / gap
    apgr = float(np.trapezoid(pgr, rate))
    reached = np.flatnonzero(pgr >= pgr_target)
    k = int(reached[0])  # the last point (All-Reasoning, PGR 1) always reaches it
    if k == 0:
        cpt = float(rate[0])
    else:  # linear interpolation on the segment where the curve first crosses the target
        r0, r1, g0, g1 = rate[k - 1], rate[k], pgr[k - 1], pgr[k]
        cpt = float(r0 + (pgr_target - g0) * (r1 - r0) / (g1 - g0))
    return {"auc": auc, "apgr": apgr, "cpt": cpt}
