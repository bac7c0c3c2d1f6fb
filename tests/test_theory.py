"""Checks of ``racer_lib.routing.theory``: the tabular primal-dual of the paper's §4 (Theorems 4.1,
4.2).

Expected values come from generic numerics (scipy's optimiser, finite differences, random
policies), from the formulas of the paper evaluated here from ``M``, ``K`` and ``beta``, or from
identities of the Lagrangian; none is a number copied from a run of the code.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import optimize
from scipy.special import softmax

from racer_lib.routing.theory import TabularProblem, random_problem

BETAS = (0.25, 0.5, 1.0, 2.0)


def _problem(seed: int, n: int = 50, beta: float = 0.5) -> TabularProblem:
    return random_problem(np.random.default_rng(seed), n, beta)


def _random_policy(rng, n, concentration=1.0):
    return rng.dirichlet(np.full(2, concentration), size=n)


def _entropy(pi):
    pi = np.asarray(pi, float)
    return -np.sum(np.where(pi > 0, pi * np.log(np.where(pi > 0, pi, 1.0)), 0.0), axis=1)


def _lagrangian_by_hand(p: TabularProblem, pi, lam):
    """Eq. (6) written out independently of the module."""
    reward = np.sum(p.rho * p.w1 * np.sum(pi * p.r, axis=1))
    cost = np.sum(p.rho * p.w2 * np.sum(pi * p.c, axis=1))
    return reward - lam * (cost - p.budget) + p.beta * (np.sum(p.rho * _entropy(pi)) + lam**2 / 2)


def _kl_policies(p: TabularProblem, a, b):
    return float(np.sum(p.rho * np.sum(a * np.log(a / b), axis=1)))


# -- the instance generator ---------------------------------------------------------------------


def test_random_problem_is_a_valid_instance():
    p = _problem(0, n=40, beta=0.7)
    assert p.r.shape == p.c.shape == (40, 2)
    assert p.rho.sum() == pytest.approx(1.0, abs=1e-15)
    assert p.rho @ p.w1 == pytest.approx(1.0, rel=1e-12)  # density ratios of distributions
    assert p.rho @ p.w2 == pytest.approx(1.0, rel=1e-12)
    assert (p.c >= 0).all() and set(np.unique(p.r)) <= {0.0, 1.0}
    lo, hi = p.rho @ (p.w2 * p.c[:, 0]), p.rho @ (p.w2 * p.c[:, 1])
    assert lo < p.budget < hi  # All-Instruct feasible, All-Reasoning not: the budget binds
    assert p.lagrangian(p.policy(0.3), 0.3) == pytest.approx(
        _lagrangian_by_hand(p, p.policy(0.3), 0.3), rel=1e-13
    )


# -- the closed-form policy step ------------------------------------------------------------------


@pytest.mark.parametrize("lam", [0.0, 0.4, 3.0])
def test_policy_maximises_lagrangian_numerically(lam):
    p = _problem(1, n=6, beta=0.5)
    n = len(p.rho)

    def neg(x):  # one free logit per pair (the other is 0): any policy with full support
        return -p.lagrangian(softmax(np.column_stack([np.zeros(n), x]), axis=1), lam)

    best = None
    for x0 in (np.zeros(n), np.full(n, 3.0), np.full(n, -3.0)):
        res = optimize.minimize(neg, x0, method="BFGS", options={"gtol": 1e-11})
        # BFGS may stop short of 1e-9 (its line search, scipy's version): polish from there
        res = optimize.minimize(
            neg,
            res.x,
            method="Nelder-Mead",
            options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20_000},
        )
        if best is None or res.fun < best.fun:
            best = res
    pi_num = softmax(np.column_stack([np.zeros(n), best.x]), axis=1)
    pi = p.policy(lam)
    assert p.lagrangian(pi, lam) >= -best.fun - 1e-12  # nothing numeric beats the closed form
    assert p.lagrangian(pi, lam) == pytest.approx(-best.fun, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(pi, pi_num, atol=1e-4)
    np.testing.assert_allclose(pi.sum(axis=1), 1.0, rtol=1e-15)


@pytest.mark.parametrize("beta", BETAS)
def test_policy_beats_random_and_perturbed_policies(beta):
    p = _problem(2, n=30, beta=beta)
    rng = np.random.default_rng(20)
    for lam in (0.0, 0.5, 5.0):
        pi = p.policy(lam)
        top = p.lagrangian(pi, lam)
        for conc in (0.2, 1.0, 20.0):
            for _ in range(100):
                assert p.lagrangian(_random_policy(rng, 30, conc), lam) < top
        for eps in (1e-2, 1e-4):  # small moves away from the maximiser lose too
            for _ in range(50):
                d = rng.normal(size=30) * eps
                moved = np.clip(pi + np.column_stack([d, -d]), 1e-300, 1)
                moved /= moved.sum(axis=1, keepdims=True)
                assert p.lagrangian(moved, lam) < top


# -- the dual function ----------------------------------------------------------------------------

LAM_GRID = np.linspace(0.0, 20.0, 41)


@pytest.mark.parametrize("beta", BETAS)
def test_dual_equals_lagrangian_at_policy(beta):
    p = _problem(3, beta=beta)
    for lam in LAM_GRID:
        d = p.dual(lam)
        assert d == pytest.approx(p.lagrangian(p.policy(lam), lam), rel=1e-11, abs=1e-11)
        assert d == pytest.approx(_lagrangian_by_hand(p, p.policy(lam), lam), rel=1e-11, abs=1e-11)


@pytest.mark.parametrize("beta", BETAS)
def test_dual_grad_and_hess_match_finite_differences(beta):
    p = _problem(4, beta=beta)
    h = 1e-5
    for lam in LAM_GRID[1:]:
        fd_grad = (p.dual(lam + h) - p.dual(lam - h)) / (2 * h)
        assert p.dual_grad(lam) == pytest.approx(fd_grad, rel=1e-6, abs=1e-7)
        fd_hess = (p.dual_grad(lam + h) - p.dual_grad(lam - h)) / (2 * h)
        assert p.dual_hess(lam) == pytest.approx(fd_hess, rel=1e-6, abs=1e-7)
    # one-sided at the boundary lam = 0
    g0 = (p.dual(h) - p.dual(0.0)) / h
    assert p.dual_grad(0.0) == pytest.approx(g0, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("beta", BETAS)
def test_dual_hess_bounds(seed, beta):
    p = _problem(seed, beta=beta)
    M, K = p.c.max(), p.w2.max()
    grid = np.concatenate([LAM_GRID, np.linspace(0, 0.5, 51)])
    hess = np.array([p.dual_hess(lam) for lam in grid])
    assert (hess >= beta).all()
    # costs differ between actions: strictly above beta (at large lam the policy is so sharp
    # that the variance term underflows next to beta, hence the small-lam part of the grid)
    assert (hess[grid <= 0.5] > beta).all()
    assert (hess <= beta + M**2 * K**2 / beta).all()


# -- Theorem 4.1: strict concavity / convexity, unique saddle point -------------------------------


@pytest.mark.parametrize("beta", BETAS)
def test_lagrangian_strictly_concave_in_policy(beta):
    p = _problem(5, n=25, beta=beta)
    rng = np.random.default_rng(50)
    for lam in (0.0, 1.0, 7.0):
        for _ in range(200):
            a, b = _random_policy(rng, 25), _random_policy(rng, 25)
            if rng.random() < 0.3:  # pairs that differ on a single row
                b = a.copy()
                b[rng.integers(25)] = rng.dirichlet([1.0, 1.0])
            mid = 0.5 * (a + b)
            gap = p.lagrangian(mid, lam) - 0.5 * (p.lagrangian(a, lam) + p.lagrangian(b, lam))
            # linear terms cancel: the gap is beta times the entropy's Jensen gap, > 0
            ent_gap = beta * p.rho @ (_entropy(mid) - 0.5 * (_entropy(a) + _entropy(b)))
            if np.abs(a - b).max() > 1e-3:
                assert gap > 0
            assert gap == pytest.approx(ent_gap, rel=1e-6, abs=1e-13)


@pytest.mark.parametrize("beta", BETAS)
def test_lagrangian_strictly_convex_in_lambda(beta):
    p = _problem(6, n=25, beta=beta)
    rng = np.random.default_rng(60)
    for _ in range(200):
        pi = _random_policy(rng, 25)
        l1, l2 = rng.uniform(0, 20, size=2)
        gap = 0.5 * (p.lagrangian(pi, l1) + p.lagrangian(pi, l2)) - p.lagrangian(pi, (l1 + l2) / 2)
        assert gap > 0
        assert gap == pytest.approx(beta * (l1 - l2) ** 2 / 8, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("seed,beta", [(0, 1.0), (1, 2.0), (2, 1.0), (3, 0.5)])
def test_unique_saddle_point_from_many_starts(seed, beta):
    p = _problem(seed, beta=beta)
    pi_star, lam_star = p.saddle_point()
    steps = int(np.ceil(np.log(1e-14 / 20) / np.log(p.rate))) + 10  # q^T * 20 < 1e-14
    finals = []
    for lam0 in np.linspace(0.0, 20.0, 11):
        lam_T = p.iterate(lam0, steps)[-1]
        finals.append(lam_T)
        np.testing.assert_allclose(p.policy(lam_T), pi_star, atol=1e-11)
    np.testing.assert_allclose(finals, lam_star, atol=1e-11)
    # saddle inequalities: L(pi, lam*) <= L(pi*, lam*) <= L(pi*, lam) for lam >= 0
    rng = np.random.default_rng(seed)
    centre = p.lagrangian(pi_star, lam_star)
    for lam in np.linspace(0, 20, 21):
        assert p.lagrangian(pi_star, lam) >= centre - 1e-12
    for _ in range(200):
        assert p.lagrangian(_random_policy(rng, len(p.rho)), lam_star) <= centre + 1e-12


def test_saddle_point_minimises_dual():
    p = _problem(7, beta=0.5)
    _, lam_star = p.saddle_point()
    grid = np.linspace(0, 5, 5001)
    values = np.array([p.dual(lam) for lam in grid])
    assert lam_star == pytest.approx(grid[values.argmin()], abs=1e-3 + 1e-9)
    assert p.dual(lam_star) <= values.min() + 1e-12


# -- Theorem 4.2 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("beta", BETAS)
def test_step_size_rate_and_bound_formulas(seed, beta):
    p = _problem(seed, beta=beta)
    M, K = p.c.max(), p.w2.max()
    assert p.M == M and p.K == K
    mk = M**2 * K**2
    eta = 2 * beta / (mk + 2 * beta**2)
    q = mk / (mk + 2 * beta**2)
    assert p.step_size == pytest.approx(eta, rel=1e-14)
    assert p.rate == pytest.approx(q, rel=1e-14)
    assert 0 < q < 1
    # q is the worst contraction |1 - eta d''| over beta <= d'' <= beta + M^2K^2/beta
    assert 1 - eta * beta == pytest.approx(q, rel=1e-12)
    assert eta * (beta + mk / beta) - 1 == pytest.approx(q, rel=1e-12)
    t = np.arange(6)
    b = p.bound(t, 3.0, 0.5)
    np.testing.assert_allclose(b["lam"], q**t * 2.5, rtol=1e-13)
    np.testing.assert_allclose(b["kl"], mk / (2 * beta**2) * q ** (2 * t) * 2.5**2, rtol=1e-12)
    # iterate() is the projected step lam <- [lam - eta d'(lam)]_+, d' written out here
    lams = p.iterate(4.0, 25)
    lam = 4.0
    for t in range(25):
        grad = p.budget + beta * lam - p.rho @ (p.w2 * np.sum(p.policy(lam) * p.c, axis=1))
        lam = max(0.0, lam - eta * grad)
        assert lams[t + 1] == pytest.approx(lam, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("beta", BETAS)
def test_theorem_4_2_bounds_hold_along_the_iterates(seed, beta):
    p = _problem(seed, beta=beta)
    pi_star, lam_star = p.saddle_point()
    q = p.rate
    T = 400
    t = np.arange(T + 1)
    for lam0 in (0.0, 2.0, 20.0):
        lams = p.iterate(lam0, T)
        bound = p.bound(t, lam0, lam_star)
        err = np.abs(lams - lam_star)
        kl = np.array([_kl_policies(p, p.policy(lam), pi_star) for lam in lams])
        np.testing.assert_allclose(
            kl, [p.policy_kl(lam, lam_star) for lam in lams], rtol=1e-8, atol=1e-15
        )
        # slack for float error only
        assert (err <= bound["lam"] * (1 + 1e-9) + 1e-13).all()
        assert (kl <= bound["kl"] * (1 + 1e-9) + 1e-13).all()
        # observed per-step contraction never exceeds q
        assert (err[1:] <= q * err[:-1] * (1 + 1e-9) + 1e-13).all()
        assert err[-1] < err[0] or err[0] == 0


def test_larger_step_can_break_the_contraction():
    """The contraction check is not vacuous: with a step 3 / d''(lam*) the local factor is ~2."""
    p = _problem(0, beta=0.5)
    _, lam_star = p.saddle_point()
    lams = p.iterate(lam_star + 1e-4, 3, eta=3 / p.dual_hess(lam_star))
    err = np.abs(lams - lam_star)
    assert (err[1:] > p.rate * err[:-1]).all()
    assert err[1] == pytest.approx(2 * err[0], rel=1e-2)


# -- the saddle point ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("beta", BETAS)
def test_saddle_point_binding_budget(seed, beta):
    p = _problem(seed, beta=beta)
    pi_star, lam_star = p.saddle_point()
    assert lam_star > 0
    assert abs(p.dual_grad(lam_star)) <= 1e-12
    np.testing.assert_allclose(pi_star, p.policy(lam_star), rtol=0, atol=0)
    # the regularised solution overshoots the budget by exactly beta lam*
    worst_cost = p.rho @ (p.w2 * np.sum(pi_star * p.c, axis=1))
    assert worst_cost == pytest.approx(p.budget + beta * lam_star, rel=1e-12)
    assert worst_cost > p.budget


@pytest.mark.parametrize("beta", BETAS)
def test_saddle_point_loose_budget_gives_zero(beta):
    base = _problem(8, beta=beta)
    # a budget above every worst-case cost: the constraint never binds
    loose = TabularProblem(
        base.r,
        base.c,
        base.w1,
        base.w2,
        base.rho,
        float(base.rho @ (base.w2 * base.c.max(axis=1))) + 0.5,
        beta,
    )
    pi_star, lam_star = loose.saddle_point()
    assert lam_star == 0.0
    assert loose.dual_grad(0.0) >= 0
    np.testing.assert_allclose(
        pi_star, softmax(base.w1[:, None] * base.r / beta, axis=1), rtol=1e-13
    )
    assert loose.rho @ (loose.w2 * np.sum(pi_star * loose.c, axis=1)) <= loose.budget
    # the projected iterates reach 0 from any start, and stay there
    for lam0 in (0.0, 1.0, 10.0):
        lams = loose.iterate(lam0, 2000)
        assert lams[-1] == 0.0
    # exactly on the boundary case d'(0) = 0 the branch also gives 0
    edge = TabularProblem(base.r, base.c, base.w1, base.w2, base.rho, base.expected_cost(0.0), beta)
    assert edge.saddle_point()[1] == pytest.approx(0.0, abs=1e-12)


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [0.0, -0.5, np.nan])
def test_bad_beta_raises(beta):
    p = _problem(0, n=5)
    with pytest.raises(ValueError, match=r"beta must be > 0 \(got "):
        TabularProblem(p.r, p.c, p.w1, p.w2, p.rho, p.budget, beta)
    with pytest.raises(ValueError, match=r"beta must be > 0"):
        random_problem(np.random.default_rng(0), 5, beta)


def test_negative_costs_raise():
    p = _problem(0, n=5)
    c = p.c.copy()
    c[2, 1] = -1e-9
    with pytest.raises(ValueError, match=r"costs must be non-negative"):
        TabularProblem(p.r, c, p.w1, p.w2, p.rho, p.budget, p.beta)


# -- small beta: the policies underflow ----------------------------------------------------------


def test_policy_kl_finite_for_small_beta():
    p = _problem(0, beta=0.01)
    pi_star, lam_star = p.saddle_point()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kl = p.policy_kl(lam_star + 1.0, lam_star)
    assert np.isfinite(kl) and kl > 0


# -- the checks of chapter 05 ---------------------------------------------------------------------


def test_random_policy_rows_are_distributions():
    from racer_lib.routing.theory import random_policy

    pi = random_policy(np.random.default_rng(0), 7)
    assert pi.shape == (7, 2) and (pi >= 0).all()
    np.testing.assert_allclose(pi.sum(axis=1), 1.0)
    np.testing.assert_allclose(pi[:, 1], np.random.default_rng(0).random(7))


@pytest.mark.parametrize("beta", (0.5, 2.0))
def test_saddle_point_checks_find_the_curvatures_and_one_limit(beta):
    from racer_lib.routing.theory import saddle_point_checks

    p = _problem(3, n=20, beta=beta)
    checks = saddle_point_checks(p, np.random.default_rng(1), steps=300, n_starts=5, n_points=10)
    assert checks["lambda_star"] == pytest.approx(p.saddle_point()[1])
    assert checks["min_concavity_margin"] > 0
    assert "min_convexity_margin" not in checks  # an identity, tested above, not a check
    assert checks["limit_spread"] < 1e-8 and checks["limit_minus_lambda_star"] < 1e-8
    assert checks["closed_form_vs_optimiser"] < 1e-4


def test_saddle_point_checks_would_see_a_wrong_limit():
    """With too few steps the starts do not meet: the check reports the spread it sees."""
    from racer_lib.routing.theory import saddle_point_checks

    checks = saddle_point_checks(
        _problem(3, n=20), np.random.default_rng(1), steps=1, n_starts=5, n_points=4
    )
    assert checks["limit_spread"] > 1e-3 and checks["limit_minus_lambda_star"] > 1e-3


def test_theorem41_checks_one_row_per_beta_and_instance():
    from racer_lib.routing.theory import theorem41_checks

    table = theorem41_checks(np.random.default_rng(0), [0.5, 1.0], 2, 10, 200, 3)
    rows = list(zip(table["beta"], table["instance"], strict=True))
    assert rows == [(0.5, 0), (0.5, 1), (1.0, 0), (1.0, 1)]
    assert list(table.columns[:3]) == ["beta", "instance", "lambda_star"]
    again = theorem41_checks(np.random.default_rng(0), [0.5, 1.0], 2, 10, 200, 3)
    assert table.equals(again)  # the generator alone decides the instances


def test_convergence_run_traces_the_errors_under_theorem_42():
    from racer_lib.routing.theory import convergence_run

    p = _problem(5, n=30, beta=1.0)
    _, lam_star = p.saddle_point()
    trace, rate = convergence_run(p, lam_star + 2.0, steps=50)
    assert list(trace["t"]) == list(range(51))
    assert trace["lambda_error"][0] == pytest.approx(2.0)
    assert trace["policy_kl"][0] == pytest.approx(
        _kl_policies(p, p.policy(lam_star + 2.0), p.policy(lam_star))
    )
    np.testing.assert_allclose(trace["bound_lambda"], p.rate ** np.arange(51) * 2.0)
    assert rate["under_bound_lambda"] and rate["under_bound_kl"]
    assert 0 < rate["observed_rate"] <= rate["bound_rate_q"] == pytest.approx(p.rate)
    assert (rate["M"], rate["K"]) == (p.M, p.K)


def test_theorem42_checks_lay_out_every_iteration_of_every_run():
    from racer_lib.routing.theory import theorem42_checks

    conv, rates = theorem42_checks(np.random.default_rng(0), [0.5, 2.0], 2, 10, 20)
    assert len(conv) == 2 * 2 * 21 and len(rates) == 4
    assert list(conv.columns[:3]) == ["beta", "instance", "t"]
    assert list(rates.columns[:2]) == ["beta", "instance"]
    assert rates["under_bound_lambda"].all() and rates["under_bound_kl"].all()
    first = conv[(conv["beta"] == 0.5) & (conv["instance"] == 0)]
    assert 1 <= first["lambda_error"].iloc[0] <= 5  # started U(1, 5) above lam*


def test_cost_scale_scales_the_costs_and_shrinks_q():
    base = random_problem(np.random.default_rng(4), 30, 0.5)
    small = random_problem(np.random.default_rng(4), 30, 0.5, cost_scale=0.2)
    np.testing.assert_allclose(small.c, 0.2 * base.c)
    np.testing.assert_array_equal(small.r, base.r)
    assert small.M == pytest.approx(0.2 * base.M)
    assert small.K < base.K  # a milder tilt at the same tau
    assert small.rate < base.rate


def test_chapter_03_convergence_instances_give_the_bound_teeth():
    """With the chapter's defaults (costs x 0.2, beta 0.5 .. 2) q <= 0.9, every run is under
    the bound, and the steps a million-fold reduction takes are near what the bound allows
    (within a factor 2: the bound is far from vacuous)."""
    from racer_lib.routing.theory import theorem42_checks

    conv, rates = theorem42_checks(np.random.default_rng(0), [0.5, 1.0, 2.0], 2, 30, 200, 0.2)
    assert (rates["bound_rate_q"] <= 0.9).all()
    assert rates["under_bound_lambda"].all() and rates["under_bound_kl"].all()
    assert rates["steps_within_bound"].all()
    q = rates["bound_rate_q"].to_numpy()
    np.testing.assert_array_equal(rates["steps_bound"], np.ceil(np.log(1e6) / -np.log(q)))
    assert (rates["steps_observed"] >= rates["steps_bound"] / 2).all()
    # steps_observed is the first t whose error is a millionth of the first
    first = conv[(conv["beta"] == 0.5) & (conv["instance"] == 0)]
    err = first["lambda_error"].to_numpy()
    t = int(rates["steps_observed"].iloc[0])
    assert err[t] <= err[0] / 1e6 < err[t - 1]


def test_steps_within_bound_fails_when_the_run_is_too_short():
    from racer_lib.routing.theory import convergence_run

    p = random_problem(np.random.default_rng(5), 30, 0.5, cost_scale=0.2)
    _, lam_star = p.saddle_point()
    _, rate = convergence_run(p, lam_star + 2.0, steps=5)
    assert np.isnan(rate["steps_observed"]) and not rate["steps_within_bound"]


def test_decay_table_picks_the_checkpoints_and_flags_an_error_above_its_bound():
    from racer_lib.routing.theory import decay_table, theorem42_checks

    conv, _ = theorem42_checks(np.random.default_rng(1), [1.0], 1, 20, 30, 0.2)
    table = decay_table(conv, [0, 10, 99])
    assert list(table["t"]) == [0, 10]  # 99 is past the run
    assert table["under_bound"].all()
    assert list(table.columns) == [
        "beta",
        "instance",
        "t",
        "lambda_error",
        "bound_lambda",
        "policy_kl",
        "bound_kl",
        "under_bound",
    ]
    broken = conv.assign(lambda_error=np.where(conv["t"] == 10, 2 * conv["bound_lambda"], 0.0))
    assert list(decay_table(broken, [0, 10])["under_bound"]) == [True, False]
