"""The tabular primal–dual of the paper's §4 and appendix A.3, for numeric checks of the theory.

Setting: finitely many pairs ``z_i`` with probabilities ``rho_i``; for both actions ``a`` the
reward ``r(z, a)`` and cost ``c(z, a)``; density ratios ``w1 = p_rho_min / p_rho`` (reward) and
``w2 = p_rho_max / p_rho`` (cost); budget ``C`` and entropy weight ``beta``. The regularised
Lagrangian (Eq. (6), written out in appendix A.2) is::

    L_beta(pi, lam) = E_rho[w1 <pi, r>] - lam (E_rho[w2 <pi, c>] - C)
                      + beta (E_rho[H(pi(.|z))] + lam^2 / 2)

Appendix A.3 gives:

* the closed-form policy step (its Eq. for ``pi_{t+1}``)::

      pi_lam(a|z) ∝ exp((w1(z) r(z, a) - lam w2(z) c(z, a)) / beta)

* the dual function ``d(lam) = max_pi L_beta = beta E_rho[log Q(z, lam)] + lam C + beta lam^2/2``
  with ``d'(lam) = C + beta lam - E_rho E_{pi_lam}[w2 c]`` and
  ``d''(lam) = beta + E_rho[w2^2 Var_{pi_lam}(c)] / beta``, so
  ``beta <= d'' <= beta + M^2K^2/beta``;
* the projected dual step ``lam <- [lam - eta d'(lam)]_+``, i.e.
  ``[lam + eta (E[w2 c] - C - beta lam)]_+``, with ``eta = 2 beta / (M^2 K^2 + 2 beta^2)``;
* Theorem 4.2: ``KL(pi_t || pi*) <= M^2K^2 / (2 beta^2) q^(2t) (lam_0 - lam*)^2`` with
  ``q = M^2K^2 / (M^2K^2 + 2 beta^2)``, ``M = max c`` and ``K = max w2``.

We follow the appendix's dual step, not main-text Eq. (7), whose objective does not depend on
the variable it maximises over. Indexing: ``policy(lam_t)`` is the policy of the current dual
iterate; the proof bounds ``KL(policy(lam_t) || pi*)`` by ``M^2K^2/(2 beta^2) (lam_t - lam*)^2``,
which is what :meth:`TabularProblem.bound` states.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy.special import logsumexp, softmax

from racer_lib.routing import dro


@dataclass
class TabularProblem:
    """One instance of the tabular problem; arrays have one row per pair, one column per action."""

    r: np.ndarray  # (n, 2) reward r(z, a)
    c: np.ndarray  # (n, 2) cost c(z, a) >= 0
    w1: np.ndarray  # (n,) reward density ratio, E_rho[w1] = 1
    w2: np.ndarray  # (n,) cost density ratio, E_rho[w2] = 1
    rho: np.ndarray  # (n,) probabilities of the pairs
    budget: float  # C
    beta: float
    M: float = field(init=False)
    K: float = field(init=False)

    def __post_init__(self):
        self.r, self.c = np.asarray(self.r, float), np.asarray(self.c, float)
        self.w1, self.w2 = np.asarray(self.w1, float), np.asarray(self.w2, float)
        self.rho = np.asarray(self.rho, float)
        if not self.beta > 0:
            raise ValueError(f"beta must be > 0 (got {self.beta})")
        if (self.c < 0).any():
            raise ValueError("costs must be non-negative")
        self.M, self.K = float(self.c.max()), float(self.w2.max())

    # -- the closed forms of appendix A.3 -------------------------------------------------

    def logits(self, lam: float) -> np.ndarray:
        return (self.w1[:, None] * self.r - lam * self.w2[:, None] * self.c) / self.beta

    def policy(self, lam: float) -> np.ndarray:
        """``pi_lam(a|z)``, the maximiser of ``L_beta(., lam)`` (shape (n, 2))."""
        return softmax(self.logits(lam), axis=1)

    def lagrangian(self, pi: np.ndarray, lam: float) -> float:
        """``L_beta(pi, lam)`` for a policy table ``pi`` (rows sum to 1)."""
        pi = np.asarray(pi, float)
        entropy = -np.sum(np.where(pi > 0, pi * np.log(np.where(pi > 0, pi, 1)), 0), axis=1)
        reward = self.rho @ (self.w1 * np.sum(pi * self.r, axis=1))
        cost = self.rho @ (self.w2 * np.sum(pi * self.c, axis=1))
        return float(
            reward - lam * (cost - self.budget) + self.beta * (self.rho @ entropy + lam**2 / 2)
        )

    def dual(self, lam: float) -> float:
        """``d(lam) = max_pi L_beta(pi, lam)``."""
        return float(
            self.beta * self.rho @ logsumexp(self.logits(lam), axis=1)
            + lam * self.budget
            + self.beta * lam**2 / 2
        )

    def expected_cost(self, lam: float) -> float:
        """``E_rho E_{pi_lam}[w2 c]``: the worst-case cost of the policy ``pi_lam``."""
        return float(self.rho @ (self.w2 * np.sum(self.policy(lam) * self.c, axis=1)))

    def dual_grad(self, lam: float) -> float:
        return self.budget + self.beta * lam - self.expected_cost(lam)

    def dual_hess(self, lam: float) -> float:
        pi = self.policy(lam)
        mean = np.sum(pi * self.c, axis=1, keepdims=True)
        var = np.sum(pi * (self.c - mean) ** 2, axis=1)
        return float(self.beta + self.rho @ (self.w2**2 * var) / self.beta)

    # -- the algorithm and its guarantee ----------------------------------------------------

    @property
    def step_size(self) -> float:
        """``eta = 2 beta / (M^2 K^2 + 2 beta^2)`` (appendix A.3, Step 2)."""
        return 2 * self.beta / (self.M**2 * self.K**2 + 2 * self.beta**2)

    @property
    def rate(self) -> float:
        """``q = M^2 K^2 / (M^2 K^2 + 2 beta^2)``, the contraction factor of Theorem 4.2."""
        mk = self.M**2 * self.K**2
        return mk / (mk + 2 * self.beta**2)

    def saddle_point(self) -> tuple[np.ndarray, float]:
        """``(pi*, lam*)``: ``lam*`` minimises the strongly convex ``d`` over ``lam >= 0``."""
        if self.dual_grad(0.0) >= 0:
            lam = 0.0
        else:
            hi = 1.0
            while self.dual_grad(hi) < 0:
                hi *= 2
            lam = optimize.brentq(self.dual_grad, 0.0, hi, xtol=1e-15, rtol=1e-15)
        return self.policy(lam), float(lam)

    def iterate(self, lam0: float, steps: int, eta: float | None = None) -> np.ndarray:
        """Dual iterates ``lam_0 .. lam_T`` of ``lam <- [lam - eta d'(lam)]_+``."""
        eta = self.step_size if eta is None else eta
        lams = np.empty(steps + 1)
        lams[0] = lam0
        for t in range(steps):
            lams[t + 1] = max(0.0, lams[t] - eta * self.dual_grad(lams[t]))
        return lams

    def log_policy(self, lam: float) -> np.ndarray:
        """``log pi_lam(a|z)``, computed as a log-softmax (finite where ``pi`` underflows)."""
        z = self.logits(lam)
        return z - logsumexp(z, axis=1, keepdims=True)

    def policy_kl(self, lam: float, lam_star: float) -> float:
        """``KL(pi_lam || pi_lam*) = E_rho KL(pi_lam(.|z) || pi_lam*(.|z))``."""
        log_p, log_q = self.log_policy(lam), self.log_policy(lam_star)
        return float(self.rho @ np.sum(np.exp(log_p) * (log_p - log_q), axis=1))

    def bound(self, t: np.ndarray, lam0: float, lam_star: float) -> dict[str, np.ndarray]:
        """Theorem 4.2's bounds after ``t`` steps: on ``|lam_t - lam*|`` and on the policy KL."""
        t = np.asarray(t, float)
        lam = self.rate**t * abs(lam0 - lam_star)
        kl = self.M**2 * self.K**2 / (2 * self.beta**2) * lam**2
        return {"lam": lam, "kl": kl}


def random_problem(
    rng: np.random.Generator,
    n: int = 50,
    beta: float = 0.5,
    tau: float = 1.0,
    budget_share: float = 0.4,
    cost_scale: float = 1.0,
) -> TabularProblem:
    """A random instance whose density ratios are Theorem 3.1's worst cases.

    Rewards are 0/1 with reasoning right more often; costs are 1 +- noise for instruct and
    2-5 for reasoning, times ``cost_scale`` (a smaller cost unit: smaller ``M`` and, at the
    same ``tau``, a milder tilt and smaller ``K``, so a smaller contraction ``q``). ``w1`` and
    ``w2`` are ``n`` times the exact tilted distributions of a 50/50 policy's expected reward
    (minimised) and cost (maximised) at temperature ``tau``.
    The budget sits ``budget_share`` of the way from All-Instruct to All-Reasoning worst-case
    cost, so the constraint binds.
    """
    rho = np.full(n, 1.0 / n)
    r = np.column_stack([rng.random(n) < 0.7, rng.random(n) < 0.85]).astype(float)
    c = cost_scale * np.column_stack([rng.uniform(0.6, 1.4, n), rng.uniform(2.0, 5.0, n)])
    w1 = n * dro.tilted(r.mean(axis=1), tau, "reward", rho).weights
    w2 = n * dro.tilted(c.mean(axis=1), tau, "cost", rho).weights
    lo, hi = rho @ (w2 * c[:, 0]), rho @ (w2 * c[:, 1])
    return TabularProblem(r, c, w1, w2, rho, float(lo + budget_share * (hi - lo)), beta)


# ----------------------------------------------------------------------------------------
# The numeric checks of chapter 05: Theorem 4.1 (one saddle point) and Theorem 4.2 (linear
# convergence) on random instances


def random_policy(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random policy table, shape ``(n, 2)``: ``pi(1|z)`` uniform on [0, 1) per pair."""
    p = rng.random(n)
    return np.column_stack([1 - p, p])


def saddle_point_checks(
    P: TabularProblem, rng: np.random.Generator, steps: int, n_starts: int, n_points: int = 50
) -> dict[str, float]:
    """Theorem 4.1 on one instance: ``L_beta`` is strictly concave in ``pi`` and strictly
    convex in ``lam``, and its saddle point is unique.

    * ``min_concavity_margin``: over ``n_points`` random pairs of policies (at a random
      ``lam``), the least amount by which ``L_beta`` at their midpoint exceeds the mean of its
      values (positive: strictly concave). Convexity in ``lam`` is not checked: ``L_beta`` is
      linear in ``lam`` plus ``beta lam^2 / 2``, so its midpoint margin is the identity
      ``beta (l1 - l2)^2 / 8 > 0`` (a test of the code, in ``tests/test_theory.py``);
    * ``limit_spread`` and ``limit_minus_lambda_star``: the dual iteration started from
      ``n_starts`` random ``lam_0`` reaches one limit, ``lam*``. The step is
      ``1 / d''(lam*)``, matched to the curvature at ``lam*`` (a few dozen steps instead of
      the thousands the theorem's conservative step needs);
    * ``closed_form_vs_optimiser``: a generic optimiser (L-BFGS-B on the logits) finds the
      same maximiser of ``L_beta(., lam*)`` as the closed form of appendix A.3.
    """
    n = len(P.rho)
    pi_star, lam_star = P.saddle_point()
    lam = rng.uniform(0, 5)
    concave = min(
        P.lagrangian((p1 + p2) / 2, lam) - (P.lagrangian(p1, lam) + P.lagrangian(p2, lam)) / 2
        for p1, p2 in ((random_policy(rng, n), random_policy(rng, n)) for _ in range(n_points))
    )
    eta = 1 / P.dual_hess(lam_star)
    limits = [P.iterate(l0, steps, eta)[-1] for l0 in rng.uniform(0, 20, n_starts)]
    res = optimize.minimize(
        lambda x: (
            -P.lagrangian(
                np.column_stack([1 - 1 / (1 + np.exp(-x)), 1 / (1 + np.exp(-x))]), lam_star
            )
        ),
        np.zeros(n),
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15},
    )
    generic = 1 / (1 + np.exp(-res.x))
    return {
        "lambda_star": lam_star,
        "min_concavity_margin": concave,
        "limit_spread": float(np.ptp(limits)),
        "limit_minus_lambda_star": float(np.max(np.abs(np.array(limits) - lam_star))),
        "closed_form_vs_optimiser": float(np.abs(generic - pi_star[:, 1]).max()),
    }


def theorem41_checks(
    rng: np.random.Generator, betas, n_instances: int, n_pairs: int, steps: int, n_starts: int
):
    """:func:`saddle_point_checks` on ``n_instances`` :func:`random_problem` instances of
    ``n_pairs`` pairs per entropy weight ``beta``, one row each (``beta``, ``instance``
    first)."""
    import pandas as pd

    rows = []
    for beta in betas:
        for k in range(n_instances):
            P = random_problem(rng, n_pairs, beta)
            rows.append(
                {"beta": beta, "instance": k, **saddle_point_checks(P, rng, steps, n_starts)}
            )
    return pd.DataFrame(rows)


def convergence_run(P: TabularProblem, lam0: float, steps: int, reduction: float = 1e6):
    """Theorem 4.2 on one instance: the dual iterates from ``lam0`` with the theorem's step.

    Returns ``(trace, rate)``: ``trace`` has one row per iteration ``t = 0..steps`` with
    ``lambda_error`` ``|lam_t - lam*|``, ``policy_kl`` ``KL(pi_{lam_t} || pi*)`` and both
    bounds (:meth:`TabularProblem.bound`); ``rate`` holds ``M``, ``K``, the bound's
    contraction ``q``, the observed one (the geometric mean of successive error ratios, over
    errors above rounding), whether every error lies under its bound, and the iterations each
    needs to shrink the dual error ``reduction``-fold: ``steps_observed`` (the first ``t``
    with ``|lam_t - lam*| <= |lam_0 - lam*| / reduction``; NaN if not within ``steps``) and
    ``steps_bound`` (``ceil(log(reduction) / log(1/q))``). Where ``q`` is near one the bound
    says little; ``steps_within_bound`` is false where the iterates are slower than the
    theorem allows (``steps_observed > steps_bound``, or not there within ``steps``).
    """
    import pandas as pd

    _, lam_star = P.saddle_point()
    lams = P.iterate(lam0, steps)
    t = np.arange(steps + 1)
    bound = P.bound(t, lam0, lam_star)
    err = np.abs(lams - lam_star)
    kl = np.array([P.policy_kl(lam, lam_star) for lam in lams])
    trace = pd.DataFrame(
        {
            "t": t,
            "lambda_error": err,
            "policy_kl": kl,
            "bound_lambda": bound["lam"],
            "bound_kl": bound["kl"],
        }
    )
    ok = err > 1e-12 * max(1, lam_star)
    observed = np.exp(np.mean(np.log(err[1:][ok[1:] & ok[:-1]] / err[:-1][ok[1:] & ok[:-1]])))
    rate = {
        "M": P.M,
        "K": P.K,
        "bound_rate_q": P.rate,
        "observed_rate": observed,
        "under_bound_lambda": bool((err <= bound["lam"] * (1 + 1e-9) + 1e-15).all()),
        "under_bound_kl": bool((kl <= bound["kl"] * (1 + 1e-9) + 1e-15).all()),
        "steps_observed": _first_below(err, err[0] / reduction),
        "steps_bound": int(np.ceil(np.log(reduction) / -np.log(P.rate))),
    }
    rate["steps_within_bound"] = bool(rate["steps_observed"] <= rate["steps_bound"])
    return trace, rate


def _first_below(values: np.ndarray, level: float) -> float:
    """The first index at which ``values <= level`` (NaN if none)."""
    hit = np.flatnonzero(values <= level)
    return float(hit[0]) if len(hit) else float("nan")


def theorem42_checks(
    rng: np.random.Generator,
    betas,
    n_instances: int,
    n_pairs: int,
    steps: int,
    cost_scale: float = 1.0,
    reduction: float = 1e6,
):
    """:func:`convergence_run` on ``n_instances`` :func:`random_problem` instances (costs
    times ``cost_scale``) per ``beta``, each started ``U(1, 5)`` above its ``lam*``. Returns
    ``(convergence, rates)``: every iteration of every run, and one row of rates per run
    (``beta``, ``instance`` first)."""
    import pandas as pd

    traces, rates = [], []
    for beta in betas:
        for k in range(n_instances):
            P = random_problem(rng, n_pairs, beta, cost_scale=cost_scale)
            _, lam_star = P.saddle_point()
            trace, rate = convergence_run(P, lam_star + rng.uniform(1, 5), steps, reduction)
            trace.insert(0, "instance", k)
            trace.insert(0, "beta", beta)
            traces.append(trace)
            rates.append({"beta": beta, "instance": k, **rate})
    return pd.concat(traces, ignore_index=True), pd.DataFrame(rates)


def decay_table(convergence, checkpoints):
    """Observed errors next to Theorem 4.2's bounds at the iterations ``checkpoints`` (those
    within the run), one row per ``beta``, instance and checkpoint of a
    :func:`theorem42_checks` trace: ``lambda_error``, ``bound_lambda``, ``policy_kl``,
    ``bound_kl`` and ``under_bound`` (both errors at or under their bounds, float slack)."""
    rows = convergence[convergence["t"].isin(list(checkpoints))].copy()
    rows["under_bound"] = (rows["lambda_error"] <= rows["bound_lambda"] * (1 + 1e-9) + 1e-15) & (
        rows["policy_kl"] <= rows["bound_kl"] * (1 + 1e-9) + 1e-15
    )
    columns = ["beta", "instance", "t", "lambda_error", "bound_lambda", "policy_kl", "bound_kl"]
    return rows[[*columns, "under_bound"]].reset_index(drop=True)
