"""Checks of ``racer_lib.routing.dro``: the KL-ball worst case of Theorem 3.1 and Algorithm 1's
weights.

Every expected value here is computed independently of the module under test: the cvxpy
reference solution, the closed forms of Theorem 3.1 (evaluated with ``scipy.special``), the
worst set ``S`` and its KL ``-log rho_n(S)`` found directly from ``f``, or identities such as
weak duality. Nothing is a number copied from a run of the code.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp, rel_entr

from racer_lib.routing import dro

KINDS = ("reward", "cost")


# -- independent helpers ------------------------------------------------------------------------


def _rho(n: int, uniform: bool, rng: np.random.Generator) -> np.ndarray | None:
    """``None`` (the module's uniform default) or a random non-uniform ``rho_n``."""
    return None if uniform else rng.dirichlet(np.ones(n))


def _full(rho, n):
    return np.full(n, 1.0 / n) if rho is None else np.asarray(rho, float)


def _kl(p, q) -> float:
    return float(np.sum(rel_entr(np.asarray(p, float), np.asarray(q, float))))


def _worst_set(f, rho, kind) -> np.ndarray:
    """Boolean mask of the worst samples on the support of ``rho`` (ties included)."""
    f = np.asarray(f, float)
    support = rho > 0
    extreme = f[support].min() if kind == "reward" else f[support].max()
    return support & (f == extreme)


def _kl_max(f, rho, kind) -> float:
    """KL of the point mass on the worst samples: ``-log rho_n(S)``."""
    return float(-np.log(rho[_worst_set(f, rho, kind)].sum()))


def _baseline(f, tau, kind, rho) -> float:
    """Theorem 3.1's exact baseline, via logsumexp (independent of the module's shift by min f)."""
    f = np.asarray(f, float)
    if kind == "reward":
        return float(-tau * logsumexp(-f / tau, b=rho))
    return float(tau * logsumexp(f / tau, b=rho))


def _tilted_weights(f, s, tau, kind, rho) -> np.ndarray:
    f = np.asarray(f, float)
    z = (s - f) / tau if kind == "reward" else (f - s) / tau
    return rho * np.exp(z)


@pytest.fixture(scope="module")
def records_f():
    """Expected reward and normalised cost of a 50/50 policy on simulated JudgeBench records."""
    from racer_lib.records.simulate import simulate

    recs, _ = simulate("qwen3-4b", "judgebench", dim=0)
    reward = recs[["correct_instruct", "correct_reasoning"]].to_numpy(float).mean(axis=1)
    tokens = recs[["tokens_instruct", "tokens_reasoning"]].to_numpy(float).mean(axis=1)
    cost = tokens / recs["tokens_instruct"].to_numpy(float).mean()
    return {"reward": reward, "cost": cost}


# -- agreement with the cvxpy reference ----------------------------------------------------------

# (n, fractions of the point-mass KL -log rho_n(S), discrete f). Continuous f at n = 2000 has
# -log rho_n(S) ~ log 2000, where Clarabel itself becomes inaccurate (or fails) near the
# threshold, so the near-threshold case at n = 2000 uses values on a grid (many ties, a
# moderate threshold). The exact optimality of worst_case in that regime is checked by the
# duality certificate below instead.
CVXPY_CASES = [
    (20, (0.01, 0.3, 0.95), False),
    (200, (0.01, 0.3, 0.95), False),
    (2000, (0.01, 0.3), False),
    (2000, (0.6, 0.95), True),
]


def _compare_with_cvxpy(f, delta, kind, rho):
    wc = dro.worst_case(f, delta, kind, rho)
    value, weights = dro.worst_case_cvxpy(f, delta, kind, rho)
    r = _full(rho, len(f))
    # which side is off, if any: the reference's own KL and mass tell a stalled solve apart
    info = (
        f"worst_case value {wc.value!r}, cvxpy value {value!r}; "
        f"KL(cvxpy weights) - delta = {_kl(np.clip(weights, 0, None), r) - delta:.3g}, "
        f"KL(worst_case weights) - delta = {_kl(wc.weights, r) - delta:.3g}, "
        f"sum(cvxpy weights) - 1 = {weights.sum() - 1:.3g}"
    )
    assert wc.value == pytest.approx(value, rel=1e-6, abs=0), info
    assert np.max(np.abs(wc.weights - weights)) <= 1e-5, info
    return wc, value


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "dirichlet"])
@pytest.mark.parametrize(
    "n,fracs,discrete", CVXPY_CASES, ids=[f"n{n}{'-grid' if d else ''}" for n, _, d in CVXPY_CASES]
)
def test_worst_case_matches_cvxpy_random(n, fracs, discrete, uniform, kind):
    rng = np.random.default_rng([n, int(uniform), int(discrete), KINDS.index(kind)])
    rho = _rho(n, uniform, rng)
    f = rng.integers(1, 6, n) / 5.0 if discrete else rng.random(n)
    kl_max = _kl_max(f, _full(rho, n), kind)
    for frac in fracs:
        delta = frac * kl_max
        wc, _ = _compare_with_cvxpy(f, delta, kind, rho)
        # the reference's constraint is active too, and worst_case's KL is exactly delta
        assert wc.kl == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("frac", [0.01, 0.3, 0.95])
def test_worst_case_matches_cvxpy_simulated_records(records_f, kind, frac):
    f = records_f[kind]
    rho = np.full(len(f), 1.0 / len(f))
    delta = frac * _kl_max(f, rho, kind)
    _, value = _compare_with_cvxpy(f, delta, kind, None)
    mean = f.mean()
    assert (value < mean) if kind == "reward" else (value > mean)


# -- the tilted form of Theorem 3.1 --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "dirichlet"])
@pytest.mark.parametrize("n", [20, 200, 2000])
def test_worst_case_has_exact_tilted_form(n, uniform, kind):
    rng = np.random.default_rng([7, n, int(uniform), KINDS.index(kind)])
    rho = _rho(n, uniform, rng)
    r = _full(rho, n)
    f = rng.normal(size=n)
    mean = float(r @ f)
    kl_max = _kl_max(f, r, kind)
    sign = 1.0 if kind == "reward" else -1.0
    for frac in (1e-6, 0.01, 0.3, 0.9, 0.99):
        delta = frac * kl_max
        wc = dro.worst_case(f, delta, kind, rho)
        assert 0 < wc.tau < np.inf
        # the equality (not only proportionality) of Theorem 3.1, with the returned s and tau
        expected = _tilted_weights(f, wc.s, wc.tau, kind, r)
        np.testing.assert_allclose(wc.weights, expected, rtol=1e-9, atol=1e-300)
        assert wc.weights.sum() == pytest.approx(1.0, abs=1e-12)
        assert (wc.weights >= 0).all()
        # s is the exact baseline -tau log E exp(-f/tau) (or +tau log E exp(f/tau))
        assert wc.s == pytest.approx(_baseline(f, wc.tau, kind, r), rel=1e-10, abs=1e-12)
        # the constraint is active, and the reported kl is the true KL
        assert _kl(wc.weights, r) == pytest.approx(delta, rel=1e-8)
        assert wc.kl == pytest.approx(delta, rel=1e-9)
        assert wc.delta == delta and wc.kind == kind
        assert wc.value == pytest.approx(float(wc.weights @ f), rel=1e-12, abs=1e-14)
        # s_min <= mean <= s_max; the worst case is below (rewards) / above (costs) the mean
        if kind == "reward":
            assert wc.s <= mean and wc.value < mean
        else:
            assert wc.s >= mean and wc.value > mean
        # zero duality gap: the dual value s -/+ tau delta (a bound on every rho in the ball)
        # equals the primal value, so the weights are optimal, not just feasible
        assert wc.value == pytest.approx(wc.s - sign * wc.tau * delta, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_worst_case_beats_feasible_distributions(kind):
    """No distribution inside the ball is worse than the returned one."""
    rng = np.random.default_rng(11)
    n = 30
    rho = rng.dirichlet(np.ones(n))
    f = rng.random(n)
    delta = 0.2
    wc = dro.worst_case(f, delta, kind, rho)
    worse = 0
    for _ in range(2000):
        # random directions, scaled back into the ball by mixing with rho_n
        p = rng.dirichlet(np.full(n, 0.3))
        lo, hi = 0.0, 1.0
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if _kl(mid * p + (1 - mid) * rho, rho) <= delta:
                lo = mid
            else:
                hi = mid
        q = lo * p + (1 - lo) * rho
        v = q @ f
        worse += (v < wc.value - 1e-12) if kind == "reward" else (v > wc.value + 1e-12)
    assert worse == 0


@pytest.mark.parametrize("kind", KINDS)
def test_value_monotone_in_delta(kind):
    rng = np.random.default_rng(3)
    n = 50
    rho = rng.dirichlet(np.ones(n))
    f = rng.random(n)
    kl_max = _kl_max(f, rho, kind)
    deltas = np.concatenate([np.linspace(0, 0.99 * kl_max, 60), [kl_max, 1.5 * kl_max]])
    values = np.array([dro.worst_case(f, d, kind, rho).value for d in deltas])
    step = np.diff(values) if kind == "reward" else -np.diff(values)
    below = deltas[1:] < kl_max
    assert (step[below] < 0).all()  # strictly worse as the ball grows
    assert (step[~below] <= 1e-15).all()
    extreme = f.min() if kind == "reward" else f.max()
    assert values[-1] == extreme and values[-2] == extreme
    assert values[0] == pytest.approx(rho @ f, rel=1e-15)


# -- degenerate cases ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "dirichlet"])
def test_delta_zero_gives_rho_n(kind, uniform):
    rng = np.random.default_rng(5)
    rho = _rho(40, uniform, rng)
    r = _full(rho, 40)
    f = rng.random(40)
    wc = dro.worst_case(f, 0.0, kind, rho)
    np.testing.assert_array_equal(wc.weights, r)
    assert wc.value == pytest.approx(r @ f, rel=1e-15)
    assert wc.s == pytest.approx(r @ f, rel=1e-15)
    assert wc.kl == 0.0 and wc.tau == np.inf


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("delta", [0.0, 0.05, 1.0, 100.0])
def test_all_f_equal_gives_rho_n(kind, delta):
    rho = np.random.default_rng(6).dirichlet(np.ones(12))
    f = np.full(12, 0.37)
    wc = dro.worst_case(f, delta, kind, rho)
    np.testing.assert_array_equal(wc.weights, rho)
    assert wc.value == pytest.approx(0.37, rel=1e-15)
    assert wc.kl == 0.0
    # equal on the support is enough: a zero-probability sample does not count
    rho0 = np.array([0.0, 0.5, 0.5])
    wc0 = dro.worst_case([5.0, 1.0, 1.0], delta, kind, rho0)
    np.testing.assert_array_equal(wc0.weights, rho0)
    assert wc0.value == 1.0


def _point_mass_case(kind, uniform):
    """Values with a three-way tie at the worst value (and a tie at the other extreme)."""
    f = np.array([3.0, 1.0, 1.0, 2.0, 5.0, 4.0, 1.0, 2.0, 5.0, 4.0])
    if kind == "cost":
        f = 6.0 - f  # the three-way tie is now at the maximum, 5
    rho = None if uniform else np.random.default_rng(8).dirichlet(np.ones(10))
    return f, rho


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "dirichlet"])
def test_point_mass_at_and_above_threshold(kind, uniform):
    f, rho = _point_mass_case(kind, uniform)
    r = _full(rho, len(f))
    S = _worst_set(f, r, kind)
    assert S.sum() == 3
    threshold = -np.log(r[S].sum())
    expected = np.where(S, r, 0.0) / r[S].sum()
    extreme = f.min() if kind == "reward" else f.max()
    for delta in (threshold, threshold * (1 + 1e-12), 1.5 * threshold, 50.0):
        wc = dro.worst_case(f, delta, kind, rho)
        np.testing.assert_allclose(wc.weights, expected, rtol=1e-14, atol=0)
        assert (wc.weights[~S] == 0).all()
        assert wc.value == extreme
        assert wc.tau == 0.0
        assert wc.kl == pytest.approx(threshold, rel=1e-14)
        assert wc.kl == pytest.approx(_kl(wc.weights, r), rel=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "dirichlet"])
def test_just_below_threshold_is_interior_and_continuous(kind, uniform):
    f, rho = _point_mass_case(kind, uniform)
    r = _full(rho, len(f))
    S = _worst_set(f, r, kind)
    threshold = -np.log(r[S].sum())
    expected = np.where(S, r, 0.0) / r[S].sum()
    extreme = f.min() if kind == "reward" else f.max()
    for rel in (1e-3, 1e-6):
        delta = threshold * (1 - rel)
        wc = dro.worst_case(f, delta, kind, rho)
        assert 0 < wc.tau < np.inf
        assert wc.kl == pytest.approx(delta, rel=1e-9)
        assert (wc.weights[~S] > 0).all()  # not yet the point mass
        assert (wc.value > extreme) if kind == "reward" else (wc.value < extreme)
        # ... but close to it, and the tied worst samples keep rho_n's proportions
        assert np.max(np.abs(wc.weights - expected)) < 10 * rel
        np.testing.assert_allclose(
            wc.weights[S] / wc.weights[S].sum(), r[S] / r[S].sum(), rtol=1e-12
        )


@pytest.mark.parametrize("kind", KINDS)
def test_ties_share_weight_in_rho_n_proportions(kind):
    rng = np.random.default_rng(9)
    n = 60
    rho = rng.dirichlet(np.ones(n))
    f = rng.integers(0, 4, n).astype(float)  # heavy ties everywhere
    for delta in (0.01, 0.1, 0.5):
        wc = dro.worst_case(f, delta, kind, rho)
        for v in np.unique(f):
            m = f == v
            ratio = wc.weights[m] / rho[m]  # the tilt depends on f only: constant on ties
            np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)


def test_zero_probability_samples_are_ignored():
    # the smallest value has rho_n = 0: the worst value on the support is 1, not 0
    f, rho = [0.0, 1.0, 2.0], [0.0, 0.5, 0.5]
    wc = dro.worst_case(f, 10.0, "reward", rho)
    np.testing.assert_array_equal(wc.weights, [0.0, 1.0, 0.0])
    assert wc.value == 1.0 and wc.kl == pytest.approx(np.log(2), rel=1e-15)
    wc = dro.worst_case(f, 0.1, "reward", rho)
    assert wc.weights[0] == 0.0 and wc.kl == pytest.approx(0.1, rel=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_constant_f_is_exact_when_rho_n_sums_to_one_only_up_to_rounding(kind):
    # rho_n(S) = rho_n.sum() is then not exactly 1, so -log rho_n(S) is a rounding error, not 0:
    # still no tilt to find
    rng = np.random.default_rng(12)
    rho = next(r for r in (rng.dirichlet(np.ones(3)) for _ in range(1000)) if r.sum() != 1.0)
    for delta in (1e-12, 0.1, 10.0):
        wc = dro.worst_case([0.2, 0.2, 0.2], delta, kind, rho)
        np.testing.assert_array_equal(wc.weights, rho)
        assert wc.value == pytest.approx(0.2, rel=1e-15)
        assert wc.kl == 0.0 and wc.tau == np.inf and wc.iterations == 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "dirichlet"])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_few_samples_near_the_threshold_converge(n, uniform, kind):
    """Radii close to -log rho_n(S), where the KL saturates in tau, on very few samples."""
    rng = np.random.default_rng([29, n, int(uniform), KINDS.index(kind)])
    for _ in range(5):
        rho = _rho(n, uniform, rng)
        r = _full(rho, n)
        f = rng.random(n)
        sign = 1.0 if kind == "reward" else -1.0
        for frac in (0.9, 0.99, 0.9999):
            delta = frac * _kl_max(f, r, kind)
            wc = dro.worst_case(f, delta, kind, rho)
            assert wc.kl == pytest.approx(delta, rel=1e-9)
            assert _kl(wc.weights, r) == pytest.approx(delta, rel=1e-8)
            assert wc.value == pytest.approx(wc.s - sign * wc.tau * delta, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "dirichlet"])
def test_worst_case_does_not_depend_on_the_unit_of_f(kind, uniform):
    """Scaling f by c scales the value, s and tau by c and leaves the weights, at any c."""
    rng = np.random.default_rng([31, int(uniform), KINDS.index(kind)])
    rho = _rho(300, uniform, rng)
    f = rng.normal(size=300)
    base = dro.worst_case(f, 0.3, kind, rho)
    for c in (1e-250, 1e-100, 1e100, 1e250):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow or underflow on the way
            wc = dro.worst_case(c * f, 0.3, kind, rho)
        assert wc.kl == pytest.approx(0.3, rel=1e-9)
        np.testing.assert_allclose(wc.weights, base.weights, rtol=1e-9, atol=1e-15)
        assert wc.value == pytest.approx(c * base.value, rel=1e-9)
        assert wc.s == pytest.approx(c * base.s, rel=1e-9)
        assert wc.tau == pytest.approx(c * base.tau, rel=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_omitted_rho_n_is_the_uniform_rho_n(kind):
    # the omitted rho_n has its own (faster) arithmetic: same solution as the explicit one
    rng = np.random.default_rng(37)
    n = 500
    f = rng.integers(0, 50, n) / 7.0  # ties, including at the worst value
    uniform = np.full(n, 1.0 / n)
    kl_max = _kl_max(f, uniform, kind)
    for delta in (0.0, 1e-6, 0.1, 0.9 * kl_max, kl_max, 2 * kl_max):
        a, b = dro.worst_case(f, delta, kind), dro.worst_case(f, delta, kind, uniform)
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-9, atol=1e-15)
        for field in ("value", "s", "kl", "tau"):
            assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-9), field


def test_newton_halley_needs_few_evaluations():
    # the benchmark's instance (benchmarks/bench_dro.py): uniform f, n = 40,000, delta = 0.1
    f = np.random.default_rng(0).random(40_000)
    assert 1 <= dro.worst_case(f, 0.1).iterations <= 4
    rng = np.random.default_rng(41)
    for f in (rng.random(3000), rng.normal(size=3000), rng.integers(1, 6, 3000) / 5.0):
        for kind in KINDS:
            for rho in (None, rng.dirichlet(np.ones(3000))):
                kl_max = _kl_max(f, _full(rho, 3000), kind)
                for frac in (1e-4, 0.01, 0.1, 0.3):
                    wc = dro.worst_case(f, frac * kl_max, kind, rho)
                    assert 1 <= wc.iterations <= 5, (kind, frac, wc.iterations)
    # the closed forms need none
    assert dro.worst_case(f, 0.0).iterations == 0
    assert dro.worst_case(f, 100.0).iterations == 0


# -- tilted(), Algorithm 1's batch weights and the implied radius --------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tau", [0.05, 0.3, 1.0, 5.0])
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "dirichlet"])
def test_tilted_is_exact_worst_case_at_implied_radius(tau, kind, uniform):
    rng = np.random.default_rng([13, int(tau * 100), int(uniform)])
    n = 100
    rho = _rho(n, uniform, rng)
    r = _full(rho, n)
    f = rng.random(n)
    t = dro.tilted(f, tau, kind, rho)
    s = _baseline(f, tau, kind, r)
    assert t.tau == tau
    assert t.s == pytest.approx(s, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(t.weights, _tilted_weights(f, s, tau, kind, r), rtol=1e-10)
    assert t.kl == pytest.approx(_kl(t.weights, r), rel=1e-10)
    assert t.delta == t.kl > 0
    wc = dro.worst_case(f, t.kl, kind, rho)
    np.testing.assert_allclose(wc.weights, t.weights, rtol=1e-7, atol=1e-12)
    assert wc.value == pytest.approx(t.value, rel=1e-10)
    assert wc.tau == pytest.approx(tau, rel=1e-6)
    assert wc.s == pytest.approx(t.s, rel=1e-8)
    assert dro.implied_radius(f, tau, kind, rho) == t.kl


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tau", [0.01, 0.2, 1.0, 10.0])
def test_batch_weights_equal_tilted_on_the_batch(tau, kind):
    rng = np.random.default_rng([17, int(tau * 100)])
    f = rng.random(64) * 3
    w = dro.batch_weights(f, tau, kind)
    t = dro.tilted(f, tau, kind)
    np.testing.assert_allclose(w, t.weights, rtol=1e-10, atol=1e-300)
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    uniform = np.full(64, 1 / 64)
    assert dro.implied_radius(f, tau, kind) == pytest.approx(_kl(w, uniform), rel=1e-9)
    assert dro.batch_worst_case(f, tau, kind) == pytest.approx(float(w @ f), rel=1e-12)
    # and the batch is the exact worst case at that radius
    wc = dro.worst_case(f, dro.implied_radius(f, tau, kind), kind)
    assert dro.batch_worst_case(f, tau, kind) == pytest.approx(wc.value, rel=1e-9)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tau", [0.1, 1.0, 4.0])
def test_unnormalised_batch_weights_overweight_the_batch(tau, kind):
    rng = np.random.default_rng([19, int(tau * 10)])
    f = rng.random(50)
    raw = dro.batch_weights(f, tau, kind, normalize=False)
    m = f.mean()
    z = (m - f) / tau if kind == "reward" else (f - m) / tau
    np.testing.assert_allclose(raw, np.exp(z), rtol=1e-13)
    s = dro.tilted(f, tau, kind).s
    # mean of the raw factors: exp((mean - s_min)/tau) for rewards, exp((s_max - mean)/tau)
    # for costs, and >= 1 by Jensen (strictly, as f is not constant)
    gap = (m - s) if kind == "reward" else (s - m)
    assert raw.mean() == pytest.approx(np.exp(gap / tau), rel=1e-12)
    assert gap > 0 and raw.mean() > 1
    np.testing.assert_allclose(raw / raw.sum(), dro.batch_weights(f, tau, kind), rtol=1e-12)
    # constant batch: exactly 1
    np.testing.assert_allclose(
        dro.batch_weights(np.full(5, 2.0), tau, kind, normalize=False), 1.0, rtol=0, atol=0
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tau", [1e-3, 1.0])
def test_extreme_temperatures_do_not_overflow(kind, tau):
    # (f - mean) / tau up to 1e6: the tilt must be computed without overflow
    f = np.array([0.0, 400.0, 1000.0, 1000.0])
    S = f == (f.min() if kind == "reward" else f.max())
    point_mass = S / S.sum()
    w = dro.batch_weights(f, tau, kind)
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w, point_mass, rtol=0, atol=1e-15)
    t = dro.tilted(f, tau, kind)
    assert np.isfinite(t.weights).all() and np.isfinite(t.s)
    np.testing.assert_allclose(t.weights, point_mass, rtol=0, atol=1e-15)
    assert t.s == pytest.approx(_baseline(f, tau, kind, np.full(4, 0.25)), rel=1e-12)
    assert t.kl == pytest.approx(-np.log(S.mean()), rel=1e-12)
    # and a very hot temperature gives (almost) rho_n and a (almost) zero, non-negative radius
    hot = dro.tilted(f, 1e9, kind)
    np.testing.assert_allclose(hot.weights, 0.25, rtol=1e-6)
    assert 0 <= hot.kl < 1e-9


def test_kl_divergence_matches_rel_entr():
    rng = np.random.default_rng(23)
    p, q = rng.dirichlet(np.ones(30)), rng.dirichlet(np.ones(30))
    p[[3, 7]] = 0
    p /= p.sum()
    assert dro.kl_divergence(p, q) == pytest.approx(_kl(p, q), rel=1e-13)
    assert dro.kl_divergence(q, q) == 0.0


# -- bad input -----------------------------------------------------------------------------------

F = [0.2, 0.5, 0.9]

BAD_INPUTS = [
    ("f NaN", lambda: dro.worst_case([0.2, np.nan, 0.9], 0.1), r"f must be finite: f\[1\] = nan"),
    ("f inf", lambda: dro.worst_case([np.inf, 0.5], 0.1), r"f must be finite: f\[0\] = inf"),
    (
        "f -inf",
        lambda: dro.worst_case([0.5, -np.inf], 0.1, "cost"),
        r"f must be finite: f\[1\] = -inf",
    ),
    ("tilted f NaN", lambda: dro.tilted([np.nan], 1.0), r"f must be finite"),
    ("batch f inf", lambda: dro.batch_weights([1.0, np.inf], 1.0), r"f must be finite"),
    ("cvxpy f NaN", lambda: dro.worst_case_cvxpy([0.1, np.nan], 0.1), r"f must be finite"),
    ("delta < 0", lambda: dro.worst_case(F, -0.1), r"delta must be finite and >= 0 \(got -0.1\)"),
    ("delta NaN", lambda: dro.worst_case(F, np.nan), r"delta must be finite and >= 0"),
    ("max_iter 0", lambda: dro.worst_case(F, 0.1, max_iter=0), r"max_iter must be >= 1 \(got 0\)"),
    ("tilted tau 0", lambda: dro.tilted(F, 0.0), r"temperature tau must be > 0 \(got 0.0\)"),
    ("tilted tau < 0", lambda: dro.tilted(F, -1.0), r"temperature tau must be > 0 \(got -1.0\)"),
    ("tilted tau NaN", lambda: dro.tilted(F, np.nan), r"temperature tau must be > 0"),
    ("batch tau 0", lambda: dro.batch_weights(F, 0.0), r"temperature tau must be > 0"),
    (
        "batch tau < 0",
        lambda: dro.batch_weights(F, -2.0, "cost", normalize=False),
        r"temperature tau must be > 0",
    ),
    ("batch_worst_case tau", lambda: dro.batch_worst_case(F, 0.0), r"temperature tau must be > 0"),
    ("implied tau 0", lambda: dro.implied_radius(F, 0.0), r"temperature tau must be > 0"),
    ("implied tau < 0", lambda: dro.implied_radius(F, -0.5), r"temperature tau must be > 0"),
    (
        "rho negative",
        lambda: dro.worst_case(F, 0.1, rho=[0.6, 0.5, -0.1]),
        r"rho_n must be a probability vector: rho_n\[2\] = -0.1",
    ),
    (
        "rho NaN",
        lambda: dro.worst_case(F, 0.1, rho=[0.5, np.nan, 0.5]),
        r"rho_n must be a probability vector: rho_n\[1\] = nan",
    ),
    (
        "rho sum",
        lambda: dro.worst_case(F, 0.1, rho=[0.2, 0.2, 0.2]),
        r"rho_n must sum to 1 \(sums to 0.6",
    ),
    ("rho sum > 1", lambda: dro.tilted(F, 1.0, rho=[0.5, 0.5, 0.5]), r"rho_n must sum to 1"),
    (
        "rho length",
        lambda: dro.worst_case(F, 0.1, rho=[0.5, 0.5]),
        r"rho_n has shape \(2,\) but f has shape \(3,\)",
    ),
    (
        "rho length tilted",
        lambda: dro.implied_radius(F, 1.0, rho=[0.25] * 4),
        r"rho_n has shape \(4,\) but f has shape \(3,\)",
    ),
    (
        "kind",
        lambda: dro.worst_case(F, 0.1, "loss"),
        r"kind must be 'reward' \(worst = minimum\) or 'cost' \(worst = maximum\), not 'loss'",
    ),
    ("kind tilted", lambda: dro.tilted(F, 1.0, "Reward"), r"kind must be .*not 'Reward'"),
    ("kind batch", lambda: dro.batch_weights(F, 1.0, "min"), r"kind must be .*not 'min'"),
    (
        "f empty",
        lambda: dro.worst_case([], 0.1),
        r"f must be a non-empty 1-D array \(got shape \(0,\)\)",
    ),
    ("f empty batch", lambda: dro.batch_weights(np.array([]), 1.0), r"f must be a non-empty 1-D"),
    ("f 2-D", lambda: dro.worst_case(np.ones((2, 2)), 0.1), r"f must be a non-empty 1-D array"),
]


@pytest.mark.parametrize(
    "call,message", [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS]
)
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# -- tiny radii and infinite temperatures ---------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("delta", [1e-20, 1e-30])
def test_tiny_delta_stays_near_rho_n(kind, delta):
    f = np.random.default_rng(0).random(200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        wc = dro.worst_case(f, delta, kind)
    assert np.isfinite(wc.weights).all()
    np.testing.assert_allclose(wc.weights, 1 / 200, rtol=1e-6)
    assert wc.value == pytest.approx(f.mean(), rel=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_infinite_temperature_is_rejected_or_gives_rho_n(kind):
    f = np.array([0.1, 0.4, 0.7])
    try:
        t = dro.tilted(f, np.inf, kind)
    except ValueError:
        return
    np.testing.assert_allclose(t.weights, 1 / 3, rtol=1e-15)
    assert t.kl == 0.0
    assert t.s == pytest.approx(f.mean(), rel=1e-15)


# -- the checks of chapter 05 ---------------------------------------------------------------------


def test_half_router_values_are_the_fifty_fifty_policys_reward_and_cost():
    import pandas as pd

    recs = pd.DataFrame(
        {
            "correct_instruct": [True, False],
            "correct_reasoning": [False, True],
            "tokens_instruct": [10, 30],
            "tokens_reasoning": [50, 70],
        }
    )
    values = dro.half_router_values(recs)
    np.testing.assert_allclose(values["reward"], [0.5, 0.5])
    # cost unit: mean instruct tokens 20; c = tokens / 20, averaged over the two actions
    np.testing.assert_allclose(values["cost"], [(10 + 50) / 40, (30 + 70) / 40])


@pytest.mark.parametrize("kind", KINDS)
def test_against_cvxpy_reports_agreement_and_the_side_of_the_baseline(kind):
    rng = np.random.default_rng(4)
    f, rho = rng.random(30), rng.dirichlet(np.ones(30))
    row = dro.against_cvxpy(f, kind, 0.2, rho)
    assert (row["n"], row["kind"], row["delta"]) == (30, kind, 0.2)
    assert row["mean"] == pytest.approx(rho @ f)
    assert row["s"] == pytest.approx(_baseline(f, row["tau"], kind, rho), rel=1e-9)
    assert row["objective_rel_gap"] <= 1e-6 and row["weights_max_gap"] <= 1e-5
    assert row["tilted_form_max_gap"] <= 1e-9 and row["s_on_the_right_side"]
    assert (row["exact"] < row["mean"]) if kind == "reward" else (row["exact"] > row["mean"])


def test_cvxpy_comparison_covers_the_grid_in_the_generators_order():
    values = {"reward": np.linspace(0, 1, 12), "cost": np.linspace(1, 4, 12) ** 2}
    table = dro.cvxpy_comparison(np.random.default_rng(0), [8], [0.05, 0.5], values, "mine")
    assert (
        list(table["instance"])
        == ["random, uniform rho_n", "random, Dirichlet rho_n"] * 2 + ["mine"] * 4
    )
    assert list(table["kind"]) == ["reward", "cost"] * 2 + ["reward"] * 2 + ["cost"] * 2
    assert list(table["n"]) == [8] * 4 + [12] * 4
    rng = np.random.default_rng(0)
    first = rng.random(8)  # the first instance is the generator's first draw, uniform rho_n
    assert table["mean"][0] == pytest.approx(first.mean())
    assert table["mean"][4] == pytest.approx(values["reward"].mean())
    assert (table["objective_rel_gap"] <= 1e-6).all()


def test_batch_gap_compares_the_batches_with_the_exact_worst_case():
    rng = np.random.default_rng(1)
    values = {"reward": rng.random(200), "cost": rng.lognormal(0, 1, 200)}
    gaps = dro.batch_gap(values, [0.1, 1.0], [4, 64], 30, np.random.default_rng(2))
    assert len(gaps) == 2 * 2 * 2
    assert list(gaps.columns[:3]) == ["kind", "tau", "batch_size"]
    np.testing.assert_allclose(gaps["gap"], gaps["algorithm_mean"] - gaps["exact_worst_case"])
    for row in gaps.itertuples():
        f = values[row.kind]
        exact = dro.tilted(f, row.tau, row.kind)
        assert row.exact_worst_case == pytest.approx(exact.value)
        assert row.exact_delta == pytest.approx(_kl(exact.weights, _full(None, len(f))))
        assert row.mean == pytest.approx(f.mean())
    # The worst case is below the mean for rewards and above it for costs.
    rewards, costs = gaps[gaps["kind"] == "reward"], gaps[gaps["kind"] == "cost"]
    assert (rewards["exact_worst_case"] < rewards["mean"]).all()
    assert (costs["exact_worst_case"] > costs["mean"]).all()
    # A constant value leaves nothing to reweight: no gap, no radius.
    flat = dro.batch_gap({"cost": np.full(10, 2.0)}, [0.5], [4], 5, np.random.default_rng(0))
    assert flat["gap"].abs().max() <= 1e-12 and flat["batch_delta_mean"].max() <= 1e-12


def test_the_cvxpy_reference_solves_tied_long_tailed_costs_on_their_distinct_values():
    """Master seed 10's simulated costs (10,001 pairs, about 3,800 distinct long-tailed values)
    stalled Clarabel on every form of the program; on the distinct values, each an atom of
    summed mass, it agrees with Theorem 3.1's solution, and tied pairs share their atom's
    weight in proportion to rho_n."""
    rng = np.random.default_rng(10)
    f = np.round(rng.lognormal(0.5, 0.8, 10_001), 2)  # long-tailed, heavily tied
    value, weights = dro.worst_case_cvxpy(f, 0.01, "cost")
    exact = dro.worst_case(f, 0.01, "cost")
    assert value == pytest.approx(exact.value, rel=1e-6)
    assert np.abs(weights - exact.weights).max() < 1e-6
    tied = np.flatnonzero(f == f[0])
    assert len(tied) > 1 and np.ptp(weights[tied]) < 1e-12


def test_an_instance_the_reference_cannot_solve_is_shown_not_compared(monkeypatch):
    def stalls(*args, **kwargs):
        raise RuntimeError("cvxpy could not solve the KL-ball problem: ratio_form: solver error")

    monkeypatch.setattr(dro, "worst_case_cvxpy", stalls)
    row = dro.against_cvxpy(np.linspace(0, 1, 50), "cost", 0.1)
    assert np.isnan(row["cvxpy"]) and np.isnan(row["objective_rel_gap"])
    assert row["exact"] == pytest.approx(dro.worst_case(np.linspace(0, 1, 50), 0.1, "cost").value)
