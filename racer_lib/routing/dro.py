"""Worst-case expectations over a KL ball: the exact solution and Algorithm 1's approximation.

For values ``f_i`` (a policy's expected reward or cost on pair ``i``) and the empirical
distribution ``rho_n``, the paper's Theorem 3.1 (appendix A.1) characterises

    min / max  sum_i rho(i) f_i   over   U(rho_n, delta) = {rho : KL(rho || rho_n) <= delta}.

Its KKT conditions give the tilted form with an exact baseline ``s`` (an equality, not only a
proportionality)::

    rho_min(i) = rho_n(i) exp((s_min - f_i) / tau),   s_min = -tau log E_rho_n[exp(-f / tau)]
    rho_max(i) = rho_n(i) exp((f_i - s_max) / tau),   s_max =  tau log E_rho_n[exp( f / tau)]

so ``s_min <= E_rho_n[f] <= s_max`` by Jensen's inequality. Theorem 3.1 leaves ``tau`` free;
:func:`worst_case` finds the ``tau`` that makes the KL constraint tight by a safeguarded Newton
solve in ``log(1 / tau)`` (the KL of the tilted distribution grows monotonically as ``tau``
shrinks, with derivative ``eta^2 Var_rho(f)`` in ``log eta``, ``eta = 1 / tau``), with Halley's
correction from the third central moment; each step costs one ``exp`` pass over the values.

Algorithm 1 instead fixes ``tau`` and replaces ``s`` by the batch mean (:func:`batch_weights`);
on its own batch that equals the exact worst case for the radius the temperature implies
(:func:`implied_radius`), which varies from batch to batch.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np

Kind = Literal["reward", "cost"]  # reward: the adversary minimises; cost: it maximises
_KINDS = ("reward", "cost")


@dataclass(frozen=True)
class WorstCase:
    """The solution of the KL-ball problem for one vector ``f``.

    ``weights`` is the worst-case distribution, ``value`` its expectation of ``f``, ``tau`` the
    temperature of the tilted form (0.0 when the ball reaches the point mass on the worst
    samples, ``inf`` when ``delta = 0`` or every ``f_i`` is equal), ``s`` the exact baseline of
    Theorem 3.1, and ``kl`` the divergence of ``weights`` from ``rho_n`` (equal to ``delta``
    whenever the constraint is active). ``iterations`` counts the evaluations of the tilt
    that :func:`worst_case` needed to find ``tau`` (0 for the closed-form cases).
    """

    weights: np.ndarray
    value: float
    tau: float
    s: float
    kl: float
    delta: float
    kind: str
    iterations: int = 0


def _check(f, rho, kind, uniform_as_none: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """``f`` as a finite float64 vector and ``rho_n`` as a probability vector (uniform when
    ``rho`` is None; left as None with ``uniform_as_none``, so that the uniform case can use
    means instead of a materialised ``1 / n`` array)."""
    f = np.asarray(f, dtype=np.float64)
    if f.ndim != 1 or len(f) == 0:
        raise ValueError(f"f must be a non-empty 1-D array (got shape {f.shape})")
    if not np.isfinite(f).all():
        i = int(np.flatnonzero(~np.isfinite(f))[0])
        raise ValueError(f"f must be finite: f[{i}] = {f[i]}")
    if kind not in _KINDS:
        raise ValueError(
            f"kind must be 'reward' (worst = minimum) or 'cost' (worst = maximum), not {kind!r}"
        )
    if rho is None:
        return f, None if uniform_as_none else np.full(len(f), 1.0 / len(f))
    rho = np.asarray(rho, dtype=np.float64)
    if rho.shape != f.shape:
        raise ValueError(
            f"rho_n has shape {rho.shape} but f has shape {f.shape}: "
            "one probability per value is needed"
        )
    if not np.isfinite(rho).all() or (rho < 0).any():
        i = int(np.flatnonzero(~np.isfinite(rho) | (rho < 0))[0])
        raise ValueError(f"rho_n must be a probability vector: rho_n[{i}] = {rho[i]}")
    if abs(rho.sum() - 1) > 1e-9:
        raise ValueError(f"rho_n must sum to 1 (sums to {rho.sum():.12g})")
    return f, rho


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """``KL(p || q) = sum_i p_i log(p_i / q_i)``, with ``0 log 0 = 0``."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    m = p > 0
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a @ b`` without BLAS: OpenBLAS splits a long dot product over threads, which on a
    busy machine costs milliseconds of waiting instead of microseconds of work."""
    return float(np.einsum("i,i->", a, b))


class _Tilt:
    """The tilt ``rho_n exp(-eta g)`` of values ``g >= 0`` (Theorem 3.1), one ``eta`` at a time.

    Each call costs one pass of ``exp`` over a reused buffer plus four reductions: the
    normaliser ``Z`` and the raw moments of ``g`` under the tilt, from which the KL, the mean,
    the variance (the derivative of the KL in ``log eta`` is ``eta^2 Var``) and the third
    central moment (its second derivative) follow. ``rho`` None is the uniform ``rho_n``.

    For a small tilt (``eta max g < 1``) the buffer holds ``expm1(-eta g)`` and the moments
    add ``E_rho_n[g^k]``, so ``log Z = log1p(E_rho_n[expm1(-eta g)])`` keeps
    ``KL = -eta E_w[g] - log Z`` accurate where ``KL ~ eta^2 Var(g) / 2`` would otherwise
    vanish in rounding.
    """

    def __init__(self, g: np.ndarray, rho: np.ndarray | None):
        self.g, self.rho = g, rho
        self.g2 = g * g
        self.g3 = self.g2 * g
        self.g_max = float(g.max())
        # N: the normaliser of the weights rho (n for the implicit all-ones weights of the
        # uniform case, so Z = S0 / N); base: sum_i rho_i g_i^k for k = 0..3
        if rho is None:
            self.norm = float(len(g))
            self.base = (self.norm, float(g.sum()), float(self.g2.sum()), float(self.g3.sum()))
        else:
            self.norm = 1.0
            self.base = (float(rho.sum()), _dot(rho, g), _dot(rho, self.g2), _dot(rho, self.g3))
        self.buf = np.empty_like(g)
        self.small = False
        self.s0 = 1.0

    def var0(self) -> float:
        """``Var_rho_n(g)``, the curvature of the KL at ``eta = 0``."""
        b0, b1, b2, _ = self.base
        m = b1 / b0
        var = b2 / b0 - m * m
        if var <= 1e-6 * b2 / b0:  # cancellation: centre first
            d = self.g - m
            var = (_dot(d, d) / len(d)) if self.rho is None else _dot(self.rho, d * d) / b0
        return var

    def __call__(self, eta: float) -> tuple[float, float, float, float, float]:
        """(KL, log Z, mean, variance, third central moment) of ``g`` under the tilt."""
        buf, g = self.buf, self.g
        np.multiply(g, -eta, out=buf)
        self.small = eta * self.g_max < 1.0  # then every e >= exp(-1): e = expm1 + 1 is exact
        if self.small:
            np.expm1(buf, out=buf)
        else:
            np.exp(buf, out=buf)
        if self.rho is not None:
            np.multiply(buf, self.rho, out=buf)
        s0, s1, s2, s3 = float(buf.sum()), _dot(buf, g), _dot(buf, self.g2), _dot(buf, self.g3)
        if self.small:
            log_z = float(np.log1p(s0 / self.norm))
            b0, b1, b2, b3 = self.base
            s0, s1, s2, s3 = s0 + b0, s1 + b1, s2 + b2, s3 + b3
        else:
            log_z = float(np.log(s0 / self.norm))
        self.s0 = s0
        mean, m2, m3 = s1 / s0, s2 / s0, s3 / s0
        var = m2 - mean * mean
        if var <= 1e-6 * m2:  # the raw moments cancel: centre on the mean first
            d = g - mean
            e = self._unnormalised()
            var, mu3 = _dot(e, d * d) / s0, _dot(e, d * d * d) / s0
        else:
            mu3 = m3 - 3.0 * mean * var - mean**3
        kl = max(-eta * mean - log_z, 0.0)
        return kl, log_z, mean, var, mu3

    def _unnormalised(self) -> np.ndarray:
        """``rho_n exp(-eta g)`` of the last call (as a new array)."""
        if not self.small:
            return self.buf.copy()
        return self.buf + (1.0 if self.rho is None else self.rho)

    def weights(self) -> np.ndarray:
        """The normalised tilt of the last call; hands over the buffer (no more calls)."""
        buf = self.buf
        if self.small:
            np.add(buf, 1.0 if self.rho is None else self.rho, out=buf)
        np.divide(buf, self.s0, out=buf)
        self.buf = None
        return buf


def _shift(f: np.ndarray, rho: np.ndarray | None, kind: Kind):
    """``g = (h - min h) / scale`` in ``[0, 1)`` for ``h = f`` (rewards) or ``-f`` (costs), the
    value the adversary minimises; 0 at the worst samples and, for a given ``rho_n``, off its
    support. ``scale`` is a power of two (so dividing by it is exact) above the range of
    ``h``: the tilt ``exp(-eta (h - min h))`` is ``exp(-(eta scale) g)``, and the moments of
    ``g`` neither overflow nor underflow whatever the unit of ``f``.

    Returns ``(min h, scale, g, S, -log rho_n(S), constant)``: the worst samples ``S`` (a
    mask), the KL of ``rho_n`` restricted to them, and whether ``f`` is constant on the support.
    """
    if rho is None:
        h_min = float(f.min()) if kind == "reward" else -float(f.max())
        g = f - h_min if kind == "reward" else -h_min - f
    else:
        support = rho > 0
        h = f if kind == "reward" else -f
        h_min = float(h[support].min())
        g = np.where(support, h - h_min, 0.0)
    exponent = math.frexp(float(g.max()))[1]  # g.max() < 2**exponent (or 0 when constant)
    np.multiply(g, math.ldexp(1.0, -exponent), out=g)
    scale = math.ldexp(1.0, exponent)
    if rho is None:
        worst = g <= 0
        n_worst = int(np.count_nonzero(worst))
        # -log rho_n(S), summed as it would be for the materialised uniform rho_n
        kl_max = -float(np.log(np.full(n_worst, 1.0 / len(f)).sum()))
        return h_min, scale, g, worst, kl_max, n_worst == len(f)
    worst = support & (g <= 0)
    kl_max = -float(np.log(rho[worst].sum()))
    # constant: rho_n(S) = 1 exactly, which its sum may miss by a rounding error
    return h_min, scale, g, worst, kl_max, not (g > 0).any()


def worst_case(
    f, delta: float, kind: Kind = "reward", rho=None, *, rtol: float = 1e-12, max_iter: int = 200
) -> WorstCase:
    """Exact worst case of ``E_rho[f]`` over ``{rho : KL(rho || rho_n) <= delta}`` (Thm 3.1).

    ``kind="reward"`` minimises (the reward term of Eq. (3)), ``kind="cost"`` maximises (the
    cost constraint). ``rho`` is ``rho_n`` (uniform when omitted). Degenerate cases are exact:
    ``delta = 0`` or all ``f`` equal give ``rho_n``; ``delta >= -log rho_n(S)``, the KL of the
    point mass on the set ``S`` of worst samples, gives ``rho_n`` restricted to ``S``.
    Otherwise ``tau`` solves ``KL(rho_tau || rho_n) = delta`` to ``rtol`` (relative), by
    safeguarded Newton steps with Halley's correction in ``log(1 / tau)``; ``iterations`` of
    the result counts the evaluations of the tilt.
    """
    f, rho = _check(f, rho, kind, uniform_as_none=True)
    if not np.isfinite(delta) or delta < 0:
        raise ValueError(f"the KL radius delta must be finite and >= 0 (got {delta})")
    sign = 1.0 if kind == "reward" else -1.0
    h_min, scale, g, worst, kl_max, constant = _shift(f, rho, kind)

    if delta == 0 or constant:  # nothing to move, or every value on the support is equal
        r = np.full(len(f), 1.0 / len(f)) if rho is None else rho.copy()
        mean = _dot(r, f)
        return WorstCase(r, mean, float("inf"), mean, 0.0, float(delta), kind)
    if delta >= kl_max:  # the ball contains the point mass on the worst samples
        if rho is None:
            w = worst / float(np.count_nonzero(worst))
        else:
            w = np.where(worst, rho, 0.0) / rho[worst].sum()
        value = sign * h_min  # the worst value itself
        return WorstCase(w, value, 0.0, value, kl_max, float(delta), kind)
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1 (got {max_iter})")

    # Solve KL(x) = delta in x = log eta (KL increases in x from 0 to kl_max, with derivative
    # eta^2 Var and second derivative 2 eta^2 Var - eta^3 mu_3), from the small-eta expansion
    # KL ~ eta^2 Var(g) / 2. Newton steps with Halley's correction where it is small; a bracket
    # [lo, hi] catches steps that leave it or stall, by bisection.
    tilt = _Tilt(g, rho)
    x = 0.5 * (math.log(2.0 * delta) - math.log(tilt.var0()))
    lo, hi, previous, iterations = -np.inf, np.inf, np.inf, 0
    for _ in range(max_iter):
        iterations += 1
        eta = float(np.exp(x))
        kl, log_z, _, var, mu3 = tilt(eta)
        gap = kl - delta
        if abs(gap) <= rtol * delta:
            break
        if gap > 0:
            hi = x
        else:
            lo = x
        if hi - lo < 1e-14:
            break
        d1 = eta * eta * var  # dKL/dx
        step = np.nan
        if d1 > 0:
            step = -gap / d1
            correction = gap * (2.0 * d1 - eta**3 * mu3) / (2.0 * d1 * d1)
            if abs(correction) <= 0.5:  # Halley: x - (KL - delta) / KL' / (1 - correction)
                step /= 1.0 - correction
            step = min(max(step, -2.0), 2.0)
        bracketed = np.isfinite(lo) and np.isfinite(hi)
        if lo < x + step < hi and not (bracketed and abs(gap) > 0.5 * abs(previous)):
            x = x + step
        elif bracketed:
            x = 0.5 * (lo + hi)
        else:
            x = x + (2.0 if gap < 0 else -2.0)
        previous = gap
    # the last evaluation is the answer: its weights are still in the tilt's buffer
    w = tilt.weights()
    tau = scale / eta  # eta is the inverse temperature of the scaled g
    # s for h: s_h = h_min - tau log Z; back to f's sign convention.
    s = sign * (h_min - tau * log_z)
    return WorstCase(w, _dot(w, f), tau, float(s), float(kl), float(delta), kind, iterations)


def tilted(f, tau: float, kind: Kind = "reward", rho=None) -> WorstCase:
    """The tilted distribution of Theorem 3.1 at a given temperature, with its exact baseline.

    This is the exact worst case for the radius ``delta = KL(tilted || rho_n)`` it implies.
    """
    f, rho = _check(f, rho, kind)
    if not tau > 0:
        raise ValueError(f"the temperature tau must be > 0 (got {tau})")
    sign = 1.0 if kind == "reward" else -1.0
    if np.isinf(tau):  # no tilt at all
        mean = float(rho @ f)
        return WorstCase(rho.copy(), mean, float("inf"), mean, 0.0, 0.0, kind)
    h_min, scale, g, _, _, _ = _shift(f, rho, kind)
    tilt = _Tilt(g, rho)
    kl, log_z, _, _, _ = tilt(scale / tau)
    w = tilt.weights()
    s = sign * (h_min - tau * log_z)
    return WorstCase(w, float(w @ f), float(tau), float(s), kl, kl, kind)


def batch_weights(f, tau: float, kind: Kind = "reward", normalize: bool = True) -> np.ndarray:
    """Algorithm 1's reweighting of a batch: the batch mean stands in for the baseline ``s``.

    Rewards: ``w_i = exp((mean(f) - f_i) / tau)``; costs: ``w_i = exp((f_i - mean(f)) / tau)``.
    With ``normalize`` (the algorithm's "proportional to") the weights sum to 1 and the baseline
    cancels; without it they are the raw factors, whose mean is ``exp((mean - s)/tau) >= 1``
    for rewards (Jensen), i.e. they overweight the batch as a whole.
    """
    f, _ = _check(f, None, kind, uniform_as_none=True)
    if not tau > 0:
        raise ValueError(f"the temperature tau must be > 0 (got {tau})")
    z = (f.mean() - f) / tau if kind == "reward" else (f - f.mean()) / tau
    if not normalize:
        return np.exp(z)
    e = np.exp(z - z.max())
    return e / e.sum()


def batch_worst_case(f, tau: float, kind: Kind = "reward") -> float:
    """Algorithm 1's reweighted batch mean ``sum_i w_i f_i`` with normalised weights."""
    return float(batch_weights(f, tau, kind) @ np.asarray(f, dtype=np.float64))


def implied_radius(f, tau: float, kind: Kind = "reward", rho=None) -> float:
    """The KL radius ``delta`` that temperature ``tau`` implies on this set of values."""
    return tilted(f, tau, kind, rho).kl


def worst_case_cvxpy(
    f, delta: float, kind: Kind = "reward", rho=None, tol: float = 1e-10
) -> tuple[float, np.ndarray]:
    """Reference solution of the convex program of appendix A.1 with cvxpy (Clarabel).

    Returns ``(value, weights)``. Used to check :func:`worst_case`; needs the ``cvxpy``
    package (book and test extras). The program is solved on standardised values
    ``(f - mean) / scale`` (same argmin, better scaled for long-tailed costs). Interior-point
    solvers can stall on exponential cones, so three equivalent forms of the KL constraint are
    tried in turn: in the density ratio ``w = rho / rho_n``, with ``rel_entr`` and with ``entr``.
    Pairs of equal value are one atom of the program (10,001 simulated costs hold about 3,800
    distinct values; on all of them Clarabel stalled at master seed 10), their weights split in
    proportion to ``rho`` afterwards.
    """
    f, rho = _check(f, rho, kind)
    # pairs of equal value share one atom (their weights stay in proportion to rho_n at the
    # optimum): the program on the distinct values is smaller and better conditioned
    values, atom = np.unique(f, return_inverse=True)
    mass = np.bincount(atom, weights=rho)
    value, weights = _worst_case_cvxpy_atoms(values, delta, kind, mass, tol)
    share = np.divide(rho, mass[atom], out=np.zeros_like(rho), where=mass[atom] > 0)
    return value, weights[atom] * share


def _worst_case_cvxpy_atoms(f, delta: float, kind: Kind, rho, tol: float):
    """:func:`worst_case_cvxpy` on distinct values ``f`` of masses ``rho``."""
    import cvxpy as cp

    m = float(rho @ f)
    scale = float(np.abs(f - m).max()) or 1.0
    g = (f - m) / scale
    sense = cp.Minimize if kind == "reward" else cp.Maximize
    n = len(f)

    def ratio_form():
        w = cp.Variable(n, nonneg=True)
        return (
            cp.Problem(sense((rho * g) @ w), [rho @ w == 1, rho @ -cp.entr(w) <= delta]),
            lambda: rho * w.value,
        )

    def rel_entr_form():
        p = cp.Variable(n, nonneg=True)
        return (
            cp.Problem(sense(g @ p), [cp.sum(p) == 1, cp.sum(cp.rel_entr(p, rho)) <= delta]),
            lambda: p.value,
        )

    def entr_form():
        p = cp.Variable(n, nonneg=True)
        log_rho = np.log(np.where(rho > 0, rho, 1.0))
        return (
            cp.Problem(sense(g @ p), [cp.sum(p) == 1, -cp.sum(cp.entr(p)) - p @ log_rho <= delta]),
            lambda: p.value,
        )

    statuses, fallback = [], []
    for form in (ratio_form, rel_entr_form, entr_form):
        problem, weights = form()
        try:
            with warnings.catch_warnings():  # "may be inaccurate" at 1e-10: handled below
                warnings.simplefilter("ignore", UserWarning)
                problem.solve(
                    solver="CLARABEL",
                    tol_gap_abs=tol,
                    tol_gap_rel=tol,
                    tol_feas=tol,
                    tol_ktratio=1e-8,
                )
        except cp.error.SolverError:
            statuses.append(f"{form.__name__}: solver error")
            continue
        statuses.append(f"{form.__name__}: {problem.status}")
        if problem.status == "optimal":
            return m + scale * float(problem.value), np.asarray(weights(), dtype=np.float64)
        if problem.status == "optimal_inaccurate":
            p = np.clip(np.asarray(weights(), dtype=np.float64), 0, None)
            p /= p.sum()
            if kl_divergence(p, rho) <= delta * (1 + 1e-6) + 1e-12:  # feasible after all
                fallback.append((float(p @ g), p))
    if fallback:  # the best feasible point is the one closest to the optimum
        value, p = (min if kind == "reward" else max)(fallback, key=lambda vp: vp[0])
        return m + scale * value, p
    raise RuntimeError("cvxpy could not solve the KL-ball problem: " + "; ".join(statuses))


def batch_weights_torch(f, tau, kind: Kind = "reward"):
    """:func:`batch_weights` (normalised) for a stack of batches, in torch, for the trainer.

    ``f`` has shape ``(P, B)`` (one batch per policy) and ``tau`` shape ``(P,)``; ``tau = inf``
    gives uniform weights (no reweighting). Each row equals ``batch_weights(f[p], tau[p])``.
    """
    import torch

    sign = -1.0 if kind == "reward" else 1.0
    centred = sign * (f - f.mean(dim=1, keepdim=True))
    z = torch.where(torch.isinf(tau)[:, None], torch.zeros_like(centred), centred / tau[:, None])
    return torch.softmax(z, dim=1)


# ----------------------------------------------------------------------------------------
# Numeric checks of Theorem 3.1 (chapter 05): the exact solution against cvxpy, and
# Algorithm 1's batch approximation against the exact worst case


def half_router_values(records) -> dict[str, np.ndarray]:
    """Per-pair values ``f`` of a router that reasons on half the pairs, on judge records:
    ``"reward"``, its expected correctness, and ``"cost"``, its expected cost ``c(z, a)`` in
    the records' own cost unit (:class:`racer_lib.records.schema.CostUnit`)."""
    from racer_lib.records.schema import CostUnit, correct_matrix

    cost = CostUnit.from_records(records).cost(records)  # c(z, a), shape (n, 2)
    return {"reward": correct_matrix(records).mean(axis=1), "cost": cost.mean(axis=1)}


def against_cvxpy(f, kind: Kind, delta: float, rho=None) -> dict[str, float]:
    """:func:`worst_case` next to :func:`worst_case_cvxpy` on one instance (Theorem 3.1).

    Columns: the size, kind and radius; the exact solution's ``tau``, baseline ``s`` and
    value, the mean ``E_rho_n[f]`` and cvxpy's value; the relative gap of the two objectives,
    the largest gap of their weights and of the exact weights to the tilted form
    ``rho_n exp(±(s - f) / tau)``; and whether ``s`` lies on the side of the mean the theorem
    says (below it for rewards, above it for costs). Where cvxpy stalls on every form of the
    program (Clarabel did on master seed 11's simulated costs), its value and the two gaps are
    NaN: the instance is shown, not compared.
    """
    exact = worst_case(f, delta, kind, rho)
    try:
        ref_value, ref_weights = worst_case_cvxpy(f, delta, kind, rho)
    except RuntimeError:  # the reference stalled on every form: no comparison on this one
        ref_value, ref_weights = float("nan"), np.full(len(f), np.nan)
    rho_n = np.full(len(f), 1 / len(f)) if rho is None else rho
    mean = float(rho_n @ f)
    sign = 1 if kind == "reward" else -1
    tilt = rho_n * np.exp(sign * (exact.s - f) / exact.tau)
    return {
        "n": len(f),
        "kind": kind,
        "delta": delta,
        "tau": exact.tau,
        "s": exact.s,
        "mean": mean,
        "exact": exact.value,
        "cvxpy": ref_value,
        "objective_rel_gap": abs(exact.value - ref_value) / abs(ref_value),
        "weights_max_gap": float(np.abs(exact.weights - ref_weights).max()),
        "tilted_form_max_gap": float(np.abs(tilt - exact.weights).max()),
        "s_on_the_right_side": bool(exact.s <= mean if kind == "reward" else exact.s >= mean),
    }


def cvxpy_comparison(
    rng: np.random.Generator, sizes, deltas, values: dict[str, np.ndarray], label: str
):
    """:func:`against_cvxpy` over a grid, one row per instance (column ``instance`` first).

    For each size and radius, one random ``f`` (uniform on [0, 1), drawn from ``rng``) as a
    reward under the uniform ``rho_n`` and as a cost under a Dirichlet ``rho_n``; then each
    kind's ``values`` (e.g. :func:`half_router_values`) at every radius, named ``label``.
    """
    import pandas as pd

    rows = []
    for n in sizes:
        for delta in deltas:
            f = rng.random(n)
            rho = rng.dirichlet(np.ones(n))
            rows.append({"instance": "random, uniform rho_n", **against_cvxpy(f, "reward", delta)})
            rows.append(
                {"instance": "random, Dirichlet rho_n", **against_cvxpy(f, "cost", delta, rho)}
            )
    for kind, f in values.items():
        for delta in deltas:
            rows.append({"instance": label, **against_cvxpy(f, kind, delta)})
    return pd.DataFrame(rows)


def batch_gap(
    values: dict[str, np.ndarray], taus, batch_sizes, n_batches: int, rng: np.random.Generator
):
    """Algorithm 1's reweighted batch value against the exact worst case at the same
    temperature (Theorem 3.1 vs :func:`batch_worst_case`), one row per kind, ``tau`` and batch
    size: the exact worst case on all values and the radius it implies, the mean and sd over
    ``n_batches`` batches (drawn with replacement from ``rng``) of the algorithm's value and of
    the radius each batch implies (:func:`implied_radius`), the gap (algorithm − exact) and
    the plain mean of the values."""
    import pandas as pd

    rows = []
    for kind, f in values.items():
        for tau in taus:
            full = tilted(f, tau, kind)
            for b in batch_sizes:
                idx = rng.integers(0, len(f), size=(n_batches, b))
                approx = np.array([batch_worst_case(f[i], tau, kind) for i in idx])
                radius = np.array([implied_radius(f[i], tau, kind) for i in idx])
                rows.append(
                    {
                        "kind": kind,
                        "tau": tau,
                        "batch_size": b,
                        "exact_worst_case": full.value,
                        "exact_delta": full.kl,
                        "algorithm_mean": approx.mean(),
                        "algorithm_sd": approx.std(),
                        "gap": approx.mean() - full.value,
                        "batch_delta_mean": radius.mean(),
                        "batch_delta_sd": radius.std(),
                        "mean": float(f.mean()),
                    }
                )
    return pd.DataFrame(rows)
