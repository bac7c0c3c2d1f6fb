"""Policy evaluation on hand-made records: Random at matched cost and RouteLLM's metrics."""

import numpy as np
import pandas as pd
import pytest

from racer_lib import evaluate


@pytest.fixture
def four_pairs():
    """Instruct right on pairs 0-1, reasoning on 0-2; reasoning costs three times the tokens."""
    return pd.DataFrame({"correct_instruct": [True, True, False, False],
                         "correct_reasoning": [True, True, True, False],
                         "tokens_instruct": [10, 10, 10, 10],
                         "tokens_reasoning": [30, 30, 30, 30]})


def test_random_at_cost_matches_the_cost_and_lies_on_the_chord(four_pairs):
    point = evaluate.random_at_cost(four_pairs, 2.0)
    assert point["cost"] == pytest.approx(2.0) and point["reasoning_rate"] == pytest.approx(0.5)
    assert point["accuracy"] == pytest.approx(62.5)
    assert evaluate.random_at_cost(four_pairs, 9.0)["reasoning_rate"] == 1.0  # clipped
    assert evaluate.random_at_cost(four_pairs, 0.5)["reasoning_rate"] == 0.0


def test_random_scores_half_on_apgr_and_the_midpoint_on_auc(four_pairs):
    points = pd.DataFrame([evaluate.random_point(four_pairs, q) for q in (0.2, 0.5, 0.7)])
    m = evaluate.routing_metrics(points, four_pairs)
    assert m["auc"] == pytest.approx(62.5)
    assert m["apgr"] == pytest.approx(0.5)
    assert m["cpt"] == pytest.approx(0.5)


def test_a_router_that_reasons_only_where_it_helps(four_pairs):
    oracle = pd.DataFrame([evaluate.policy_point(four_pairs, [0, 0, 1, 0])])
    assert oracle.iloc[0]["cost"] == pytest.approx(1.5)
    m = evaluate.routing_metrics(oracle, four_pairs)
    # accuracy 50 -> 75 over cost 1 -> 1.5, then flat at 75 to cost 3; mean over [1, 3]
    assert m["auc"] == pytest.approx((0.5 * 62.5 + 1.5 * 75) / 2)
    assert m["apgr"] == pytest.approx(0.25 * 0.5 + 0.75)
    assert m["cpt"] == pytest.approx(0.125)


def test_seeds_at_one_rate_are_averaged_and_a_zero_gap_gives_nan(four_pairs):
    pts = pd.DataFrame({"reasoning_rate": [0.5, 0.5], "accuracy": [60.0, 70.0],
                        "cost": [2.0, 2.0]})
    assert evaluate.routing_metrics(pts, four_pairs)["apgr"] == pytest.approx(
        0.5 * (0.5 * 0.6) + 0.5 * (0.6 + 1) / 2)
    flat = four_pairs.assign(correct_reasoning=four_pairs["correct_instruct"])
    m = evaluate.routing_metrics(pts.assign(accuracy=50.0), flat)
    assert np.isnan(m["apgr"]) and np.isnan(m["cpt"]) and m["auc"] == pytest.approx(50.0)
