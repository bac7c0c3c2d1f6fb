"""Evaluation of judge records: accuracy of each mode, cost ratios and agreement patterns.

The quantities of the paper's §2 (Fig. 2):

* ``acc_a = mean_z r(z, a, l)`` for a in {instruct, reasoning}, in percent;
* ``delta_accuracy = Acc(M_R) - Acc(M_noR)`` (points);
* ``cost_ratio = sum_z tokens_1(z) / sum_z tokens_0(z)`` — the set's All-Reasoning cost in the
  unit of its own All-Instruct tokens (:func:`racer_lib.records.schema.realized_cost_ratio` with p
  = 1);
* the four agreement cells of the two modes: both right, only reasoning right, only instruct
  right, both wrong (pair counts), and the oracle accuracy that picks the right mode whenever
  one exists.

And the Random baselines the routing chapters compare against: Random at a rate
(:func:`random_point`), at a matched expected cost (:func:`random_at_cost`, Table 7) and the
area between a router's curve and Random's chord (:func:`area_above_random`, Fig. 4).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from racer_lib.records.schema import (
    MODES,
    CostUnit,
    correct_matrix,
    mode_columns,
    realized_cost_ratio,
    token_matrix,
)
from racer_lib.routing.policy import expected  # one definition, the trainer's

AGREEMENT_CELLS = ("both_right", "only_reasoning", "only_instruct", "both_wrong")


def agreement_shares(summary: pd.DataFrame) -> pd.DataFrame:
    """The agreement cells of a :func:`mode_summary` table as shares of each group (sum 1)."""
    out = summary.copy()
    total = out[list(AGREEMENT_CELLS)].sum(axis=1)
    for c in AGREEMENT_CELLS:
        out[c] = out[c] / total
    return out


def headroom(summary: pd.DataFrame) -> pd.Series:
    """Points an oracle router gains over the better single mode (the room when modes disagree)."""
    return summary["oracle_accuracy"] - np.maximum(
        summary["acc_instruct"], summary["acc_reasoning"]
    )


# ----------------------------------------------------------------------------------------
# Routing policies on a record set (§5 of the paper): accuracy, realized cost, baselines


def policy_point(
    records: pd.DataFrame, p_reasoning, unit: CostUnit | None = None
) -> dict[str, float]:
    """Expected accuracy (%), realized cost ratio and reasoning rate of a policy on a set.

    ``p_reasoning`` is ``pi(1|z)`` per pair (or 0/1 decisions). Expectations are taken under
    the policy rather than sampling decisions (:func:`expected`); the cost is against the set's
    own All-Instruct tokens (:func:`racer_lib.records.schema.realized_cost_ratio`).

    With a training cost ``unit`` (:class:`racer_lib.records.schema.CostUnit`: a
    :class:`racer_lib.routing.train.Split`'s ``unit``, or ``CostUnit.from_records`` of the train
    split) the point also holds ``train_cost``, after ``cost``: the expected cost of Eq. (1)'s
    constraint, ``E_{a ~ pi}[c(z, a)]`` with ``c = tokens_a / tokens_per_unit``, the unit the
    budget ``C`` is in. The two costs differ when the set's instruct answers are longer or
    shorter than the training set's (a shift): All-Instruct costs 1.0 in the set's own unit
    but ``mean tokens_0 / tokens_per_unit`` in the training unit.
    """
    p = np.broadcast_to(np.asarray(p_reasoning, dtype=np.float64), (len(records),))
    point = {
        "accuracy": 100 * float(expected(p, correct_matrix(records))),
        "cost": realized_cost_ratio(records, p),
    }
    if unit is not None:
        point["train_cost"] = float(expected(p, unit.cost(records)))
    point["reasoning_rate"] = float(p.mean())
    return point


def split_point(r, c, p_reasoning) -> dict[str, float]:
    """Expected accuracy (%), cost and reasoning rate of a policy on a training-unit split:
    ``r`` and ``c`` of shape ``(n, 2)`` (e.g. a :class:`racer_lib.routing.train.Split`'s, as
    arrays), the cost in the training unit rather than the set's own (:func:`expected`)."""
    p = np.asarray(p_reasoning, dtype=np.float64)
    return {
        "accuracy": 100 * float(expected(p, np.asarray(r))),
        "cost": float(expected(p, np.asarray(c))),
        "reasoning_rate": float(p.mean()),
    }


def endpoints(records: pd.DataFrame, unit: CostUnit | None = None) -> dict[str, dict[str, float]]:
    """All-Instruct and All-Reasoning on a set (with ``unit``: also their ``train_cost``,
    :func:`policy_point`)."""
    return {
        "All-Instruct": policy_point(records, 0.0, unit),
        "All-Reasoning": policy_point(records, 1.0, unit),
    }


def random_point(records: pd.DataFrame, rate: float, unit: CostUnit | None = None) -> dict:
    """Random routing: reasoning with probability ``rate`` on every pair, independently (with
    ``unit``: also its ``train_cost``, :func:`policy_point`)."""
    return policy_point(records, rate, unit)


def random_at_cost(records: pd.DataFrame, cost: float) -> dict[str, float]:
    """Random routing whose expected realized cost equals ``cost`` (clipped to the endpoints).

    Random's cost is linear in its rate ``q``: ``cost(q) = 1 + q (ratio - 1)`` on the set's own
    unit, so ``q = (cost - 1) / (ratio - 1)``.
    """
    ratio = realized_cost_ratio(records, 1.0)
    rate = 0.0 if ratio == 1.0 else float(np.clip((cost - 1.0) / (ratio - 1.0), 0.0, 1.0))
    return policy_point(records, rate)


def area_above_random(points: pd.DataFrame, records: pd.DataFrame) -> float:
    """Area (accuracy points x cost ratio) between a policy's curve and Random's line.

    ``points`` has one row per budget with ``cost`` and ``accuracy`` of the policy on
    ``records``; Random at the same cost lies on the chord between the two endpoints. The
    trapezoid rule integrates the difference over the policy's cost range.
    """
    ends = endpoints(records)
    (c0, a0), (c1, a1) = [
        (ends[k]["cost"], ends[k]["accuracy"]) for k in ("All-Instruct", "All-Reasoning")
    ]
    pts = points.sort_values("cost")
    chord = a0 + (a1 - a0) * (pts["cost"].to_numpy() - c0) / (c1 - c0)
    return float(np.trapezoid(pts["accuracy"].to_numpy() - chord, pts["cost"].to_numpy()))


def oracle_frontier(records: pd.DataFrame) -> pd.DataFrame:
    """The oracle frontier: the largest expected accuracy any per-pair policy reaches at each
    expected cost on ``records``, knowing both modes' outcomes (the exact solution of Eq. (1)
    for every budget ``C``, with ``Pi`` every map from the set's pairs to ``pi(1|z)`` in [0, 1]).

    Eq. (1) over such policies is a fractional knapsack. Start from each pair's cheaper mode
    (the more accurate on a token tie): the cheapest policy, and the most accurate among the
    cheapest; a pair whose more accurate mode is no more expensive is thus already taken. The
    only moves worth buying switch a pair to its other mode for a positive accuracy gain at a
    positive extra cost; taking them in decreasing gain / extra-cost order (a stable sort on
    ties) traces the upper concave envelope of all ``2^n`` deterministic policies' points, and
    mixing one pair's two modes moves linearly between consecutive vertices. Every policy's
    expected (cost, accuracy) on this set (:func:`policy_point`) therefore lies on or below the
    piecewise-linear curve through the rows, and on or right of the first row (no policy is
    cheaper); past the last row (the ``oracle_accuracy`` of :func:`mode_summary`, at the least
    cost that reaches it) more tokens buy nothing. :func:`oracle_accuracy_at` reads it at a cost.

    Columns: ``cost`` (realized cost ratio, :func:`racer_lib.records.schema.realized_cost_ratio`,
    strictly increasing) and ``accuracy`` (%), one row per vertex: the cheapest policy, then one
    row per move bought.
    """
    r = correct_matrix(records)
    t = token_matrix(records)
    # a = each pair's cheaper mode, the more accurate one where the tokens tie; b = the other
    a = ((t[:, 1] < t[:, 0]) | ((t[:, 1] == t[:, 0]) & (r[:, 1] > r[:, 0]))).astype(int)
    rows, b = np.arange(len(records)), 1 - a
    gain, extra = r[rows, b] - r[rows, a], t[rows, b] - t[rows, a]
    buy = np.flatnonzero((gain > 0) & (extra > 0))
    order = buy[np.argsort(-gain[buy] / extra[buy], kind="stable")]
    tokens = t[rows, a].sum() + np.concatenate([[0.0], np.cumsum(extra[order])])
    correct = r[rows, a].sum() + np.concatenate([[0.0], np.cumsum(gain[order])])
    return pd.DataFrame({"cost": tokens / t[:, 0].sum(), "accuracy": 100 * correct / len(records)})


def oracle_accuracy_at(records: pd.DataFrame, cost) -> float | np.ndarray:
    """The oracle frontier (:func:`oracle_frontier`) at expected cost ``cost`` (realized cost
    ratio; a scalar or an array): the largest expected accuracy (%) of any per-pair policy whose
    expected cost is at most ``cost``. Linear between vertices, flat past the last one, and NaN
    below the cheapest policy's cost, which no policy reaches."""
    frontier = oracle_frontier(records)
    c, acc = frontier["cost"].to_numpy(), frontier["accuracy"].to_numpy()
    x = np.asarray(cost, dtype=np.float64)
    out = np.where(x < c[0] * (1 - 1e-12), np.nan, np.interp(x, c, acc))
    return float(out) if out.ndim == 0 else out


#: The unit of each cost column of :func:`policy_point`, as :func:`over_seeds` names it.
COST_UNITS = {"train_cost": "training unit", "cost": "set's own All-Instruct"}


def over_seeds(
    table: pd.DataFrame,
    by: Sequence[str],
    budget_col: str = "budget",
    cost_col: str | None = None,
) -> pd.DataFrame:
    """Mean and sd over seeds of accuracy and cost, and the budget violation rate.

    A run violates its budget ``C`` (``budget_col``, in the training cost unit of Eq. (1))
    when its ``cost_col`` exceeds it. Default: ``train_cost`` (:func:`policy_point` with the
    training unit) where the table has it, else ``cost`` (against the evaluated set's own
    All-Instruct tokens, the same unit as ``C`` only when the set's mean instruct tokens are
    the training set's). ``cost_unit`` names the unit the violations used
    (:data:`COST_UNITS`); with ``train_cost`` in the table, ``train_cost_mean`` and
    ``train_cost_sd`` follow ``cost_sd``.
    """
    if cost_col is None:
        cost_col = "train_cost" if "train_cost" in table.columns else "cost"
    missing = int(table[cost_col].isna().sum())
    if missing and cost_col != "cost":  # a run without a training-unit cost would pass
        raise ValueError(
            f"{missing} of {len(table)} runs have no {cost_col!r}: a budget violation needs "
            "every run's cost in one unit (give each run a unit in policy_point, or pass "
            "cost_col='cost')"
        )
    g = table.assign(violated=table[cost_col] > table[budget_col]).groupby(
        list(by), sort=True, dropna=False
    )
    columns = {
        "accuracy_mean": ("accuracy", "mean"),
        "accuracy_sd": ("accuracy", "std"),
        "cost_mean": ("cost", "mean"),
        "cost_sd": ("cost", "std"),
    }
    if "train_cost" in table.columns:
        columns["train_cost_mean"] = ("train_cost", "mean")
        columns["train_cost_sd"] = ("train_cost", "std")
    columns["reasoning_rate"] = ("reasoning_rate", "mean")
    columns["violation_rate"] = ("violated", "mean")
    columns["seeds"] = ("accuracy", "size")
    out = g.agg(**columns).reset_index()
    out["cost_unit"] = COST_UNITS.get(cost_col, cost_col)
    return out


# ----------------------------------------------------------------------------------------
# RouteLLM's summaries of an accuracy-cost curve (Ong et al., 2025, §5.1)


def routing_metrics(
    points: pd.DataFrame, records: pd.DataFrame, pgr_target: float = 0.5
) -> dict[str, float]:
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
    pts = pd.concat(
        [
            pd.DataFrame([{k: lo[k] for k in pts.columns}]),
            pts,
            pd.DataFrame([{k: hi[k] for k in pts.columns}]),
        ],
        ignore_index=True,
    )
    by_cost = pts.groupby("cost", sort=True)["accuracy"].mean()
    span = hi["cost"] - lo["cost"]
    auc = (
        float(np.trapezoid(by_cost.to_numpy(), by_cost.index.to_numpy())) / span
        if span > 0
        else float(lo["accuracy"])
    )
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


# ----------------------------------------------------------------------------------------
# A saved router on held-out pairs (``racer router evaluate``)

#: The methods of :func:`held_out_report`, in its order.
HELD_OUT_METHODS = ("router", "All-Instruct", "All-Reasoning", "Random at the router's rate")


def _mean_interval(values: np.ndarray, level: float) -> tuple[float, float, float]:
    """Mean of per-pair ``values`` with its normal-approximation interval over pairs."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    mean = float(values.mean())
    half = z * float(values.std(ddof=1)) / np.sqrt(len(values)) if len(values) > 1 else np.nan
    return mean, mean - half, mean + half


def _finding(text: str, effect: tuple[float, float, float], boundary: float, sign: int) -> dict:
    """One finding of :func:`held_out_report`: ``effect`` (mean, lo, hi) decided against
    ``boundary`` on the claimed side ``sign`` by its interval: holds when the whole interval
    lies beyond the boundary, fails when it lies short of it, inconclusive otherwise."""
    from racer_lib.evaluation.verdicts import FAILS, HOLDS, INCONCLUSIVE

    mean, lo, hi = effect
    near, far = (lo, hi) if sign > 0 else (hi, lo)
    beyond = sign * (near - boundary) > 0
    short = sign * (far - boundary) < 0
    decision = HOLDS if beyond else FAILS if short else INCONCLUSIVE
    return {"finding": text, "effect": mean, "lo": lo, "hi": hi, "boundary": boundary,
            "decision": decision}  # fmt: skip


def held_out_report(
    records: pd.DataFrame,
    decisions,
    unit: CostUnit,
    budget: float,
    level: float = 0.95,
    gain_sesoi: float = 0.0,
    overspend: float = 0.0,
) -> dict:
    """A router's routed decisions (0/1, one per pair of ``records``) against the three
    reference policies on the same pairs: accuracy (%) and realized cost in the router's
    training ``unit`` (the unit ``budget`` is in, Eq. (1)), each with a ``level`` interval over
    pairs; Random reasons with the router's realized rate on every pair (its expected
    correctness and cost per pair). ``router_minus_random`` is the paired difference of
    accuracy (points); ``budget_met``: the router's realized cost is at most ``budget``.

    ``findings``: the two statements a practitioner checks, each decided by its ``level``
    interval over pairs (:func:`_finding`; the pairs are the replicates: the question is this
    router on new pairs like these): the router beats Random at its rate by more than
    ``gain_sesoi`` points, and its realized cost is at most ``overspend`` (a share) over the
    budget."""
    d = np.asarray(decisions, dtype=np.int64)
    if d.shape != (len(records),) or not np.isin(d, (0, 1)).all():
        raise ValueError(f"need one 0/1 decision per pair ({len(records)}), got {d.shape}")
    if len(records) == 0:
        raise ValueError("no pairs to evaluate")
    r, c = correct_matrix(records), unit.cost(records)
    rate = float(d.mean())
    rows = np.arange(len(d))
    per_pair = {
        "router": (r[rows, d], c[rows, d]),
        "All-Instruct": (r[:, 0], c[:, 0]),
        "All-Reasoning": (r[:, 1], c[:, 1]),
        "Random at the router's rate": (
            (1 - rate) * r[:, 0] + rate * r[:, 1],
            (1 - rate) * c[:, 0] + rate * c[:, 1],
        ),
    }
    methods = []
    for name in HELD_OUT_METHODS:
        acc, cost = per_pair[name]
        a, c_ = _mean_interval(100 * acc, level), _mean_interval(cost, level)
        methods.append(
            {
                "method": name,
                "accuracy": a[0],
                "accuracy_lo": a[1],
                "accuracy_hi": a[2],
                "cost": c_[0],
                "cost_lo": c_[1],
                "cost_hi": c_[2],
                "reasoning_rate": {"All-Instruct": 0.0, "All-Reasoning": 1.0}.get(name, rate),
            }
        )
    diff = _mean_interval(100 * (per_pair["router"][0] - per_pair[HELD_OUT_METHODS[3]][0]), level)
    spent = _mean_interval(per_pair["router"][1] / budget - 1, level)
    findings = [
        _finding(f"the router is more accurate than Random at its rate by over {gain_sesoi:g} "
                 "points", diff, gain_sesoi, 1),
        _finding(f"the router's realized cost is at most {overspend:.0%} over the budget",
                 spent, overspend, -1),
    ]  # fmt: skip
    return {
        "pairs": len(d),
        "level": level,
        "budget": float(budget),
        "tokens_per_unit": float(unit.tokens_per_unit),
        "budget_met": bool(methods[0]["cost"] <= budget),
        "router_minus_random": dict(zip(("effect", "lo", "hi"), diff)),
        "methods": methods,
        "findings": findings,
    }


def held_out_lines(report: dict) -> list[str]:
    """A :func:`held_out_report` as ``racer router evaluate`` prints it: one row per method
    (accuracy and cost with their intervals, reasoning rate), the router's paired difference
    from Random with the budget met or not, and each finding's decision with its interval."""
    lines = [f"{'method':<31} {'accuracy %':>22} {'cost':>22} {'reasoning':>10}"]
    for m in report["methods"]:
        acc = f"{m['accuracy']:.2f} [{m['accuracy_lo']:.2f}, {m['accuracy_hi']:.2f}]"
        cost = f"{m['cost']:.3f} [{m['cost_lo']:.3f}, {m['cost_hi']:.3f}]"
        lines.append(f"{m['method']:<31} {acc:>22} {cost:>22} {m['reasoning_rate']:>10.1%}")
    d, met = report["router_minus_random"], "met" if report["budget_met"] else "NOT met"
    lines.append(
        f"router minus Random at its rate: {d['effect']:+.2f} points [{d['lo']:+.2f}, "
        f"{d['hi']:+.2f}]; budget {met} (realized cost {report['methods'][0]['cost']:.3f})"
    )
    return lines + [
        f"{f['decision']}: {f['finding']} ({f['effect']:+.3g} [{f['lo']:+.3g}, {f['hi']:+.3g}])"
        for f in report.get("findings", ())
    ]


# ----------------------------------------------------------------------------------------
# Fig. 2 (§2 of the paper): the two modes side by side, and the statements the paper reads
# off the figure


def with_mean_tokens(
    summary: pd.DataFrame, records: pd.DataFrame, by: Sequence[str]
) -> pd.DataFrame:
    """``summary`` (a :func:`mode_summary` table by ``by``) with each group's mean completion
    tokens of both modes, ``mean_tokens_instruct`` and ``mean_tokens_reasoning``, appended."""
    by = list(by)
    columns = [mode_columns(m)["tokens"] for m in MODES]
    mean_tokens = records.groupby(by, sort=False)[columns].mean()
    mean_tokens.columns = [f"mean_{c}" for c in columns]
    return summary.merge(mean_tokens.reset_index(), on=by)


#: Why a finding holds by construction on simulated records: the input of
#: :mod:`racer_lib.records.simulate` that sets it (the ``basis`` column of the findings tables).
BASIS_DOMAIN_GAINS = (
    "simulator input: each cell's reasoning gain g_c (simulate.CELLS: math and coding > 0, "
    "safety and knowledge <= 0)"
)
