"""This machine's rates, measured in the benchmark's own run: the matmul peak and the memory
bandwidth that bound the trainer (shared by the benchmarks)."""

from __future__ import annotations

import time

import torch

PEAK_N = 4096  # square matmul for the peak
REPEATS = 5


def best_time(fn, repeats: int = REPEATS) -> float:
    """Least wall time of ``repeats`` calls of ``fn``, after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def peak_gflops(dtype: torch.dtype = torch.float32) -> float:
    """Matmul peak: a square ``PEAK_N`` x ``PEAK_N`` ``torch.matmul`` in ``dtype``, best of
    several."""
    a, b = (torch.rand(PEAK_N, PEAK_N, dtype=dtype) for _ in range(2))
    return 2.0 * PEAK_N**3 / best_time(lambda: torch.matmul(a, b)) / 1e9


def stream_gb_per_s(numel: int) -> float:
    """Memory bandwidth of a streaming in-place ``a += b`` over ``numel`` floats (3 passes:
    reads a and b, writes a), best of several: what an in-place memory-bound kernel such as
    the fused AdamW can reach here."""
    a, b = torch.rand(numel), torch.rand(numel)
    return 3 * 4 * numel / best_time(lambda: a.add_(b)) / 1e9


def stamp(load_before: float) -> dict:
    """Where and when a benchmark ran: the load average before (``load_before``) and after it,
    the architecture, the cores and the date."""
    import os
    import platform

    return {
        "load_average": [load_before, os.getloadavg()[0]],
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }
