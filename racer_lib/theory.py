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
  ``d''(lam) = beta + E_rho[w2^2 Var_{pi_lam}(c)] / beta``, so ``beta <= d'' <= beta + M^2K^2/beta``;
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

from . import dro


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
        return float(reward - lam * (cost - self.budget)
                     + self.beta * (self.rho @ entropy + lam**2 / 2))

    def dual(self, lam: float) -> float:
        """``d(lam) = max_pi L_beta(pi, lam)``."""
        return float(self.beta * self.rho @ logsumexp(self.logits(lam), axis=1)
                     + lam * self.budget + self.beta * lam**2 / 2)

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


def random_problem(rng: np.random.Generator, n: int = 50, beta: float = 0.5,
                   tau: float = 1.0, budget_share: float = 0.4) -> TabularProblem:
    """A random instance whose density ratios are Theorem 3.1's worst cases.

    Rewards are 0/1 with reasoning right more often; costs are 1 +- noise for instruct and
    2-5 for reasoning. ``w1`` and ``w2`` are ``n`` times the exact tilted distributions of a
    50/50 policy's expected reward (minimised) and cost (maximised) at temperature ``tau``.
    The budget sits ``budget_share`` of the way from All-Instruct to All-Reasoning worst-case
    cost, so the constraint binds.
    """
    rho = np.full(n, 1.0 / n)
    r = np.column_stack([rng.random(n) < 0.7, rng.random(n) < 0.85]).astype(float)
    c = np.column_stack([rng.uniform(0.6, 1.4, n), rng.uniform(2.0, 5.0, n)])
    w1 = n * dro.tilted(r.mean(axis=1), tau, "reward", rho).weights
    w2 = n * dro.tilted(c.mean(axis=1), tau, "cost", rho).weights
    lo, hi = rho @ (w2 * c[:, 0]), rho @ (w2 * c[:, 1])
    return TabularProblem(r, c, w1, w2, rho, float(lo + budget_share * (hi - lo)), beta)
