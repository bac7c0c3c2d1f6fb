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
* **Every claim is decided against its smallest effect of interest** (SESOI), fixed in the
  claim's entry before any run and derived from the paper: a difference too small to matter is
  no reproduction, however many seeds detect it (Lakens, Scheel & Isager 2018).
* **A directional claim** (:func:`directional`: the mean of ``sign * (d - threshold)`` exceeds
  the SESOI) *holds* when its lower bound is above the SESOI, *fails* when the interval lies
  below it (a negligible effect, or one on the opposite side), and is *inconclusive*
  otherwise. Each side's test is Student's t joined by the studentized bootstrap of the seeds
  (both must reject): the t-test alone breaks its level on skewed seeds.
* **Skewed seeds are decided on their median** (:func:`skewed`, a criterion fixed before any
  run): when the seeds' sample skewness exceeds :data:`SKEW_LIMIT` in size, their mean is
  carried by a few outlying seeds, and a build that misses them shows a clean effect no test of
  the mean can doubt (issue 40 measured 7 to 11 % false positives so on the build's own data).
  Such a claim (unless its seeds take few distinct values: shares keep the mean's test) is
  decided on
  the median by the exact sign test (scipy's ``quantile_test``,
  distribution-free: its level holds at any shape and number of seeds), the interval being the
  median's order-statistic one.
* **An equivalence claim** ("matches", "alike", "within", "level"; :func:`equivalent`) is
  Schuirmann's two one-sided tests (TOST, statsmodels' ``DescrStatsW.ttost_mean``, with the
  bootstrap beside each side) with a margin fixed in the claim's entry: it *holds* when the
  interval lies inside ``(-margin, +margin)``, *fails* when it lies wholly outside, and is
  inconclusive otherwise. The median's two exact sign tests must reject as well: an outlying
  seed carries the whole difference, and a build that misses it would otherwise show a tight
  equivalence (issue 40 measured 23 % false positives so at one member of Table 3's "β alike"
  on resamples of the build's own seeds, 1.7 % with the sign tests joined). The margin of an
  equivalence and the SESOI of a directional claim on the same quantity are one number, so no
  data set can support both readings.
  A one-sided bound ("stays within budget": :func:`directional` with a threshold) is the
  non-inferiority half of it.
* **A claim over a family** ("every budget", "every judge", "concave at every budget";
  :func:`every`) is an intersection-union test: it *holds* when every member holds at
  :data:`ALPHA` (no correction is needed), *fails* when some member's p-value for the opposite
  side is below :data:`ALPHA` after Holm's correction
  (:func:`statsmodels.stats.multitest.multipletests`), and is inconclusive otherwise.
* **A claim of several parts** ("fewer violations at equal accuracy"; :func:`conjunction`) is an
  intersection-union test: it *holds* when every part holds, *fails* when one fails, and is
  inconclusive otherwise (no correction: its p-value is the largest of the parts').

The error rate so stated (:data:`ALPHA` per decision at the SESOI's boundary) is checked
before it is trusted: ``tests/test_verdicts.py`` measures each rule on simulated nulls, and
``make bench-verdicts`` on null and planted-signal builds (``results/bench/verdicts.json``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from racer_lib.evaluation import intervals

__all__ = [
    "ALPHA",
    "FAILS",
    "HOLDS",
    "INCONCLUSIVE",
    "MIN_SEEDS",
    "REPLICATE_STRIDE",
    "SKEW_LIMIT",
    "Verdict",
    "conjunction",
    "directional",
    "equivalent",
    "every",
    "holm",
    "level_on_shape",
    "most",
    "replicate_seeds",
    "sensitivity",
    "skewed",
]

#: The level of each one-sided test (so a 95 % two-sided interval).
ALPHA = 0.025
#: The least number of replicate seeds an emergent claim is decided on (the paper's count).
MIN_SEEDS = 10
#: Replicate ``k`` of master seed ``S`` is ``S * REPLICATE_STRIDE + k``: the replicates of two
#: master seeds never overlap (a rebuild with ``--set seed=1`` re-draws every replicate).
REPLICATE_STRIDE = 1000
#: The resampled nulls on which a sample's own shape is checked (:func:`level_on_shape`).
NULL_REPLICATIONS = 2000
#: The size of the sample skewness (bias-corrected Fisher-Pearson, ``scipy.stats.skew``) above
#: which a sample is decided on its median (:func:`skewed`): "highly skewed" (Bulmer 1979, §4).
#: Fixed before the build's data were measured against it; the build's outlier-carried seeds
#: have 1.1 to 4.1, its unremarkable ones under 1.
SKEW_LIMIT = 1.0

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
    of a directional claim; outside the margin for an equivalence); ``sesoi``: the smallest
    effect of interest the claim was decided against (the minimum effect of a directional
    claim, the margin of an equivalence), in the claim's unit."""

    effect: float
    lo: float
    hi: float
    p: float
    n: int
    test: str
    decision: str
    note: str = ""
    p_other: float = math.nan
    sesoi: float = math.nan

    @property
    def holds(self) -> bool:
        return self.decision == HOLDS

    def interval_text(self, unit: str = "", digits: int = 2) -> str:
        """``+0.84 [+0.56, +1.15] pts, n = 10`` (no interval when none was computed), with at
        least ``digits`` decimals and more where the ends would round alike
        (:func:`racer_lib.evaluation.intervals.interval_text`)."""
        if not math.isfinite(self.effect):
            return f"no estimate (n = {self.n})"
        body = intervals.interval_text(self.effect, self.lo, self.hi, digits)
        return f"{body}{unit}, n = {self.n}"

    def columns(self) -> dict[str, object]:
        """The verdict as CSV columns (``effect``, ``lo``, ``hi``, ``p``, ``n``, ``test``,
        ``decision``, ``note``)."""
        return asdict(self)


def _clean(values: Sequence[float]) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    return x[np.isfinite(x)]


def _t_summary(x: np.ndarray, overlap: float = 0.0) -> tuple[float, float, float, float]:
    """Mean, standard error and the two-sided ``1 - 2 ALPHA`` t-interval ``(lo, hi)``. With
    ``overlap`` (the test set's size over the training set's, when every replicate re-draws a
    split of one fixed set of pairs) the standard error is Nadeau and Bengio's (2003)
    corrected resampled one, ``sd * sqrt(1 / n + overlap)``: the replicates share pairs, so
    the pairs' own variation is not averaged away by more seeds."""
    from scipy import stats

    mean = float(x.mean())
    se = float(x.std(ddof=1) * math.sqrt(1 / x.size + overlap))
    q = float(stats.t.ppf(1 - ALPHA, x.size - 1))
    return mean, se, mean - q * se, mean + q * se


def _one_sided_p(x: np.ndarray, threshold: float, sign: int, overlap: float = 0.0) -> float:
    """P-value of the one-sided t-test of ``sign * (mean - threshold) > 0`` (Nadeau and
    Bengio's corrected standard error with ``overlap``). A sample without spread gives 0 when
    every value is on the claimed side and 1 otherwise."""
    from scipy import stats

    mean, se, _, _ = _t_summary(x, overlap)
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


def level_on_shape(
    values: Sequence[float], sign: int = 1, replications: int = NULL_REPLICATIONS, seed: int = 0
) -> float:
    """The one-sided t-test's rejection rate, at :data:`ALPHA`, on nulls shaped like ``values``:
    the sample re-centred at its boundary (mean zero) and resampled with replacement
    ``replications`` times, each of the sample's size, the draws from ``seed``'s generator.
    Near :data:`ALPHA` for a symmetric sample; above it, on the claimed side ``sign``, for a
    sample skewed towards that side (a long tail opposite the claim: 6 to 9 % at ten
    exponential seeds)."""
    from scipy import stats

    x = _clean(values)
    if x.size < 2 or not np.ptp(x) > 0:
        return 0.0
    draws = np.random.default_rng(seed).choice(x - x.mean(), size=(replications, x.size))
    se = draws.std(axis=1, ddof=1) / math.sqrt(x.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, sign * draws.mean(axis=1) / se, 0.0)
    return float(np.mean(t > stats.t.ppf(1 - ALPHA, x.size - 1)))


def _bootstrap_p(x: np.ndarray, boundary: float, sign: int, seed: int) -> tuple[float, float]:
    """The studentized bootstrap's one-sided p-values ``(claimed side, other side)`` of the mean
    of ``x`` against ``boundary`` (Efron & Tibshirani 1993, §16.4): the t statistic of ``x``
    against the distribution of the t statistics of :data:`NULL_REPLICATIONS` resamples of
    ``x`` re-centred at its mean, drawn from ``seed``'s generator. It carries the seeds' own
    shape (skew) that Student's t assumes away."""
    mean, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))
    if se == 0:
        side = sign * (mean - boundary)
        return (0.0, 1.0) if side > 0 else (1.0, 0.0) if side < 0 else (1.0, 1.0)
    t_obs = sign * (mean - boundary) / se
    draws = np.random.default_rng(seed).choice(x - mean, size=(NULL_REPLICATIONS, x.size))
    spread = draws.std(axis=1, ddof=1) / math.sqrt(x.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(spread > 0, sign * draws.mean(axis=1) / spread, 0.0)
    tail = NULL_REPLICATIONS + 1
    return float((1 + np.sum(t >= t_obs)) / tail), float((1 + np.sum(t <= t_obs)) / tail)


def skewed(values: Sequence[float]) -> bool:
    """Whether a sample is decided on its median rather than its mean (the protocol's rule,
    fixed in advance): its bias-corrected sample skewness exceeds :data:`SKEW_LIMIT` in size,
    and it takes at least half as many distinct values as it has seeds. A sample of a few
    levels (a share of three runs over budget, a count) has a median that is one of its steps
    rather than a summary of it: it keeps the mean's test. (Half, not all: a resample of
    continuous seeds, as ``make bench-verdicts`` draws, repeats about a third of them.) A
    sample of fewer than three values or without spread is not skewed."""
    from scipy import stats

    x = _clean(values)
    if x.size < 3 or not np.ptp(x) > 0 or 2 * np.unique(x).size < x.size:
        return False
    return bool(abs(float(stats.skew(x, bias=False))) > SKEW_LIMIT)


def _median_summary(x: np.ndarray) -> tuple[float, float, float]:
    """The median and its two-sided ``1 - 2 ALPHA`` distribution-free interval (the order
    statistics of the binomial; scipy's ``quantile_test``)."""
    from scipy import stats

    median = float(np.median(x))
    ci = stats.quantile_test(x, q=median, p=0.5).confidence_interval(1 - 2 * ALPHA)
    return median, float(ci.low), float(ci.high)


def _sign_p(x: np.ndarray, boundary: float, sign: int) -> tuple[float, float]:
    """The exact sign test's one-sided p-values ``(claimed side, other side)`` of the median of
    ``x`` against ``boundary`` (scipy's ``quantile_test`` at p = 0.5)."""
    from scipy import stats

    above, below = (
        float(stats.quantile_test(x, q=boundary, p=0.5, alternative=side).pvalue)
        for side in ("greater", "less")
    )
    return (above, below) if sign > 0 else (below, above)


def _chosen(x: np.ndarray, overlap: float) -> bool:
    """Whether ``x`` is decided on its median (:func:`skewed`); never with ``overlap`` (seeds
    sharing pairs, where only the corrected t counts the pairs' own variation)."""
    return overlap == 0 and skewed(x)


def _one_sided(
    x: np.ndarray, boundary: float, sign: int, seed: int, overlap: float = 0.0
) -> tuple[float, float]:
    """The protocol's one-sided p-values ``(claimed side, other side)`` of the mean of ``x``
    against ``boundary``: the larger of Student's t and the studentized bootstrap's
    (:func:`_bootstrap_p`), so that a side is supported only when both tests reject. Student's t
    alone exceeds its level on skewed seeds (9 % at ten exponential seeds for a stated 2.5 %),
    the bootstrap alone on few symmetric ones (4.5 % at ten normal seeds); together they stay
    near it on both (``tests/test_verdicts.py`` measures them). A skewed sample (:func:`_chosen`)
    is tested on its median instead, by the exact sign test (:func:`_sign_p`)."""
    if _chosen(x, overlap):
        return _sign_p(x, boundary, sign)
    boot, boot_other = _bootstrap_p(x, boundary, sign, seed)
    return (
        max(_one_sided_p(x, boundary, sign, overlap), boot),
        max(_one_sided_p(x, boundary, -sign, overlap), boot_other),
    )


def directional(
    values: Sequence[float],
    sign: int = 1,
    threshold: float = 0.0,
    min_n: int = MIN_SEEDS,
    sesoi: float = 0.0,
    seed: int = 0,
    overlap: float = 0.0,
) -> Verdict:
    """The claim that the mean of ``values`` (one per seed) lies above ``threshold`` (``sign``
    1) or below it (-1) by at least ``sesoi``, the smallest effect of interest: a one-sided
    minimum-effect test at :data:`ALPHA` against the boundary ``threshold + sign * sesoi``
    (Lakens, Scheel & Isager 2018). Holds when the interval lies beyond the boundary on the
    claimed side; fails when it lies short of it (an effect smaller than the smallest of
    interest, none at all, or one on the other side); inconclusive otherwise or with fewer than
    ``min_n`` seeds. A side is supported when Student's t and the studentized bootstrap
    (``seed`` drawing its resamples) both reject (:func:`_one_sided`); skewed seeds
    (:func:`skewed`) are decided on their median by the exact sign test, its effect and
    interval the median's: rules fixed before any run that keep the level on skewed seeds.
    ``overlap``: the test share over the training share when each seed re-draws a split of one
    fixed set of pairs (released judgments; never decided on the median): the t-test then uses
    Nadeau and Bengio's corrected resampled standard error (:func:`_t_summary`), which counts
    the pairs as a level of variation."""
    if sign not in (1, -1):
        raise ValueError(f"sign must be 1 or -1 (got {sign})")
    if not sesoi >= 0:
        raise ValueError(f"a smallest effect of interest must be >= 0 (got {sesoi})")
    x = _clean(values)
    boundary = threshold + sign * sesoi
    test = f"one-sided t and bootstrap-t ({'>' if sign > 0 else '<'} {boundary:g})"
    early = _too_few(x, min_n, test)
    if early is not None:
        return replace(early, sesoi=sesoi)
    mean, se, lo, hi = _t_summary(x, overlap)
    p, p_other = _one_sided(x, boundary, sign, seed, overlap)
    if se == 0 and mean == boundary:
        p_other = 0.0
    if _chosen(x, overlap):
        mean, lo, hi = _median_summary(x)
        test = f"sign test of the median, skewed seeds ({'>' if sign > 0 else '<'} {boundary:g})"
    decision = _decide(p, p_other)
    return Verdict(mean, lo, hi, p, int(x.size), test, decision, "", p_other, sesoi)


def equivalent(
    values: Sequence[float],
    margin: float,
    min_n: int = MIN_SEEDS,
    seed: int = 0,
    overlap: float = 0.0,
) -> Verdict:
    """The claim that the mean of ``values`` (one per seed: a difference, or a value minus the
    paper's) lies within ``(-margin, +margin)``, the margin being the smallest effect of
    interest on that quantity: TOST at :data:`ALPHA` (statsmodels' ``ttost_mean``), each of
    its one-sided tests joined by the studentized bootstrap as in :func:`directional` and by the
    median's exact sign test (:func:`_sign_p`; a skewed sample is shown by its median). Holds
    when every one of these rejects on both sides, fails when the interval lies wholly outside
    the margin, inconclusive otherwise or with fewer than ``min_n`` seeds. ``overlap``: as for
    :func:`directional` (seeds sharing pairs: the corrected t, never the median)."""
    if not margin > 0:
        raise ValueError(f"an equivalence margin must be > 0 (got {margin})")
    x = _clean(values)
    test = f"TOST, bootstrap-t and sign tests (margin ±{margin:g})"
    early = _too_few(x, min_n, test)
    if early is not None:
        return replace(early, sesoi=margin)
    mean, se, lo, hi = _t_summary(x, overlap)
    above, beyond_low = _one_sided(x, -margin, 1, seed, overlap)
    below, beyond_high = _one_sided(x, margin, -1, seed, overlap)
    # the median inside the margin too, whatever the sample's shape (the module's docstring)
    above, below = max(above, _sign_p(x, -margin, 1)[0]), max(below, _sign_p(x, margin, -1)[0])
    if _chosen(x, overlap):
        p = max(above, below)
        mean, lo, hi = _median_summary(x)
        test = f"two sign tests of the median, skewed seeds (margin ±{margin:g})"
    elif se == 0:
        p = 0.0 if abs(mean) < margin else 1.0
    else:
        from statsmodels.stats.weightstats import DescrStatsW

        p = max(float(DescrStatsW(x).ttost_mean(-margin, margin)[0]), above, below)
    # the negation: the mean lies beyond one of the margins (the nearer side's one-sided test)
    p_other = min(beyond_low, beyond_high)
    if se == 0 and abs(mean) == margin:
        p_other = 0.0
    decision = _decide(p, p_other)
    return Verdict(mean, lo, hi, p, int(x.size), test, decision, "", p_other, margin)


#: The power at which a minimum detectable effect is stated (:func:`sensitivity`).
MDE_POWER = 0.8


def sensitivity(
    verdict: Verdict, sign: int, boundary: float, true_effect: float, equivalence: bool = False
) -> tuple[float, float]:
    """``(power, mde)`` of the claim's test at its own seeds and spread, from the verdict's
    standard error (its interval's half-width over Student's quantile): the power to decide
    *holds* when the true mean is ``true_effect`` (the paper's effect), and the minimum
    detectable effect, the true mean at which that power reaches :data:`MDE_POWER`, in the
    claim's unit. For an equivalence, ``boundary`` is the margin, the power is at
    ``true_effect`` inside it, and the MDE is the narrowest margin shown with that power at a
    true difference of zero. Student's t approximations (the bootstrap joined to each test
    makes the realized power a little lower; ``make bench-verdicts`` measures it)."""
    from scipy import stats

    if verdict.n < 2 or not (math.isfinite(verdict.hi) and math.isfinite(verdict.effect)):
        return math.nan, math.nan
    df = verdict.n - 1
    crit = float(stats.t.ppf(1 - ALPHA, df))
    se = (verdict.hi - verdict.lo) / (2 * crit)
    if not se > 0:
        return math.nan, math.nan
    z = float(stats.t.ppf(MDE_POWER, df))
    if equivalence:
        gap = boundary - abs(true_effect)
        power = max(0.0, 1.0 - 2.0 * float(stats.t.sf(gap / se - crit, df)))
        return power, (crit + float(stats.t.ppf((1 + MDE_POWER) / 2, df))) * se
    power = float(stats.t.sf(crit - sign * (true_effect - boundary) / se, df))
    return power, boundary + sign * (crit + z) * se


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
    """A claim over a family (every budget, judge, point), each member a :class:`Verdict` of
    its own test. Holding is an intersection-union test (Berger 1982): the claim holds when
    every member holds at :data:`ALPHA`, with no correction (the family's p-value is the
    largest member's). Failing needs only one member shown short of its smallest effect, a
    union over the members: their p-values of the opposite side are Holm-corrected (statsmodels'
    ``multipletests(method="holm")``) and the claim fails when one of them is below
    :data:`ALPHA`. Inconclusive otherwise, or when a member ran no test. The verdict's numbers
    are the weakest member's (the largest p-value), named in ``note`` with the count that hold."""
    if not members:
        raise ValueError("a family needs at least one member")
    names = list(members)
    verdicts = [members[k] for k in names]
    n = min(v.n for v in verdicts)
    test = f"every one of {len(names)} (intersection-union): " + verdicts[0].test
    sesoi = verdicts[0].sesoi
    untested = [k for k, v in zip(names, verdicts) if not math.isfinite(v.p + v.p_other)]
    if untested:
        weakest = members[untested[0]]
        note = f"{len(untested)} of {len(names)} members untested ({untested[0]}: {weakest.note})"
        return Verdict(
            weakest.effect,
            weakest.lo,
            weakest.hi,
            math.nan,
            n,
            test,
            INCONCLUSIVE,
            note,
            sesoi=sesoi,
        )
    p = np.array([v.p for v in verdicts])
    others = holm([v.p_other for v in verdicts])
    k = int(np.argmax(p))
    held = int((p < ALPHA).sum())
    if held == len(names):
        decision = HOLDS
    elif (others < ALPHA).any():
        decision = FAILS
        k = int(np.argmin(others))
    else:
        decision = INCONCLUSIVE
    weakest = verdicts[k]
    note = f"{held} of {len(names)} hold; weakest {names[k]}"
    return Verdict(
        weakest.effect,
        weakest.lo,
        weakest.hi,
        float(p.max()),
        n,
        test,
        decision,
        note,
        float(others.min()),
        sesoi,
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
        middle.effect,
        middle.lo,
        middle.hi,
        p,
        n,
        test,
        decision,
        note,
        float(np.median(others)),
        verdicts[0].sesoi,
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
