"""Routing baselines on small cases whose answers are known by hand, and budget matching."""

import numpy as np
import pytest

from racer_lib.records.schema import RecordsError
from racer_lib.routing import baselines as bl


def _clusters(n_per=40, seed=0):
    """Two clusters: near e1 only reasoning is right, near e2 only instruct is right."""
    rng = np.random.default_rng(seed)
    a = np.array([1.0, 0.0, 0.0]) + 0.05 * rng.standard_normal((n_per, 3))
    b = np.array([0.0, 1.0, 0.0]) + 0.05 * rng.standard_normal((n_per, 3))
    x = np.vstack([a, b]).astype(np.float32)
    r = np.vstack([np.tile([0.0, 1.0], (n_per, 1)), np.tile([1.0, 0.0], (n_per, 1))])
    return x, r


# ------------------------------------------------------------------------------- KNN


def test_knn_predicts_the_mean_correctness_of_the_neighbours():
    # Four training pairs near e1 (3 with reasoning right), four near e2 (1 with reasoning right).
    x = np.array(
        [
            [1, 0.01],
            [1, 0.02],
            [1, -0.01],
            [1, -0.02],
            [0.01, 1],
            [0.02, 1],
            [-0.01, 1],
            [-0.02, 1],
        ],
        dtype=np.float32,
    )
    r = np.array([[0, 1], [0, 1], [1, 1], [1, 0], [1, 0], [1, 0], [1, 0], [0, 1]], dtype=float)
    knn = bl.KNNRouter(k=4).fit(x, r)
    pred = knn.predict(np.array([[2.0, 0.0], [0.0, 3.0]]))  # cosine: the norm does not matter
    np.testing.assert_allclose(pred, [[0.5, 0.75], [0.75, 0.25]])
    np.testing.assert_allclose(knn.score([[2.0, 0.0], [0.0, 3.0]]), [0.25, -0.5])


def test_knn_with_more_neighbours_than_pairs_uses_them_all():
    x, r = _clusters(n_per=3)
    knn = bl.KNNRouter(k=50).fit(x, r)
    np.testing.assert_allclose(knn.score(x[:2]), [0.0, 0.0])  # half of each kind


def test_knn_separates_the_clusters():
    x, r = _clusters()
    knn = bl.KNNRouter(k=5).fit(x, r)
    score = knn.score(x)
    np.testing.assert_array_equal(score, np.where(r[:, 1] > r[:, 0], 1.0, -1.0))


# ------------------------------------------------------------------------------- MF


def test_mf_learns_a_separable_preference():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((400, 4)).astype(np.float32)
    reasoning_wins = x[:, 0] > 0
    r = np.column_stack([~reasoning_wins, reasoning_wins]).astype(float)
    mf = bl.MFRouter(epochs=30, lr=3e-3, seed=0).fit(x, r)
    test = rng.standard_normal((400, 4)).astype(np.float32)
    score = mf.score(test)
    assert ((score > 0.5) == (test[:, 0] > 0)).mean() > 0.95
    assert mf.history[-1] < mf.history[0]  # the BCE went down


def test_mf_ignores_ties_and_is_reproducible():
    x, r = _clusters()
    ties = np.vstack([np.ones((30, 2)), np.zeros((30, 2))])  # both right / both wrong
    x_ties = np.random.default_rng(3).standard_normal((60, 3)).astype(np.float32)
    plain = bl.MFRouter(epochs=5, seed=7).fit(x, r)
    with_ties = bl.MFRouter(epochs=5, seed=7).fit(np.vstack([x, x_ties]), np.vstack([r, ties]))
    np.testing.assert_array_equal(plain.score(x), with_ties.score(x))
    other_seed = bl.MFRouter(epochs=5, seed=8).fit(x, r)
    assert not np.array_equal(plain.score(x), other_seed.score(x))


def test_mf_needs_a_pair_where_one_mode_wins():
    with pytest.raises(ValueError, match="exactly one mode is right"):
        bl.MFRouter(epochs=1).fit(np.ones((4, 2)), np.ones((4, 2)))


def test_mf_noise_is_training_only():
    x, r = _clusters()
    mf = bl.MFRouter(epochs=2, seed=0).fit(x, r)
    np.testing.assert_array_equal(mf.score(x), mf.score(x))  # scoring draws nothing


# ------------------------------------------------------------------------------- M-IRT


def test_mirt_learns_which_mode_is_right_where():
    x, r = _clusters(n_per=200)
    mirt = bl.MIRTRouter(epochs=200, batch_size=64, seed=0).fit(x, r)
    p = mirt.predict(x)
    near_e1 = r[:, 1] > r[:, 0]
    assert (p[near_e1, 1] > p[near_e1, 0]).all() and (p[~near_e1, 0] > p[~near_e1, 1]).all()
    assert (mirt.score(x)[near_e1] > mirt.score(x)[~near_e1].max()).all()


def test_mirt_cold_start_mixes_the_query_with_its_neighbours():
    x = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    r = np.array([[1, 0], [0, 1], [1, 1]], dtype=float)
    mirt = bl.MIRTRouter(epochs=1, cold_k=1, cold_lambda=0.3).fit(x, r)
    q = np.array([[2.0, 0.1]], dtype=np.float32)  # nearest by cosine: [1, 0]
    np.testing.assert_allclose(mirt.smooth(q), 0.7 * q + 0.3 * np.array([[1.0, 0.0]]), rtol=1e-6)
    mirt2 = bl.MIRTRouter(epochs=1, cold_k=2, cold_lambda=0.5).fit(x, r)
    # two nearest of [1, 0.9]: [1, 1] and [1, 0]
    np.testing.assert_allclose(
        mirt2.smooth([[1.0, 0.9]]),
        0.5 * np.array([[1.0, 0.9]]) + 0.5 * np.array([[1.0, 0.5]]),
        rtol=1e-6,
    )


def test_mirt_score_trades_gain_against_mode_cost():
    x, r = _clusters(n_per=20)
    c = np.column_stack([np.ones(40), np.full(40, 4.0)])
    mirt = bl.MIRTRouter(epochs=3, seed=0, perf_weight=0.8).fit(x, r, c)
    p = mirt.predict(x)
    np.testing.assert_allclose(
        mirt.score(x), 0.8 * (p[:, 1] - p[:, 0]) - 0.2 * 3 / 4, rtol=1e-5, atol=1e-7
    )


# ------------------------------------------------------------------------------- shared


@pytest.mark.parametrize("method", bl.METHODS)
def test_a_baseline_refuses_other_embeddings_and_scoring_before_fit(method):
    router = bl.make(method, seed=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        router.score(np.zeros((2, 3)))
    x, r = _clusters(n_per=5)
    router.fit(x, r, np.ones((10, 2)))
    with pytest.raises(ValueError, match="3-dimensional"):
        router.score(np.zeros((2, 4)))


def test_make_rejects_an_unknown_method():
    with pytest.raises(ValueError, match="RouterBench-KNN, RouteLLM-MF, M-IRT"):
        bl.make("oracle")


# ------------------------------------------------------------------------------- budget matching


def test_match_budget_by_hand():
    scores = [0.9, 0.8, 0.8, 0.1, 0.5]
    c = np.array([[1, 3], [1, 2], [1, 2], [1, 5], [1, 1.5]])
    # cost on top-k (instruct 1 everywhere, n = 5): k=0: 1, k=1: 1.4, k=3 (tie): 1.8,
    # k=4: 1.9, k=5: 2.7; k=2 splits the tie at 0.8 and is not allowed.
    th = bl.match_budget(scores, c, 1.85)
    assert (th.value, th.rate) == (0.8, 0.6) and th.valid_cost == pytest.approx(1.8)
    np.testing.assert_array_equal(th.route(scores), [1, 1, 1, 0, 0])
    assert bl.match_budget(scores, c, 1.7).rate == 0.2  # the tie does not fit: only the top
    assert bl.match_budget(scores, c, 1.2).value == np.inf  # nothing fits but instruct
    everything = bl.match_budget(scores, c, 3.0)
    assert everything.value == -np.inf and everything.route([-1e9]).tolist() == [1]


def test_match_budget_takes_the_largest_rate_when_cost_is_not_monotone():
    # Reasoning is cheaper than instruct on the lowest-scored pair: all-in costs less than k=2.
    scores = [3.0, 2.0, 1.0]
    c = np.array([[1, 2.5], [1, 1.6], [1, 0.1]])  # k=1: 1.5, k=2: 1.7, k=3: 1.4
    th = bl.match_budget(scores, c, 1.45)
    assert th.rate == 1.0 and th.valid_cost == pytest.approx(1.4)


def test_match_budget_errors_name_the_problem():
    c = np.array([[1.0, 2.0], [1.0, 3.0]])
    with pytest.raises(RecordsError, match="budget C = 0.5 is infeasible"):
        bl.match_budget([0.1, 0.2], c, 0.5, file="valid.parquet")
    with pytest.raises(RecordsError, match="row 1.*'score': score nan"):
        bl.match_budget([0.1, np.nan], c, 2.0)
    # Feasible in principle (reason where it is cheaper) but not by a score threshold.
    c2 = np.array([[2.0, 0.5], [2.0, 3.0]])
    with pytest.raises(RecordsError, match="no threshold on these scores meets budget"):
        bl.match_budget([0.1, 0.9], c2, 1.5)


@pytest.fixture(scope="module")
def fitted(routing_data, one_thread):
    _, _, _, sp = routing_data
    train = sp["train"]
    routers = {}
    for method in bl.METHODS:
        options = {"epochs": 5} if method != "RouterBench-KNN" else {"k": 10}
        routers[method] = bl.make(method, seed=0, **options).fit(
            train.x.numpy(), train.r.numpy(), train.c.numpy()
        )
    return routers, sp


@pytest.mark.parametrize("method", bl.METHODS)
@pytest.mark.parametrize("budget", [1.05, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0])
def test_budget_matched_validation_cost_stays_within_budget(fitted, method, budget):
    routers, sp = fitted
    valid = sp["valid"]
    score = routers[method].score(valid.x.numpy())
    c = valid.c.numpy().astype(np.float64)
    th = bl.match_budget(score, c, budget)
    decide = th.route(score)
    realized = float(np.where(decide == 1, c[:, 1], c[:, 0]).mean())
    assert realized <= budget + 1e-12
    assert realized == pytest.approx(th.valid_cost) and decide.mean() == pytest.approx(th.rate)
    # Maximal: the next allowed cut (the next distinct score below the threshold) exceeds C.
    below = np.sort(np.unique(score[score < th.value]))[::-1]
    if len(below):
        more = score >= below[0]
        assert np.where(more, c[:, 1], c[:, 0]).mean() > budget


def test_baseline_beats_random_on_simulated_records(fitted):
    """KNN's top-scored validation pairs gain more from reasoning than the average pair."""
    routers, sp = fitted
    valid = sp["valid"]
    r = valid.r.numpy()
    gain = r[:, 1] - r[:, 0]
    score = routers["RouterBench-KNN"].score(valid.x.numpy())
    top = score >= np.quantile(score, 0.8)
    assert gain[top].mean() > gain.mean()
