"""One statistical protocol for every finding of the book and every row of the report.

A claim's status is a decision with a stated error rate. The rules, fixed before any result is
seen (``book/rerun.md`` and the report's page state them for the reader):

* **The replicate is a seed** that re-draws everything random: the simulated records, the
  split, the routers' initialisation and the batch order (:func:`replicate_seeds`). A claim's
  data are one number per seed (a paired difference, a cost ratio, ...); pairs, budgets or runs
  that share one record draw are averaged within their seed, never counted as replicates.
* **Emergent claims need** :data:`MIN_SEEDS` **seeds** (the paper's count). With fewer, a test
  is not run and the verdict is :data:`INCONCLUSIVE` (``too few seeds``).
* **Every test is one-sided at** :data:`ALPHA` (2.5 %), on Student's t over the seeds; the
  interval shown is the two-sided ``1 - 2 ALPHA`` (95 %) t-interval of the mean, the
  one-sided bounds of the tests. The t-interval, not a percentile bootstrap: at ten seeds the
  bootstrap is anti-conservative (the tests measure both on simulated nulls).
* **A directional claim** (:func:`directional`: the mean of ``sign * (d - threshold)`` is
  positive) *holds* when its lower bound is above zero, *fails* when the interval supports the
  opposite side (the upper bound at or below zero), and is *inconclusive* otherwise.
* **An equivalence claim** ("matches", "alike", "within", "level"; :func:`equivalent`) is
  Schuirmann's two one-sided tests (TOST, statsmodels' ``DescrStatsW.ttost_mean``) with a
  margin fixed in the claims table: it *holds* when the interval lies inside
  ``(-margin, +margin)``, *fails* when it lies wholly outside, and is inconclusive otherwise.
  A one-sided bound ("stays within budget": :func:`directional` with a threshold) is the
  non-inferiority half of it.
* **A claim over a family** ("every budget", "every judge", "concave at every point";
  :func:`every`) tests every member and corrects with Holm's method
  (:func:`statsmodels.stats.multitest.multipletests`): it *holds* when every member's
  adjusted p-value is below :data:`ALPHA`, *fails* when some member's adjusted p-value for
  the opposite side is, and is inconclusive otherwise.
* **A claim of several parts** ("fewer violations at equal accuracy"; :func:`conjunction`) is an
  intersection-union test: it *holds* when every part holds, *fails* when one fails, and is
  inconclusive otherwise (no correction: its p-value is the largest of the parts').

The error rate so stated (:data:`ALPHA` per decision, family-wise under Holm) is checked
before it is trusted: ``tests/test_verdicts.py`` measures each rule on simulated nulls, and
``make bench-verdicts`` on null and planted-signal builds (``results/bench/verdicts.json``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

__all__ = [
    "ALPHA",
    "FAILS",
    "HOLDS",
    "INCONCLUSIVE",
    "MIN_SEEDS",
    "REPLICATE_STRIDE",
    "Verdict",
    "conjunction",
    "directional",
    "equivalent",
    "every",
    "holm",
    "most",
    "replicate_seeds",
]

#: The level of each one-sided test (so a 95 % two-sided interval).
ALPHA = 0.025
#: The least number of replicate seeds an emergent claim is decided on (the paper's count).
MIN_SEEDS = 10
#: Replicate ``k`` of master seed ``S`` is ``S * REPLICATE_STRIDE + k``: the replicates of two
#: master seeds never overlap (a rebuild with ``--set seed=1`` re-draws every replicate).
REPLICATE_STRIDE = 1000

HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"
DECISIONS = (HOLDS, FAILS, INCONCLUSIVE)


def replicate_seeds(seed: int, n: int) -> list[int]:
    """The seeds of the ``n`` replicates of master seed ``seed`` (:data:`REPLICATE_STRIDE`):
    each re-draws the records, the split, the initialisation and the batch order."""
    if n < 1:
        raise ValueError(f"need at least one replicate (got n = {n})")
    return [seed * REPLICATE_STRIDE + k for k in range(n)]


@dataclass(frozen=True)
class Verdict:
    """A decision on one claim (or one member of a family).

    ``effect``: the mean over seeds, in the claim's unit; ``lo``, ``hi``: its two-sided
    ``1 - 2 ALPHA`` t-interval; ``p``: the p-value of the claim's test (for a family, the
    largest Holm-adjusted one); ``n``: the seeds; ``test``: what was run; ``decision``: one of
    :data:`HOLDS`, :data:`FAILS`, :data:`INCONCLUSIVE`; ``note``: why, when no test ran or a
    family's weakest member; ``p_other``: the p-value of the claim's negation (the other side
    of a directional claim; outside the margin for an equivalence)."""

    effect: float
    lo: float
    hi: float
    p: float
    n: int
    test: str
    decision: str
    note: str = ""
    p_other: float = math.nan

    @property
    def holds(self) -> bool:
        return self.decision == HOLDS

    def interval_text(self, unit: str = "", digits: int = 2) -> str:
        """``+0.84 [+0.56, +1.15] pts, n = 10`` (no interval when none was computed)."""
        if not math.isfinite(self.effect):
            return f"no estimate (n = {self.n})"
        body = f"{self.effect:+.{digits}f}"
        if math.isfinite(self.lo) and math.isfinite(self.hi):
            body += f" [{self.lo:+.{digits}f}, {self.hi:+.{digits}f}]"
        return f"{body}{unit}, n = {self.n}"

    def columns(self) -> dict[str, object]:
        """The verdict as CSV columns (``effect``, ``lo``, ``hi``, ``p``, ``n``, ``test``,
        ``decision``, ``note``)."""
        return asdict(self)


def _clean(values: Sequence[float]) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    return x[np.isfinite(x)]


def _t_summary(x: np.ndarray) -> tuple[float, float, float, float]:
    """Mean, standard error and the two-sided ``1 - 2 ALPHA`` t-interval ``(lo, hi)``."""
    from scipy import stats

    mean = float(x.mean())
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    q = float(stats.t.ppf(1 - ALPHA, x.size - 1))
    return mean, se, mean - q * se, mean + q * se


def _one_sided_p(x: np.ndarray, threshold: float, sign: int) -> float:
    """P-value of the one-sided t-test of ``sign * (mean - threshold) > 0``. A sample without
    spread gives 0 when every value is on the claimed side and 1 otherwise."""
    from scipy import stats

    mean, se, _, _ = _t_summary(x)
    if se == 0:
        return 0.0 if sign * (mean - threshold) > 0 else 1.0
    t = sign * (mean - threshold) / se
    return float(stats.t.sf(t, x.size - 1))


def _too_few(x: np.ndarray, min_n: int, test: str) -> Verdict | None:
    if x.size >= max(min_n, 2):
        return None
    effect = float(x.mean()) if x.size else math.nan
    note = f"too few seeds: {x.size} < {max(min_n, 2)}; no test run"
    return Verdict(effect, math.nan, math.nan, math.nan, int(x.size), test, INCONCLUSIVE, note)


def directional(
    values: Sequence[float], sign: int = 1, threshold: float = 0.0, min_n: int = MIN_SEEDS
) -> Verdict:
    """The claim that the mean of ``values`` (one per seed) lies above ``threshold`` (``sign``
    1) or below it (``sign`` -1): a one-sided t-test at :data:`ALPHA`. Holds when the claimed
    side is supported, fails when the interval supports the other side (a sample equal to the
    threshold fails too: no effect at all), inconclusive otherwise or with fewer than ``min_n``
    seeds."""
    if sign not in (1, -1):
        raise ValueError(f"sign must be 1 or -1 (got {sign})")
    x = _clean(values)
    test = f"one-sided t ({'>' if sign > 0 else '<'} {threshold:g})"
    early = _too_few(x, min_n, test)
    if early is not None:
        return early
    mean, se, lo, hi = _t_summary(x)
    p = _one_sided_p(x, threshold, sign)
    p_other = 0.0 if se == 0 and mean == threshold else _one_sided_p(x, threshold, -sign)
    return Verdict(mean, lo, hi, p, int(x.size), test, _decide(p, p_other), p_other=p_other)


def equivalent(values: Sequence[float], margin: float, min_n: int = MIN_SEEDS) -> Verdict:
    """The claim that the mean of ``values`` (one per seed: a difference, or a value minus the
    paper's) lies within ``(-margin, +margin)``: TOST at :data:`ALPHA` (statsmodels'
    ``ttost_mean``). Holds when both one-sided tests reject, fails when the interval lies wholly
    outside the margin, inconclusive otherwise or with fewer than ``min_n`` seeds."""
    if not margin > 0:
        raise ValueError(f"an equivalence margin must be > 0 (got {margin})")
    x = _clean(values)
    test = f"TOST (margin ±{margin:g})"
    early = _too_few(x, min_n, test)
    if early is not None:
        return early
    mean, se, lo, hi = _t_summary(x)
    if se == 0:
        p = 0.0 if abs(mean) < margin else 1.0
    else:
        from statsmodels.stats.weightstats import DescrStatsW

        p = float(DescrStatsW(x).ttost_mean(-margin, margin)[0])
    # the negation: the mean lies beyond one of the margins (the nearer side's one-sided test)
    p_other = min(_one_sided_p(x, margin, 1), _one_sided_p(x, -margin, -1))
    if se == 0 and abs(mean) == margin:
        p_other = 0.0
    return Verdict(mean, lo, hi, p, int(x.size), test, _decide(p, p_other), p_other=p_other)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values (statsmodels' ``multipletests(method="holm")``). Its Holm branch
    ends with a full ``gc.collect()`` (0.1 s in a process holding torch and pandas, paid per
    family); the collection frees nothing the call allocated, so it is skipped for the call."""
    import gc

    from statsmodels.stats.multitest import multipletests

    collect = gc.collect
    gc.collect = lambda *args, **kwargs: 0
    try:
        return multipletests(list(pvalues), alpha=ALPHA, method="holm")[1]
    finally:
        gc.collect = collect


def _decide(p: float, p_other: float) -> str:
    return HOLDS if p < ALPHA else FAILS if p_other < ALPHA else INCONCLUSIVE


def every(members: Mapping[str, Verdict]) -> Verdict:
    """A claim over a family (every budget, judge, point): each member a :class:`Verdict` of
    its own test, Holm-corrected over the family at :data:`ALPHA` (statsmodels'
    ``multipletests(method="holm")``). Holds when every member's adjusted p-value is below
    :data:`ALPHA`; fails when some member's adjusted p-value of the opposite side is;
    inconclusive otherwise, or when a member ran no test. The verdict's numbers are the weakest
    member's (the largest adjusted p-value), named in ``note`` with the count that hold."""
    if not members:
        raise ValueError("a family needs at least one member")
    names = list(members)
    verdicts = [members[k] for k in names]
    n = min(v.n for v in verdicts)
    test = f"Holm over {len(names)}: " + verdicts[0].test
    untested = [k for k, v in zip(names, verdicts) if not math.isfinite(v.p + v.p_other)]
    if untested:
        weakest = members[untested[0]]
        note = f"{len(untested)} of {len(names)} members untested ({untested[0]}: {weakest.note})"
        return Verdict(
            weakest.effect, weakest.lo, weakest.hi, math.nan, n, test, INCONCLUSIVE, note
        )
    adjusted = holm([v.p for v in verdicts])
    others = holm([v.p_other for v in verdicts])
    k = int(np.argmax(adjusted))
    weakest = verdicts[k]
    held = int((adjusted < ALPHA).sum())
    if held == len(names):
        decision = HOLDS
    elif (others < ALPHA).any():
        decision = FAILS
        k = int(np.argmin(others))
        weakest = verdicts[k]
    else:
        decision = INCONCLUSIVE
    note = f"{held} of {len(names)} hold after Holm; weakest {names[k]}"
    return Verdict(
        weakest.effect,
        weakest.lo,
        weakest.hi,
        float(adjusted.max()),
        n,
        test,
        decision,
        note,
        float(others.min()),
    )


def most(members: Mapping[str, Verdict]) -> Verdict:
    """A claim that holds "often" (at most budgets, on most judges): Holm-corrected over the
    family as in :func:`every`, it holds when more than half of the members hold after the
    correction, fails when at least half fail (the opposite side, after the correction), and
    is inconclusive otherwise. The verdict's numbers are the median member's."""
    if not members:
        raise ValueError("a family needs at least one member")
    names = list(members)
    verdicts = [members[k] for k in names]
    n = min(v.n for v in verdicts)
    test = f"majority of {len(names)}, Holm: " + verdicts[0].test
    if any(not math.isfinite(v.p + v.p_other) for v in verdicts):
        untested = next(k for k, v in zip(names, verdicts) if not math.isfinite(v.p + v.p_other))
        note = f"member {untested} untested: {members[untested].note}"
        return Verdict(math.nan, math.nan, math.nan, math.nan, n, test, INCONCLUSIVE, note)
    adjusted = holm([v.p for v in verdicts])
    others = holm([v.p_other for v in verdicts])
    held, failed = int((adjusted < ALPHA).sum()), int((others < ALPHA).sum())
    decision = (
        HOLDS if 2 * held > len(names) else FAILS if 2 * failed >= len(names) else INCONCLUSIVE
    )
    order = np.argsort([v.effect for v in verdicts])
    middle = verdicts[int(order[len(order) // 2])]
    note = f"{held} of {len(names)} hold and {failed} fail after Holm"
    p = float(np.sort(adjusted)[len(names) // 2])
    return Verdict(
        middle.effect, middle.lo, middle.hi, p, n, test, decision, note, float(np.median(others))
    )


def conjunction(parts: Mapping[str, Verdict]) -> Verdict:
    """A claim that holds only when each of ``parts`` holds (an intersection-union test: no
    correction needed, its p-value the largest of the parts'). Holds when every part holds,
    fails when one fails, inconclusive otherwise; the numbers are those of the part that
    decides (the first failing or inconclusive one, or, when all hold, the one with the
    largest p), ``test`` and ``note`` name every part and its decision."""
    if not parts:
        raise ValueError("a conjunction needs at least one part")
    names = list(parts)
    decisions = {parts[k].decision for k in names}
    decision = HOLDS if decisions == {HOLDS} else FAILS if FAILS in decisions else INCONCLUSIVE
    if decision == HOLDS:
        key = max(names, key=lambda k: parts[k].p)
    else:
        key = next(k for k in names if parts[k].decision == decision)
    weakest = parts[key]
    p = [parts[k].p for k in names]
    other = [parts[k].p_other for k in names]
    return Verdict(
        weakest.effect,
        weakest.lo,
        weakest.hi,
        max(p) if all(math.isfinite(v) for v in p) else math.nan,
        min(parts[k].n for k in names),
        " AND ".join(f"{k}: {parts[k].test}" for k in names),
        decision,
        "; ".join(
            f"{k} {parts[k].decision} ({parts[k].interval_text()})"
            + (f" [{parts[k].note}]" if parts[k].note else "")
            for k in names
        )
        + f"; numbers of: {key}",
        min(other) if any(math.isfinite(v) for v in other) else math.nan,
    )
