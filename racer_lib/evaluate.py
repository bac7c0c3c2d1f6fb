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

from .claims import add_status
from .records import (
    MODES,
    UNPARSEABLE,
    CostUnit,
    correct_matrix,
    mode_columns,
    realized_cost_ratio,
    token_matrix,
)

AGREEMENT_CELLS = ("both_right", "only_reasoning", "only_instruct", "both_wrong")


def _summary(group: pd.DataFrame) -> dict[str, float]:
    r = correct_matrix(group).astype(bool)
    acc = 100 * r.mean(axis=0)
    out = {
        "n": len(group),
        "acc_instruct": acc[0],
        "acc_reasoning": acc[1],
        "delta_accuracy": acc[1] - acc[0],
        "cost_ratio": realized_cost_ratio(group, 1.0),
        "both_right": int((r[:, 0] & r[:, 1]).sum()),
        "only_reasoning": int((~r[:, 0] & r[:, 1]).sum()),
        "only_instruct": int((r[:, 0] & ~r[:, 1]).sum()),
        "both_wrong": int((~r[:, 0] & ~r[:, 1]).sum()),
        "oracle_accuracy": 100 * (r[:, 0] | r[:, 1]).mean(),
    }
    for mode in MODES:
        out[f"unparseable_{mode}"] = int(
            (group[mode_columns(mode)["verdict"]] == "unparseable").sum()
        )
    return out


def mode_summary(records: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per group of ``by`` (or one row in all): accuracies, cost ratio, agreement."""
    by = list(by)
    if not by:
        return pd.DataFrame([_summary(records)])
    rows = [
        {**dict(zip(by, key if isinstance(key, tuple) else (key,))), **_summary(g)}
        for key, g in records.groupby(by, sort=False)
    ]
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
    return summary["oracle_accuracy"] - np.maximum(
        summary["acc_instruct"], summary["acc_reasoning"]
    )


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


def policy_point(
    records: pd.DataFrame, p_reasoning, unit: CostUnit | None = None
) -> dict[str, float]:
    """Expected accuracy (%), realized cost ratio and reasoning rate of a policy on a set.

    ``p_reasoning`` is ``pi(1|z)`` per pair (or 0/1 decisions). Expectations are taken under
    the policy rather than sampling decisions (:func:`expected`); the cost is against the set's
    own All-Instruct tokens (:func:`racer_lib.records.realized_cost_ratio`).

    With a training cost ``unit`` (:class:`racer_lib.records.CostUnit`: a
    :class:`racer_lib.train.Split`'s ``unit``, or ``CostUnit.from_records`` of the train split)
    the point also holds ``train_cost``, after ``cost``: the expected cost of Eq. (1)'s
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
    ``r`` and ``c`` of shape ``(n, 2)`` (e.g. a :class:`racer_lib.train.Split`'s, as arrays),
    the cost in the training unit rather than the set's own (:func:`expected`)."""
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

    Columns: ``cost`` (realized cost ratio, :func:`racer_lib.records.realized_cost_ratio`,
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


def agreement_table(summary: pd.DataFrame, by: Sequence[str] = ("judge",)) -> pd.DataFrame:
    """The agreement of the two modes per group of a :func:`mode_summary` table that carries
    a ``headroom`` column: the four cells (pair counts) and their shares (``share_<cell>``,
    :func:`agreement_shares`), the share of pairs on which exactly one mode is right
    (``share_one_mode_right``, the only pairs a router can gain on), both accuracies, the
    oracle's and the headroom (the lower panel of Fig. 2)."""
    out = summary[
        [*by, "n", *AGREEMENT_CELLS, "acc_instruct", "acc_reasoning", "oracle_accuracy", "headroom"]
    ].copy()
    shares = agreement_shares(out)
    for cell in AGREEMENT_CELLS:
        out[f"share_{cell}"] = shares[cell]
    out["share_one_mode_right"] = out["share_only_reasoning"] + out["share_only_instruct"]
    return out


#: Why a finding holds by construction on simulated records: the input of
#: :mod:`racer_lib.simulate` that sets it (the ``basis`` column of the findings tables).
BASIS_DOMAIN_GAINS = (
    "simulator input: each cell's reasoning gain g_c (simulate.CELLS: math and coding > 0, "
    "safety and knowledge <= 0)"
)
BASIS_RHO = (
    "simulator input: each judge's rho (simulate.JUDGES: larger models' modes agree more) with "
    "the paper's accuracies"
)
BASIS_ENDPOINTS = (
    "simulator input: the paper's All-Instruct and All-Reasoning accuracies (simulate.JUDGES), "
    "reasoning ahead for every judge"
)
BASIS_AGREEMENT = "simulator input: rho and KAPPA set how often the two modes agree"
BASIS_SELF_ROUTE = (
    "simulator input: the paper's share of 'yes' answers per judge (simulate.JUDGES.self_route)"
)
BASIS_FOLLOWS_SELF_ROUTE = (
    "follows from the calibrated share: the < 1 % of pairs declined move accuracy and cost by "
    "at most that share"
)

#: The Qwen3 judges of the paper, smallest first.
QWEN3_BY_SIZE = ("qwen3-1.7b", "qwen3-4b", "qwen3-8b")


def fig2_findings(
    records: pd.DataFrame, provenance: str, by_size: Sequence[str] = QWEN3_BY_SIZE
) -> pd.DataFrame:
    """The paper's reading of Fig. 2, checked on paired records (columns ``finding``, ``judge``,
    ``observed``, ``holds``, ``status``, ``basis``; :func:`racer_lib.claims.add_status` on the
    records' ``provenance``):

    * per judge, reasoning gains more on math and coding than on safety and knowledge (the
      smallest ΔAccuracy of the first above the largest of the second, domains pooled over
      benchmarks); a judge without a domain of each kind is not checked;
    * the headroom (:func:`headroom`) shrinks with model size, over the judges of ``by_size``
      present in ``records`` (checked when there are two or more).

    Both are inputs of :mod:`racer_lib.simulate` (the per-cell gains ``g_c`` and the judges'
    ``rho``), so on simulated records they hold by construction.
    """
    overall = mode_summary(records, ["judge"])
    overall["headroom"] = headroom(overall)
    pooled = mode_summary(records, ["judge", "domain"]).set_index(["judge", "domain"])
    checks = []
    for judge in records["judge"].unique():
        gains = pooled.loc[judge, "delta_accuracy"]
        verify = [d for d in ("math", "coding") if d in gains.index]
        surface = [d for d in ("safety", "knowledge") if d in gains.index]
        if verify and surface:
            checks.append(
                {
                    "finding": (
                        "reasoning gains more on math and coding than on safety and knowledge"
                    ),
                    "judge": judge,
                    "observed": f"min gain math/coding {gains[verify].min():.1f} pts; "
                    f"max gain safety/knowledge {gains[surface].max():.1f} pts",
                    "holds": bool(gains[verify].min() > gains[surface].max()),
                    "calibrated": True,
                    "basis": BASIS_DOMAIN_GAINS,
                }
            )
    order = [j for j in by_size if j in set(overall["judge"])]
    if len(order) > 1:
        room = overall.set_index("judge").loc[order, "headroom"]
        checks.append(
            {
                "finding": "the headroom when the modes disagree shrinks with model size",
                "judge": " > ".join(order),
                "observed": " > ".join(f"{v:.1f}" for v in room),
                "holds": bool((room.diff().dropna() < 0).all()),
                "calibrated": True,
                "basis": BASIS_RHO,
            }
        )
    return add_status(checks, provenance)


def fig2_reading(
    by_judge: pd.DataFrame, by_subset: pd.DataFrame, agreement: pd.DataFrame, provenance: str
) -> pd.DataFrame:
    """Fig. 2's message, that reasoning is not universally helpful, as three statements checked
    on a judge-level and a (judge, subset)-level :func:`mode_summary` and the judges'
    :func:`agreement_table` (columns ``finding``, ``holds``, ``status``, ``detail``, ``basis``;
    each is a calibrated input of :mod:`racer_lib.simulate`, so evidence only on records that
    are not ``simulated``):

    * reasoning lowers accuracy for at least one judge overall;
    * at least one (judge, subset) cell has ΔAccuracy <= 0;
    * for every judge the pairs where exactly one mode is right are a minority (< 50 %).
    """
    worse = by_judge[by_judge["delta_accuracy"] < 0]
    cells_le0 = by_subset[by_subset["delta_accuracy"] <= 0]
    worst = by_subset.loc[by_subset["delta_accuracy"].idxmin()]
    one_right = agreement.set_index("judge")["share_one_mode_right"]
    rows = pd.DataFrame(
        [
            {
                "finding": "reasoning lowers accuracy for at least one judge overall",
                "holds": bool(len(worse) > 0),
                "detail": (
                    f"{len(worse)} of {len(by_judge)} judges lose accuracy with CoT: "
                    + ", ".join(f"{r.judge} {r.delta_accuracy:+.1f}" for r in worse.itertuples())
                    if len(worse)
                    else "CoT is at least as accurate for every judge"
                ),
                "calibrated": True,
                "basis": BASIS_ENDPOINTS,
            },
            {
                "finding": "at least one (judge, subset) cell has ΔAccuracy <= 0",
                "holds": bool(len(cells_le0) > 0),
                "detail": (
                    f"{len(cells_le0)} of {len(by_subset)} cells; the lowest is "
                    f"{worst['judge']} on {worst['subset']} "
                    f"({worst['delta_accuracy']:+.1f} points)"
                ),
                "calibrated": True,
                "basis": BASIS_DOMAIN_GAINS,
            },
            {
                "finding": (
                    "for every judge the pairs where exactly one mode is right are a minority"
                ),
                "holds": bool((one_right < 0.5).all()),
                "detail": (
                    f"share of pairs with exactly one mode right: from "
                    f"{100 * one_right.min():.1f} % ({one_right.idxmin()}) to "
                    f"{100 * one_right.max():.1f} % ({one_right.idxmax()})"
                ),
                "calibrated": True,
                "basis": BASIS_AGREEMENT,
            },
        ]
    )
    return add_status(rows, provenance)


#: The count of LLMBar's ``statistics.json`` that a judge's correct verdicts in each order
#: equal: ``correct_False`` for the instance's order (``swap = False``), ``correct_True`` for
#: the swapped one.
LLMBAR_STATISTIC = {"original": "correct_False", "swapped": "correct_True"}


def llmbar_statistics_mismatches(
    by_order: dict[str, pd.DataFrame],
    statistics: dict[tuple[str, str], dict],
    subsets: Sequence[str],
) -> list[tuple]:
    """Where records disagree with LLMBar's own counts; an empty list when they all agree.

    ``by_order`` maps each order (``original``, ``swapped``) to judge records;
    ``statistics`` maps ``(judge, mode)`` to that judge's parsed ``statistics.json``
    (:func:`racer_lib.data.llmbar_statistics`: per subset, per statistic, ``(count, total)``).
    For every judge, mode, order and subset, the records' ``(correct count, pairs)`` must equal
    the statistic of :data:`LLMBAR_STATISTIC`; each mismatch is ``(judge, mode, order, subset,
    ours, theirs)``.
    """
    mismatches = []
    for (judge, mode), stats in statistics.items():
        for order, frame in by_order.items():
            mine = frame[frame["judge"] == judge]
            for subset in subsets:
                cell = mine[mine["subset"] == subset]
                ours = (int(cell[mode_columns(mode)["correct"]].sum()), len(cell))
                theirs = stats[subset][LLMBAR_STATISTIC[order]]
                if ours != tuple(theirs):
                    mismatches.append((judge, mode, order, subset, ours, theirs))
    return mismatches


def position_bias(
    original: pd.DataFrame, swapped: pd.DataFrame, judges: Sequence[str], prompts: dict[str, str]
) -> pd.DataFrame:
    """How much each judge's verdict depends on the position of the two outputs, per mode.

    ``original`` and ``swapped`` are the same pairs judged with the outputs in the instance's
    order and swapped (verdicts mapped back to the instance's order); ``prompts`` maps each
    mode to its prompt's name (e.g. ``data.LLMBAR_MODES``). Per judge and mode: the accuracy in
    each order and their difference, ``consistent`` (pairs with the same verdict in both orders;
    two unparseable answers count as the same, as in LLMBar's ``equal`` statistic) and
    ``consistency`` (%), ``both_unparseable``, ``right_in_both_orders``, and the share (%) of
    pairs on which the output shown first was picked in each order (A in the original order,
    B in the swapped one).
    """
    rows = []
    for judge in judges:
        a = original[original["judge"] == judge].set_index("id")
        b = swapped[swapped["judge"] == judge].set_index("id").loc[a.index]
        for mode, prompt in prompts.items():
            columns = mode_columns(mode)
            va, vb = a[columns["verdict"]].astype(str), b[columns["verdict"]].astype(str)
            ra, rb = a[columns["correct"]].astype(bool), b[columns["correct"]].astype(bool)
            rows.append(
                {
                    "judge": judge,
                    "mode": mode,
                    "prompt": prompt,
                    "n": len(a),
                    "acc_original": 100 * ra.mean(),
                    "acc_swapped": 100 * rb.mean(),
                    "acc_swapped_minus_original": 100 * (rb.mean() - ra.mean()),
                    "consistent": int((va == vb).sum()),
                    "consistency": 100 * (va == vb).mean(),
                    "both_unparseable": int(((va == UNPARSEABLE) & (vb == UNPARSEABLE)).sum()),
                    "right_in_both_orders": int((ra & rb).sum()),
                    "first_output_picked_original": 100 * (va == "A").mean(),
                    "first_output_picked_swapped": 100 * (vb == "B").mean(),
                }
            )
    return pd.DataFrame(rows)


def position_bias_reading(position: pd.DataFrame) -> str:
    """Two sentences on a :func:`position_bias` table: for how many judges the reasoning
    verdicts are less consistent across the two orders than the instruct ones, and which judge
    and prompt prefer the first position most."""
    wide = position.pivot(index="judge", columns="mode", values="consistency").loc[
        list(dict.fromkeys(position["judge"]))
    ]
    less = wide.index[wide["reasoning"] < wide["instruct"]]
    lead = position.loc[position["first_output_picked_original"].idxmax()]
    return (
        f"CoT verdicts are less consistent across the two orders than Vanilla ones for "
        f"{len(less)} of {len(wide)} judges ({', '.join(less) or 'none'}).\n"
        f"Strongest preference for the first position: {lead['judge']} {lead['prompt']}, "
        f"which picks the output shown first on "
        f"{lead['first_output_picked_original']:.0f} % of pairs (original order) and "
        f"{lead['first_output_picked_swapped']:.0f} % (swapped order)."
    )


# ----------------------------------------------------------------------------------------
# Self-routing (the paper's appendix table): the instruct mode asked whether it needs to think


def self_routing_point(records: pd.DataFrame, reason) -> dict[str, float]:
    """Self-routing on one set next to the fixed modes and to Random at the same fraction.

    ``reason`` is the 0/1 decision per pair (:func:`racer_lib.records.self_route_decisions`).
    Accuracies (%) of All-Instruct, All-Reasoning, self-routing and Random reasoning with
    self-routing's fraction (:func:`random_point`, on the chord between the endpoints); their
    realized cost ratios; the differences the chapter reads; and both modes' accuracies on the
    pairs the judge declined (NaN when it declined none). ``unparseable_answers`` counts the
    records whose ``self_route`` is ``unparseable``.
    """
    decide = np.asarray(reason)
    ends = endpoints(records)
    own = policy_point(records, decide)
    coin = random_point(records, own["reasoning_rate"])
    declined = records[decide == 0]
    return {
        "pairs": len(records),
        "unparseable_answers": int((records["self_route"] == "unparseable").sum()),
        "reasoning_fraction": 100 * own["reasoning_rate"],
        "acc_all_instruct": ends["All-Instruct"]["accuracy"],
        "acc_all_reasoning": ends["All-Reasoning"]["accuracy"],
        "acc_self_routing": own["accuracy"],
        "acc_random_same_fraction": coin["accuracy"],
        "cost_all_reasoning": ends["All-Reasoning"]["cost"],
        "cost_self_routing": own["cost"],
        "cost_random_same_fraction": coin["cost"],
        "self_routing_minus_all_reasoning": own["accuracy"] - ends["All-Reasoning"]["accuracy"],
        "self_routing_minus_random": own["accuracy"] - coin["accuracy"],
        "declined_pairs": len(declined),
        "declined_acc_instruct": (
            100 * declined["correct_instruct"].mean() if len(declined) else np.nan
        ),
        "declined_acc_reasoning": (
            100 * declined["correct_reasoning"].mean() if len(declined) else np.nan
        ),
    }


def self_routing_table(
    records: pd.DataFrame, sets: Sequence[str], judges: Sequence[str]
) -> pd.DataFrame:
    """:func:`self_routing_point` for every judge and set of ``records`` (columns ``judge``,
    ``set`` and ``reason``, the decision per pair), sorted by judge in the order of ``judges``,
    then by set in the order of ``sets``."""
    rows = [
        {"judge": judge, "set": name, **self_routing_point(recs, recs["reason"].to_numpy())}
        for (judge, name), recs in records.groupby(["judge", "set"], sort=False)
    ]
    table = pd.DataFrame(rows)
    table["set"] = pd.Categorical(table["set"], list(sets), ordered=True)
    table["judge"] = pd.Categorical(table["judge"], list(judges), ordered=True)
    table = table.sort_values(["judge", "set"]).reset_index(drop=True)
    table["set"], table["judge"] = table["set"].astype(str), table["judge"].astype(str)
    return table


def beside_paper(
    table: pd.DataFrame, values: dict, columns: Sequence[str], key: str = "judge"
) -> pd.DataFrame:
    """``table`` with the paper's ``columns`` appended: ``values[row[key]]`` holds one number
    per column (e.g. :data:`racer_lib.paper.SELF_ROUTING`); NaN for a key the paper lacks."""
    out = table.copy()
    missing = (np.nan,) * len(columns)
    for k, column in enumerate(columns):
        out[column] = [values.get(v, missing)[k] for v in out[key]]
    return out


def self_routing_findings(table: pd.DataFrame, provenance: str) -> pd.DataFrame:
    """The paper's reading of its self-routing table, checked on a :func:`self_routing_table`
    (one row per judge; columns ``finding``, ``holds``, ``status``, ``detail``, ``basis``):
    self-routing reasons on more than 99 % of pairs, its accuracy is within 0.5 points of
    All-Reasoning and its cost within 5 % of All-Reasoning's. Each holds only if it holds for
    every judge (and there is one); ``detail`` gives each judge's value. The share is an input
    of :mod:`racer_lib.simulate` and the other two follow from it, so on ``simulated`` records
    all three are ``by construction`` (:func:`racer_lib.claims.add_status`)."""

    def each(values, fmt):
        pairs = zip(table["judge"], values, strict=True)
        return "; ".join(f"{j} {fmt.format(v)}" for j, v in pairs)

    fraction = table["reasoning_fraction"]
    gap = table["acc_self_routing"] - table["acc_all_reasoning"]
    rel = table["cost_self_routing"] / table["cost_all_reasoning"] - 1
    rows = pd.DataFrame(
        [
            {
                "finding": "self-routing reasons on more than 99 % of pairs for every judge",
                "holds": bool(len(table) and (fraction > 99).all()),
                "detail": each(fraction, "{:.2f} %"),
                "calibrated": True,
                "basis": BASIS_SELF_ROUTE,
            },
            {
                "finding": "self-routing accuracy is within 0.5 points of All-Reasoning",
                "holds": bool(len(table) and (gap.abs() <= 0.5).all()),
                "detail": each(gap, "{:+.2f} pts"),
                "calibrated": True,
                "basis": BASIS_FOLLOWS_SELF_ROUTE,
            },
            {
                "finding": "self-routing cost is within 5 % of the All-Reasoning cost",
                "holds": bool(len(table) and (rel.abs() <= 0.05).all()),
                "detail": each(100 * rel, "{:+.2f} %"),
                "calibrated": True,
                "basis": BASIS_FOLLOWS_SELF_ROUTE,
            },
        ]
    )
    return add_status(rows, provenance)


# ----------------------------------------------------------------------------------------
# Fig. 1 and the OOD benchmarks' domain table (tab:benchmark), from chapter 02's per-domain
# table (:func:`mode_summary` by judge, dataset and domain: its ``n``, accuracies and cost
# ratios)

#: The domains whose judgments need structured verification (the paper's abstract: "e.g. math
#: and coding"), where Fig. 1(a) says reasoning gains most; every other domain is "other".
VERIFICATION_DOMAINS = ("math", "coding")
BASIS_DOMAIN_COUNTS = (
    "simulator input: each benchmark's domain counts (simulate.CELLS: the paper's tab:benchmark)"
)


def domain_distribution(
    by_domain: pd.DataFrame,
    judge: str,
    paper_table: dict[tuple[str, str], tuple[int, float]],
    provenance: str,
    tolerance: float = 1.0,
) -> pd.DataFrame:
    """The paper's table ``tab:benchmark`` (domain distribution of the OOD benchmarks) computed
    from ``judge``'s rows of a per-(judge, dataset, domain) :func:`mode_summary` table: per
    benchmark and domain the pairs (``pairs``) and their share of the benchmark (``share``, %),
    then the paper's count and proportion (``paper_count``, ``paper_share``; NaN where the paper
    has no such cell) and ``holds`` (the share is within ``tolerance`` points of the paper's)
    with its ``status`` (:func:`racer_lib.claims.add_status`). The simulator draws each
    benchmark's domains in the paper's counts (times its ``scale``), so on ``simulated`` records
    the shares are ``by construction``."""
    mine = by_domain[by_domain["judge"] == judge]
    if mine.empty:
        raise ValueError(
            f"no rows of judge {judge!r} in the per-domain table (judges: "
            f"{', '.join(map(str, by_domain['judge'].unique()))})"
        )
    counts = mine.groupby(["dataset", "domain"], sort=False)["n"].sum()
    rows = []
    for (bench, domain), n in counts.items():
        paper_n, paper_share = paper_table.get((bench, domain), (np.nan, np.nan))
        share = 100 * n / counts[bench].sum()
        rows.append(
            {
                "benchmark": bench,
                "domain": domain,
                "pairs": int(n),
                "share": share,
                "paper_count": paper_n,
                "paper_share": paper_share,
                "holds": bool(abs(share - paper_share) <= tolerance),
                "calibrated": True,
                "basis": BASIS_DOMAIN_COUNTS,
            }
        )
    return add_status(pd.DataFrame(rows), provenance)


def mode_tradeoff(by_domain: pd.DataFrame, judge: str) -> pd.DataFrame:
    """The points of Fig. 1(a) for ``judge``: per (benchmark, domain) of a per-(judge, dataset,
    domain) :func:`mode_summary` table, the instruct mode at cost 1 and the reasoning mode at
    the cell's cost ratio (the cost of §2: tokens in the unit of the cell's own instruct
    tokens), their accuracies and ΔAccuracy, and ``group`` (``verification`` for
    :data:`VERIFICATION_DOMAINS`, else ``other``)."""
    mine = by_domain[by_domain["judge"] == judge]
    out = mine[["judge", "dataset", "domain", "n", "acc_instruct", "acc_reasoning"]].copy()
    out["delta_accuracy"] = out["acc_reasoning"] - out["acc_instruct"]
    out["cost_instruct"] = 1.0
    out["cost_reasoning"] = mine["cost_ratio"]
    out["group"] = np.where(out["domain"].isin(VERIFICATION_DOMAINS), "verification", "other")
    return out.reset_index(drop=True)


def gain_by_group(tradeoff: pd.DataFrame) -> pd.DataFrame:
    """:func:`mode_tradeoff` pooled per judge and group: the pairs, both modes' accuracies over
    the group's pairs (cells weighted by their pairs, so exactly the accuracy on the pooled
    pairs), ΔAccuracy, and the smallest and largest cost ratio of its cells."""
    rows = []
    for (judge, group), g in tradeoff.groupby(["judge", "group"], sort=False):
        w = g["n"] / g["n"].sum()
        acc0, acc1 = float(w @ g["acc_instruct"]), float(w @ g["acc_reasoning"])
        rows.append(
            {
                "judge": judge,
                "group": group,
                "pairs": int(g["n"].sum()),
                "acc_instruct": acc0,
                "acc_reasoning": acc1,
                "delta_accuracy": acc1 - acc0,
                "cost_ratio_min": g["cost_reasoning"].min(),
                "cost_ratio_max": g["cost_reasoning"].max(),
            }
        )
    return pd.DataFrame(rows)


def shift_costs(runs: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """The points of Fig. 1(b): the runs of one ``scenario`` of chapter 06's per-run table
    (:func:`racer_lib.experiments.shift_rows`) by the plain objective (ACER) and by cost
    robustness (RACER-C), each run's cost on the training subset's validation split
    (``valid_cost``, in its cost unit) and on the shifted test set (``cost``, the realized ratio
    against that set's own instruct tokens), the budget and whether each exceeds it."""
    here = runs[(runs["scenario"] == scenario) & runs["variant"].isin(["ACER", "RACER-C"])]
    if here.empty:
        raise ValueError(
            f"no ACER or RACER-C runs of scenario {scenario!r} (scenarios: "
            f"{', '.join(map(str, runs['scenario'].unique()))})"
        )
    out = here[
        ["scenario", "train_subset", "test_subset", "method", "variant", "tau", "seed", "budget"]
    ].copy()
    out["valid_cost"] = here["valid_cost"]
    out["shift_cost"] = here["cost"]
    out["valid_violated"] = here["valid_cost"] > here["budget"]
    out["shift_violated"] = here["cost"] > here["budget"]
    return out.reset_index(drop=True)


def fig1_findings(groups: pd.DataFrame, costs: pd.DataFrame | None, provenance: str):
    """Fig. 1's caption as checked statements (columns ``finding``, ``observed``, ``holds``,
    ``status``, ``basis``): (a) per judge of ``groups`` (:func:`gain_by_group`), reasoning gains
    more on the verification domains than on the others — calibrated (the simulator is given
    each domain's gain); (b) on ``costs`` (:func:`shift_costs`; left out when ``None``), cost
    robustness exceeds the budget after the shift in fewer runs than the plain objective —
    and its most robust temperature (the smallest τ) stays within the budget in every run — not
    calibrated (the simulator is given no router's behaviour)."""
    from .experiments import BASIS_LEARNED  # experiments imports this module

    rows = []
    for judge, g in groups.groupby("judge", sort=False):
        gain = g.set_index("group")["delta_accuracy"]
        if {"verification", "other"} <= set(gain.index):
            rows.append(
                {
                    "finding": f"(a) {judge}: reasoning gains more on math and coding "
                    "than on the other domains",
                    "observed": f"{gain['verification']:+.1f} vs {gain['other']:+.1f} points",
                    "holds": bool(gain["verification"] > gain["other"]),
                    "calibrated": True,
                    "basis": BASIS_DOMAIN_GAINS,
                }
            )
    if costs is not None:
        rate = costs.groupby("variant")["shift_violated"].mean()
        rows.append(
            {
                "finding": "(b) after the shift, cost robustness (RACER-C) exceeds the budget "
                "in fewer runs than the plain objective (ACER)",
                "observed": f"violation rate RACER-C {rate.get('RACER-C', np.nan):.2f}, "
                f"ACER {rate.get('ACER', np.nan):.2f}",
                "holds": bool(rate.get("RACER-C", np.nan) < rate.get("ACER", np.nan)),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
        robust = costs[costs["variant"] == "RACER-C"]
        robust = robust[robust["tau"] == robust["tau"].min()]
        rows.append(
            {
                "finding": "(b) after the shift, the most robust RACER-C (smallest τ) stays "
                "within the budget in every run",
                "observed": f"τ = {robust['tau'].min():g}: {int(robust['shift_violated'].sum())} "
                f"of {len(robust)} runs over budget",
                "holds": bool(len(robust) and not robust["shift_violated"].any()),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
    return add_status(pd.DataFrame(rows), provenance)
