"""The smallest effects of interest (SESOI) the report's emergent claims are decided against,
one per quantity, each derived from the paper's own numbers (:mod:`racer_lib.paper.numbers`)
or, where the paper prints none, a stated practical threshold with its reason. They are fixed
here, before any run: a claim's entry names the :class:`Effect` of its quantity, and every claim
on one quantity uses the same number, as the minimum effect of a directional claim and as the
margin of an equivalence. One data set therefore cannot support "lowers accuracy" and "alike"
on the same quantity: the first needs the interval above the SESOI, the second below it
(``tests/test_claims.py`` checks every pair of claims that share a quantity).

A difference the seeds detect but that lies below its SESOI is *not reproduced* (Lakens,
Scheel & Isager 2018): the status follows the size of the paper's effect, not the number of
seeds.
"""

from __future__ import annotations

import numpy as np

from racer_lib.claims.data import Effect
from racer_lib.paper import numbers as paper

__all__ = [
    "COST_GAP",
    "EFFECTS",
    "LAMBDA",
    "MODE_GAIN",
    "OVERSPEND",
    "PACED_ACCURACY",
    "PACED_OVERSPEND",
    "REASONING_RATE",
    "ROUTER_ACCURACY",
    "SELECTION_AREA",
    "SELECTION_GAIN",
    "TRAINING_COST",
    "VIOLATIONS",
    "Effect",
    "paper_selection_area",
]


def _beta_smallest_effect() -> float:
    """The smallest accuracy difference between two β rows of Table 3 that the paper reads as
    an effect: β = 0 against the default β = 0.005 at the tightest budget C = 2 ("removing
    the entropy regularizer hurts accuracy under the tight budget")."""
    acc = {key: value[0] for key, value in paper.BETA_SENSITIVITY.items()}
    return round(acc[(0.005, 2.0)] - acc[(0.0, 2.0)], 6)


def _llama_smallest_gain() -> float:
    """The smallest gap of RACER over Random at matched cost in Table 7 (Llama pair)."""
    return float(min(racer - random for racer, _, random, _ in paper.LLAMA_FAMILY.values()))


def paper_selection_area() -> float:
    """The area (accuracy points x cost ratio) between RACER's curve and Random's chord on the
    paper's Llama pair (Table 7: RACER's points, the chord joining All-Instruct and
    All-Reasoning), by the trapezoid rule over RACER's cost range, as
    :func:`racer_lib.evaluation.metrics.area_above_random` integrates the build's."""
    (a0, c0), (a1, c1) = (
        paper.LLAMA_FAMILY_ENDPOINTS["All-Instruct"],
        paper.LLAMA_FAMILY_ENDPOINTS["All-Reasoning"],
    )
    points = sorted((cost, acc) for acc, cost, _, _ in paper.LLAMA_FAMILY.values())
    cost = np.array([c for c, _ in points])
    gap = np.array([a for _, a in points]) - (a0 + (a1 - a0) * (cost - c0) / (c1 - c0))
    return float(np.trapezoid(gap, cost))


#: An accuracy difference between two routers (or a router and a fixed mode) on the same
#: records: half the smallest difference the paper reads as an effect (Table 3, 0.3 pt).
ROUTER_ACCURACY = Effect(
    "accuracy difference between routers",
    _beta_smallest_effect() / 2,
    " pts",
    "half the smallest accuracy difference the paper reads as an effect: β = 0 against "
    f"β = 0.005 at C = 2 in Table 3 ({_beta_smallest_effect():g} pt)",
    _beta_smallest_effect(),
)
#: RACER's gain over Random at the same reasoning rate: half the smallest gap in Table 7.
SELECTION_GAIN = Effect(
    "gain over Random at the same reasoning rate",
    round(_llama_smallest_gain() / 2, 3),
    " pts",
    "half the smallest gain of RACER over Random at matched cost in Table 7 "
    f"({_llama_smallest_gain():.2f} pts, Llama pair at C = 3.5)",
    _llama_smallest_gain(),
)
#: The area between RACER's frontier and Random's chord: half the paper's (Table 7).
SELECTION_AREA = Effect(
    "area above Random's chord",
    round(paper_selection_area() / 2, 3),
    " pts x cost",
    "half the area between RACER's points and Random's chord in Table 7 "
    f"({paper_selection_area():.2f} pts x cost over the paper's costs 2.05 to 3.20; the "
    "build's budgets span a wider range, which favours the build)",
    paper_selection_area(),
)
#: A realized cost over the budget: the relative overspend a claim of "within budget" allows.
OVERSPEND = Effect(
    "relative overspend (cost / budget - 1)",
    0.05,
    "",
    "twice the largest overspend the paper still calls within budget (Table 7: RACER's cost "
    "2.05 at C = 2, 2.5 % over)",
)
#: A difference in realized cost ratio between two routers at the ablation's budget.
COST_GAP = Effect(
    "cost ratio difference between routers",
    OVERSPEND.sesoi / 2 * paper.ABLATION_BUDGET,
    "",
    "the paper's tolerated overspend (2.5 % of the budget, Table 7) at the ablation's budget "
    f"C = {paper.ABLATION_BUDGET:g}",
)
#: A difference in the share of pairs sent to reasoning.
REASONING_RATE = Effect(
    "reasoning rate difference",
    round(COST_GAP.sesoi / (paper.DATASET_STATISTICS["wildguardmix"][1] - 1), 4),
    "",
    "the reasoning rate that moves the cost by the cost SESOI on the ablation's costlier "
    "training set (WildGuardMix, cost ratio "
    f"{paper.DATASET_STATISTICS['wildguardmix'][1]:g}: {COST_GAP.sesoi:g} / "
    f"{paper.DATASET_STATISTICS['wildguardmix'][1] - 1:g})",
)
#: A difference in the share of runs over budget (no number in the paper: practical).
VIOLATIONS = Effect(
    "share of runs over budget",
    0.1,
    "",
    "no number in the paper (Fig. 3 draws the runs); one run in ten, the resolution of the "
    "paper's ten seeds per budget",
)
#: The training cost's distance from the budget it is driven to, relative.
TRAINING_COST = Effect(
    "final training cost relative to the budget",
    0.1,
    "",
    "no number in the paper (Fig. 5 draws the curve); 10 %, the simulator check's tolerance "
    "on a cost ratio",
)


def _mode_smallest_gain() -> float:
    """The smallest accuracy gain of All-Reasoning over All-Instruct among the paper's Qwen3
    judges (Table 9)."""
    return float(min(ar - ai for _, ai, ar, _, _ in paper.SELF_ROUTING.values()))


#: Reasoning's accuracy gain over the instruct mode on the same pairs.
MODE_GAIN = Effect(
    "accuracy gain of reasoning over instruct",
    round(_mode_smallest_gain() / 2, 3),
    " pts",
    "half the smallest gain of All-Reasoning over All-Instruct among the paper's judges "
    f"(Table 9: {_mode_smallest_gain():.2f} pts, Qwen3-4B)",
    _mode_smallest_gain(),
)
#: The dual price λ (accuracy, as a share, per cost unit) between two budgets.
LAMBDA = Effect(
    "dual price λ difference",
    ROUTER_ACCURACY.sesoi / 100,
    "",
    "no number in the paper (Fig. 5 draws λ); the price at which one cost unit trades for the "
    f"accuracy SESOI ({ROUTER_ACCURACY.sesoi:g} pt = {ROUTER_ACCURACY.sesoi / 100:g} of reward)",
)

#: Every quantity's effect, by name (the report's protocol table lists them).
#: Beyond the paper (chapter 18, issue 43's goal): the overspend a paced router may keep after
#: 500 pairs, relative to the budget.
PACED_OVERSPEND = Effect(
    "paced overspend after 500 pairs (cost / budget - 1)",
    0.01,
    "",
    "no number in the paper (pacing is the companion's): the companion's goal for a paced "
    "router, the budget + 1 %, a fifth of the paper's tolerated overspend (OVERSPEND)",
)
#: Beyond the paper (chapter 18): the accuracy a paced router may lose against the offline
#: router at the same realized cost.
PACED_ACCURACY = Effect(
    "accuracy lost by pacing at equal cost",
    1.0,
    " pts",
    "no number in the paper (pacing is the companion's): the companion's goal, one point, the "
    "accuracy a deployment would trade for keeping its budget",
)
EFFECTS: dict[str, Effect] = {
    e.quantity: e
    for e in (
        ROUTER_ACCURACY,
        SELECTION_GAIN,
        SELECTION_AREA,
        OVERSPEND,
        COST_GAP,
        REASONING_RATE,
        VIOLATIONS,
        TRAINING_COST,
        MODE_GAIN,
        LAMBDA,
        PACED_OVERSPEND,
        PACED_ACCURACY,
    )
}
