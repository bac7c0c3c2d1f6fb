"""SmolLM2's GGUF loaded through the model cache against loaded directly.

transformers reads a GGUF file's metadata three times and de-quantizes every tensor at each
load; :func:`racer_lib.judging.gguf.cached_conversion` does that once and keeps a transformers
folder, checked against its manifest (sha256 of every file) before each reuse. This benchmark
loads the model (tokenizer and weights, on the CPU) both ways in one process, after a warm-up
load that fills a temporary cache, and reports ``ratio``: direct over cached, the cached side's
time including its check. The cold side (convert and store) is reported too; the weights of
both sides are compared exactly.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from racer_lib import judging

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402

ROUNDS = 2


def _load(folder, file, cache) -> tuple[float, dict]:
    backend = judging.TransformersBackend(str(folder), file, device="cpu", model_cache=cache)
    start = time.perf_counter()
    _, model, _ = backend.load()
    return time.perf_counter() - start, model.state_dict()


def run() -> dict:
    torch.set_num_threads(1)
    folder, file = judging.smollm2_gguf()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache:
        cold, _ = _load(folder, file, cache)  # converts and stores
        best = {"direct": float("inf"), "cached": float("inf")}
        for _ in range(ROUNDS):
            for side, where in (("direct", False), ("cached", cache)):
                seconds, weights = _load(folder, file, where)
                best[side] = min(best[side], seconds)
                if side == "direct":
                    direct = weights
        same = direct.keys() == weights.keys() and all(
            torch.equal(direct[k], weights[k]) for k in direct
        )
    return {
        "name": "gguf_cached_vs_direct",
        "ratio": best["direct"] / best["cached"],
        "seconds": {**best, "first_cached_load_converting": cold},
        "identical_weights": bool(same),
        "model": f"{folder.name}/{file}",
        "settings": {"device": "cpu", "dtype": "float32", "threads": 1, "rounds": ROUNDS},
        **machine.stamp(load),
    }


def line(result: dict) -> str:
    s = result["seconds"]
    return (
        f"{result['name']}: {result['ratio']:.1f}x (direct {s['direct']:.1f} s, cached "
        f"{s['cached']:.1f} s, converting {s['first_cached_load_converting']:.1f} s; identical "
        f"weights: {result['identical_weights']})"
    )
