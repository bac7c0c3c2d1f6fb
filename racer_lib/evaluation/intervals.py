"""Intervals and tests: how sure a measured rate or difference is.

- :func:`wilson_interval`: the Wilson score interval of a binomial proportion (a violation rate);
- :func:`bootstrap_interval`: the percentile-bootstrap interval of a mean (an accuracy
  difference between paired runs);
- :func:`sign_test`: the one-sided exact sign test (McNemar's exact test) on paired binary
  outcomes (does the robust router violate the budget less often than its control?).

The paper's robustness statements (Sec. 5, the shift experiments) rest on these three.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

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
