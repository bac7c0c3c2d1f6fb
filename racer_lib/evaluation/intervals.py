"""Intervals and tests: how sure a measured rate or difference is.

- :func:`wilson_interval`: the Wilson score interval of a binomial proportion (a violation rate);
- :func:`bootstrap_interval`: the percentile-bootstrap interval of a mean (an accuracy
  difference between paired runs);
- :func:`sign_test`: the one-sided exact sign test (McNemar's exact test) on paired binary
  outcomes (does the robust router violate the budget less often than its control?).

The paper's robustness statements (Sec. 5, the shift experiments) rest on these three.

- :func:`t_half_width`: half the 95 % t-interval of a mean over seeds, the interval the
  emergent claims are decided on (:mod:`racer_lib.evaluation.verdicts`), so that a figure draws
  what its claim's status rests on;
- :func:`decimals` and :func:`interval_text`: an effect and its interval with as many decimals
  as tell the effect and its ends apart (never ``-0.01 [-0.01, -0.01]``); :func:`p_text`: a p-value
  (``< 0.001``, never ``0.00``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

import numpy as np


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n`` at confidence ``level``
    (Wilson, 1927): ``(p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``. ``n = 0`` gives
    ``(0, 1)``."""
    if n == 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # k = 0 and k = n give exactly 0 and 1 (the formula's value, up to rounding)
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def sign_test(fewer: int, more: int) -> float:
    """One-sided exact sign test (McNemar's exact test) on paired binary outcomes: ``fewer``
    pairs where only the first of the two has the outcome, ``more`` where only the second
    does. The p-value of seeing ``fewer`` or less of the ``fewer + more`` discordant pairs under
    a fair coin, ``sum_{i <= fewer} C(n, i) / 2^n``; 1 without discordant pairs."""
    n = fewer + more
    return float(sum(math.comb(n, i) for i in range(fewer + 1)) / 2**n)


def bootstrap_interval(
    values: Sequence[float], seed: int, n_boot: int = 2000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of ``values`` (``n_boot`` resamples drawn
    from ``numpy.random.default_rng(seed)``); a single value gives the point interval."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values to bootstrap")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def t_half_width(sd: Any, n: Any, level: float = 0.95) -> Any:
    """Half the width of the two-sided ``level`` t-interval of a mean over ``n`` seeds whose
    standard deviation is ``sd``: ``t_{(1 + level) / 2, n - 1} sd / sqrt(n)`` (arrays element
    by element; NaN where ``n < 2``). At 0.95 it is the interval of
    :func:`racer_lib.evaluation.verdicts.directional` (one-sided tests at 2.5 % each)."""
    from scipy import stats

    n = np.asarray(n, dtype=float)
    sd = np.asarray(sd, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = stats.t.ppf((1 + level) / 2, np.where(n >= 2, n - 1, np.nan))
        half = q * sd / np.sqrt(n)
    return half if half.ndim else float(half)


def decimals(
    effect: float, lo: float = math.nan, hi: float = math.nan, digits: int = 2, most: int = 6
) -> int:
    """The decimals that show an effect and its interval apart: ``digits``, or more (up to
    ``most``) where the effect itself, or the distance between the effect and an end of its
    interval, would round away (then two significant digits of the smallest of them)."""
    spans = [effect, hi - lo, effect - lo, hi - effect]
    sizes = [abs(v) for v in spans if math.isfinite(v) and v != 0]
    if not sizes:
        return digits
    return int(min(most, max(digits, 1 - math.floor(math.log10(min(sizes))))))


def interval_text(
    effect: float, lo: float = math.nan, hi: float = math.nan, digits: int = 2
) -> str:
    """``+0.84 [+0.56, +1.15]``, signed, with :func:`decimals` enough to tell the effect and its
    interval's ends apart (``-0.0071 [-0.0090, -0.0052]``, not ``-0.01 [-0.01, -0.01]``);
    without a finite interval, the effect alone; a number that rounds to zero reads ``0.00``,
    unsigned."""
    if not math.isfinite(effect):
        return "–"
    both = math.isfinite(lo) and math.isfinite(hi)
    d = decimals(effect, lo, hi, digits) if both else decimals(effect, digits=digits)

    def signed(v: float) -> str:
        text = f"{v:+.{d}f}"
        return text[1:] if float(text) == 0 else text

    return f"{signed(effect)} [{signed(lo)}, {signed(hi)}]" if both else signed(effect)


def p_text(p: float) -> str:
    """A p-value as a page shows it: ``< 0.001`` below 0.001, three decimals below 0.01, two
    above (``0.0025`` -> ``0.003``, ``0.37`` -> ``0.37``); ``–`` when none was computed."""
    if not math.isfinite(p):
        return "–"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.01 else f"{p:.2f}"
