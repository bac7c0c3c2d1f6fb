"""The oracle frontier (:func:`racer_lib.evaluation.metrics.oracle_frontier`): the exact solution
of the
paper's Eq. (1) over all per-pair policies, checked against brute force on small sets."""

import itertools

import numpy as np
import pandas as pd
import pytest

from racer_lib.evaluation import metrics as evaluate
from racer_lib.records.simulate import simulate
from racer_lib.records.summary import mode_summary


def _records(r0, r1, t0, t1) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "correct_instruct": np.asarray(r0, bool),
            "correct_reasoning": np.asarray(r1, bool),
            "tokens_instruct": np.asarray(t0, float),
            "tokens_reasoning": np.asarray(t1, float),
        }
    )


def _random_instance(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """``n`` pairs of all four kinds, tokens from a small range so that reasoning is cheaper
    on some pairs and the two modes' tokens tie on others."""
    r = rng.random((n, 2)) < rng.uniform(0.2, 0.8, size=2)
    t = rng.integers(1, 6, size=(n, 2))
    return _records(r[:, 0], r[:, 1], t[:, 0], t[:, 1])


def _brute_force(records: pd.DataFrame):
    """All ``2^n`` deterministic policies' points, and the function ``C -> the largest accuracy
    at cost <= C`` over their convex hull (which is the set of mixed policies' points)."""
    n = len(records)
    p = np.array(list(itertools.product([0, 1], repeat=n)), dtype=float)
    pts = [evaluate.policy_point(records, row) for row in p]
    cost = np.array([q["cost"] for q in pts])
    acc = np.array([q["accuracy"] for q in pts])
    # upper hull (Andrew's monotone chain) over the best accuracy at each distinct cost
    xs = np.unique(cost)
    ys = np.array([acc[cost == x].max() for x in xs])
    hull: list[tuple[float, float]] = []
    for x, y in zip(xs, ys):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) >= 0:  # not a right turn
                hull.pop()
            else:
                break
        hull.append((x, y))
    hx, hy = np.array(hull).T

    def best(c: float) -> float:
        if c < hx[0]:
            return np.nan
        # a piecewise-linear function's max on [hx0, c] lies at c or at a vertex left of c
        return max(np.interp(c, hx, hy), hy[hx <= c].max())

    return cost, acc, hx, best


def test_matches_the_brute_force_hull_of_all_deterministic_policies():
    rng = np.random.default_rng(12)
    kinds = np.zeros((2, 2), int)
    cheaper_reasoning = ties = 0
    for _ in range(240):
        recs = _random_instance(rng, int(rng.integers(1, 11)))
        r, t = recs.iloc[:, :2].to_numpy(), recs.iloc[:, 2:].to_numpy()
        for a, b in r.astype(int):
            kinds[a, b] += 1
        cheaper_reasoning += int((t[:, 1] < t[:, 0]).sum())
        ties += int((t[:, 1] == t[:, 0]).sum())
        _, _, hx, best = _brute_force(recs)
        frontier = evaluate.oracle_frontier(recs)
        assert list(frontier.columns) == ["cost", "accuracy"]
        assert (np.diff(frontier["cost"]) > 0).all() and (np.diff(frontier["accuracy"]) > 0).all()
        lo, hi = hx[0], hx[-1]
        grid = np.concatenate(
            [hx, frontier["cost"], np.linspace(lo - 0.5, hi + 0.5, 97), rng.uniform(lo, hi, 50)]
        )
        grid = grid[(grid >= lo) | (grid < lo - 1e-6)]  # none just below the cheapest cost
        got = evaluate.oracle_accuracy_at(recs, grid)
        want = np.array([best(c) for c in grid])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9, equal_nan=True)
        assert evaluate.oracle_accuracy_at(recs, lo) == pytest.approx(best(lo), abs=1e-9)
    # the instances cover every kind of pair, cheaper reasoning and token ties
    assert (kinds > 50).all() and cheaper_reasoning > 100 and ties > 100


def test_counterexample_where_reasoning_is_cheaper_than_instruct():
    """One pair only instruct gets right, where reasoning saves 3 of its 4 tokens; two pairs only
    reasoning gets right, for one extra token each. All-Reasoning: 66.7 % at cost 11/12."""
    recs = _records([1, 0, 0], [0, 1, 1], [4, 4, 4], [1, 5, 5])
    ends = evaluate.endpoints(recs)
    assert ends["All-Instruct"]["accuracy"] == pytest.approx(100 / 3)
    assert ends["All-Reasoning"]["cost"] == pytest.approx(11 / 12)
    assert ends["All-Reasoning"]["accuracy"] == pytest.approx(200 / 3)
    frontier = evaluate.oracle_frontier(recs)
    # cheapest: reasoning on pair 0, instruct on 1 and 2 (nothing right); then pairs 1 and 2
    # (a point per token), then pair 0 back to instruct (a point for 3 tokens)
    np.testing.assert_allclose(frontier["cost"], [9 / 12, 10 / 12, 11 / 12, 14 / 12])
    np.testing.assert_allclose(frontier["accuracy"], [0, 100 / 3, 200 / 3, 100])
    # All-Reasoning is a vertex, and at All-Instruct's cost the oracle mixes pair 0
    assert evaluate.oracle_accuracy_at(recs, 11 / 12) == pytest.approx(200 / 3)
    assert evaluate.oracle_accuracy_at(recs, 1.0) == pytest.approx(200 / 3 + 100 / 9)
    assert np.isnan(evaluate.oracle_accuracy_at(recs, 0.7))
    assert evaluate.oracle_accuracy_at(recs, 5.0) == pytest.approx(100.0)


def test_no_policy_point_lies_above_the_frontier():
    rng = np.random.default_rng(5)
    recs, _ = simulate("llama-3.1-8b", "training_mix", dim=0, scale=0.02, seed=3)
    sets = [recs] + [_random_instance(rng, int(rng.integers(1, 40))) for _ in range(50)]
    for records in sets:
        n = len(records)
        # mixed, deterministic and sparse policies, and the two fixed modes
        policies = [
            rng.random(n),
            (rng.random(n) < 0.5).astype(float),
            rng.random(n) * (rng.random(n) < 0.2),
            np.zeros(n),
            np.ones(n),
        ]
        for p in policies:
            point = evaluate.policy_point(records, p)
            top = evaluate.oracle_accuracy_at(records, point["cost"])
            assert not np.isnan(top), "no policy is cheaper than the frontier's first vertex"
            assert point["accuracy"] <= top + 1e-9


def test_the_top_is_the_oracle_accuracy_and_every_vertex_is_a_policy():
    recs, _ = simulate("llama-3.1-8b", "training_mix", dim=0, scale=0.02, seed=4)
    frontier = evaluate.oracle_frontier(recs)
    summary = mode_summary(recs).iloc[0]
    assert frontier["accuracy"].iloc[-1] == pytest.approx(summary["oracle_accuracy"])
    r = recs[["correct_instruct", "correct_reasoning"]].to_numpy(bool)
    t = recs[["tokens_instruct", "tokens_reasoning"]].to_numpy(float)
    # the cheapest policy: each pair's cheaper mode, the more accurate on a tie
    cheap = (t[:, 1] < t[:, 0]) | ((t[:, 1] == t[:, 0]) & r[:, 1] & ~r[:, 0])
    first = evaluate.policy_point(recs, cheap.astype(float))
    assert frontier.iloc[0]["cost"] == pytest.approx(first["cost"])
    assert frontier.iloc[0]["accuracy"] == pytest.approx(first["accuracy"])
    # the most accurate policy at the least cost: the right mode, the cheaper if both agree
    best = np.where(r[:, 0] != r[:, 1], r[:, 1], cheap)
    last = evaluate.policy_point(recs, best.astype(float))
    assert frontier.iloc[-1]["cost"] == pytest.approx(last["cost"])
    assert frontier.iloc[-1]["accuracy"] == pytest.approx(last["accuracy"])
