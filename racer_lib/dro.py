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
shrinks, with derivative ``eta^2 Var_rho(f)`` in ``log eta``, ``eta = 1 / tau``).

Algorithm 1 instead fixes ``tau`` and replaces ``s`` by the batch mean (:func:`batch_weights`);
on its own batch that equals the exact worst case for the radius the temperature implies
(:func:`implied_radius`), which varies from batch to batch.
"""

from __future__ import annotations

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
    whenever the constraint is active).
    """

    weights: np.ndarray
    value: float
    tau: float
    s: float
    kl: float
    delta: float
    kind: str


def _check(f, rho, kind) -> tuple[np.ndarray, np.ndarray]:
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
        return f, np.full(len(f), 1.0 / len(f))
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


def _tilt(g: np.ndarray, rho: np.ndarray, eta: float):
    """Tilt ``rho exp(-eta g)`` of ``g >= 0``; returns (weights, log Z, KL, mean g, var g).

    For a small tilt, ``log Z = log1p(E_rho[expm1(-eta g)])`` keeps ``KL = -eta E_w[g] - log Z``
    accurate where ``KL ~ eta^2 Var(g) / 2`` would otherwise vanish in rounding.
    """
    t = -eta * g
    if eta * g.max() < 1.0:  # small tilt: every e >= exp(-1), so e = expm1 + 1 keeps precision
        em1 = np.expm1(t)
        log_z = float(np.log1p(rho @ em1))
        e = rho * (em1 + 1.0)
    else:
        e = rho * np.exp(t)
        log_z = float(np.log(e.sum()))
    w = e / e.sum()
    mean = float(w @ g)
    var = float(w @ (g - mean) ** 2)
    kl = max(-eta * mean - log_z, 0.0)
    return w, log_z, kl, mean, var


def worst_case(
    f, delta: float, kind: Kind = "reward", rho=None, *, rtol: float = 1e-12, max_iter: int = 200
) -> WorstCase:
    """Exact worst case of ``E_rho[f]`` over ``{rho : KL(rho || rho_n) <= delta}`` (Thm 3.1).

    ``kind="reward"`` minimises (the reward term of Eq. (3)), ``kind="cost"`` maximises (the
    cost constraint). ``rho`` is ``rho_n`` (uniform when omitted). Degenerate cases are exact:
    ``delta = 0`` or all ``f`` equal give ``rho_n``; ``delta >= -log rho_n(S)``, the KL of the
    point mass on the set ``S`` of worst samples, gives ``rho_n`` restricted to ``S``.
    """
    f, rho = _check(f, rho, kind)
    if not np.isfinite(delta) or delta < 0:
        raise ValueError(f"the KL radius delta must be finite and >= 0 (got {delta})")
    sign = 1.0 if kind == "reward" else -1.0
    h = sign * f  # minimise h
    h_min = float(h[rho > 0].min())
    g = np.where(rho > 0, h - h_min, 0.0)  # >= 0 on the support, 0 at the worst samples
    mean = float(rho @ f)
    support = rho > 0
    worst = support & (g <= 0)
    kl_max = -float(np.log(rho[worst].sum()))  # KL of rho_n restricted to the worst samples

    if delta == 0 or kl_max == 0:  # nothing to move, or every value on the support is equal
        return WorstCase(rho.copy(), mean, float("inf"), mean, 0.0, float(delta), kind)
    if delta >= kl_max:  # the ball contains the point mass on the worst samples
        w = np.where(worst, rho, 0.0) / rho[worst].sum()
        value = float(w @ f)
        return WorstCase(w, value, 0.0, value, kl_max, float(delta), kind)

    def kl(x):  # KL of the tilt with eta = exp(x), and its derivative in x
        eta = np.exp(x)
        w, log_z, value, _, v = _tilt(g, rho, eta)
        return value, eta * eta * v, w, log_z

    # Newton in x = log eta from the small-eta expansion KL ~ eta^2 Var(g) / 2, keeping a
    # bracket [lo, hi] (KL increases in x from 0 to kl_max) and bisecting when a step leaves it.
    var0 = float(rho @ (g - rho @ g) ** 2)
    x = 0.5 * np.log(2 * delta / var0)
    lo, hi = -np.inf, np.inf
    for _ in range(max_iter):
        val, der, w, log_z = kl(x)
        gap = val - delta
        if abs(gap) <= rtol * delta:
            break
        if gap > 0:
            hi = x
        else:
            lo = x
        step = x - gap / der if der > 0 else np.nan
        if lo < step < hi:
            x = step
        elif np.isfinite(lo) and np.isfinite(hi):
            x = 0.5 * (lo + hi)
        else:
            x = x + (2.0 if gap < 0 else -2.0)
        if hi - lo < 1e-14:
            break
    val, _, w, log_z = kl(x)
    eta = float(np.exp(x))
    tau = 1.0 / eta
    # s for h: s_h = h_min - tau log Z; back to f's sign convention.
    s = sign * (h_min - tau * log_z)
    return WorstCase(w, float(w @ f), tau, float(s), float(val), float(delta), kind)


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
    h = sign * f
    h_min = float(h[rho > 0].min())
    g = np.where(rho > 0, h - h_min, 0.0)
    w, log_z, kl, _, _ = _tilt(g, rho, 1.0 / tau)
    s = sign * (h_min - tau * log_z)
    return WorstCase(w, float(w @ f), float(tau), float(s), kl, kl, kind)


def batch_weights(f, tau: float, kind: Kind = "reward", normalize: bool = True) -> np.ndarray:
    """Algorithm 1's reweighting of a batch: the batch mean stands in for the baseline ``s``.

    Rewards: ``w_i = exp((mean(f) - f_i) / tau)``; costs: ``w_i = exp((f_i - mean(f)) / tau)``.
    With ``normalize`` (the algorithm's "proportional to") the weights sum to 1 and the baseline
    cancels; without it they are the raw factors, whose mean is ``exp((mean - s)/tau) >= 1``
    for rewards (Jensen), i.e. they overweight the batch as a whole.
    """
    f, _ = _check(f, None, kind)
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
    """
    import cvxpy as cp

    f, rho = _check(f, rho, kind)
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
# Numeric checks of Theorem 3.1 (chapter 03): the exact solution against cvxpy, and
# Algorithm 1's batch approximation against the exact worst case


def half_router_values(records) -> dict[str, np.ndarray]:
    """Per-pair values ``f`` of a router that reasons on half the pairs, on judge records:
    ``"reward"``, its expected correctness, and ``"cost"``, its expected cost ``c(z, a)`` in
    the records' own cost unit (:class:`racer_lib.records.CostUnit`)."""
    from .records import CostUnit, correct_matrix

    cost = CostUnit.from_records(records).cost(records)  # c(z, a), shape (n, 2)
    return {"reward": correct_matrix(records).mean(axis=1), "cost": cost.mean(axis=1)}


def against_cvxpy(f, kind: Kind, delta: float, rho=None) -> dict[str, float]:
    """:func:`worst_case` next to :func:`worst_case_cvxpy` on one instance (Theorem 3.1).

    Columns: the size, kind and radius; the exact solution's ``tau``, baseline ``s`` and
    value, the mean ``E_rho_n[f]`` and cvxpy's value; the relative gap of the two objectives,
    the largest gap of their weights and of the exact weights to the tilted form
    ``rho_n exp(±(s - f) / tau)``; and whether ``s`` lies on the side of the mean the theorem
    says (below it for rewards, above it for costs).
    """
    exact = worst_case(f, delta, kind, rho)
    ref_value, ref_weights = worst_case_cvxpy(f, delta, kind, rho)
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
