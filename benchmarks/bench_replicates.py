"""Chapter 08's replicates trained together against one at a time.

The robustness ablation of the ``sim`` profile trains small linear routers (32-d embeddings,
batch 256) on 60 replicate seeds, each re-drawing Table 1's three subsets; such a step costs
mostly its fixed overhead, not its arithmetic. :func:`racer_lib.paper.chapters.
robustness_ablation.run_replicates` therefore trains ``per_pass`` replicates in one pass
(:func:`racer_lib.routing.train.train_sets`). This benchmark runs :data:`SEEDS` replicates of
that workload at the profile's sizes with :data:`EPOCHS` epochs (the profile trains 60) both
ways, :data:`ROUNDS` round(s) after a warm-up (the best of each side counts), and reports
``ratio``: one at a time over together. Both sides include drawing the replicates' records,
which costs the same either way, so the ratio is the chapter's rather than the trainer's. Both
produce the same runs to float32 rounding (tests/test_experiments_ablation.py); the largest
difference in any run's accuracy here is reported too.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from racer_lib.evaluation import verdicts
from racer_lib.paper.chapters import robustness_ablation as ch
from racer_lib.routing import train

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine  # noqa: E402

SEEDS = 20  # the chapter's replicates per pass in the sim profile
EPOCHS = 20
ROUNDS = 1


def _design() -> ch.Design:
    settings = train.TrainSettings(arch="linear", epochs=EPOCHS, lr=4e-4, batch_size=256,
                                   keep_freed_memory=True)  # fmt: skip
    scenarios = {ch.CHEAPER: "magpie_ultra", ch.COSTLIER: "wildguardmix"}
    return ch.Design("qwen3-4b", scenarios, "offsetbias", [0.1, 0.3, 1.0], [0.1, 0.3, 1.0], 2.0,
                     settings, source={"dim": 32, "scale": 1.0})  # fmt: skip


def run() -> dict:
    torch.set_num_threads(1)
    design, seeds = _design(), verdicts.replicate_seeds(0, SEEDS)
    ch.run_replicates(design, seeds[:1])  # warm-up: imports, first allocations
    best = {"alone": np.inf, "together": np.inf}
    runs = {}
    load = os.getloadavg()[0]
    for _ in range(ROUNDS):
        for side, per_pass in (("alone", 1), ("together", SEEDS)):
            start = time.perf_counter()
            out = ch.run_replicates(design, seeds, per_pass=per_pass)
            best[side] = min(best[side], time.perf_counter() - start)
            runs[side] = pd.DataFrame(out["runs"])
    gap = float((runs["alone"]["accuracy"] - runs["together"]["accuracy"]).abs().max())
    return {
        "name": "replicates_together_vs_alone",
        "ratio": best["alone"] / best["together"],
        "seconds": best,
        "replicates": SEEDS,
        "epochs": EPOCHS,
        "max_accuracy_difference_points": gap,
        "settings": {
            "judge": "qwen3-4b",
            "dim": 32,
            "batch_size": 256,
            "arch": "linear",
            "threads": 1,
            "rounds": ROUNDS,
        },  # fmt: skip
        **machine.stamp(load),
    }


def line(result: dict) -> str:
    s = result["seconds"]
    return (f"chapter 08's replicates together vs one at a time ({result['replicates']} "
            f"replicates, {result['epochs']} epochs): {result['ratio']:.1f}x "
            f"({s['alone']:.1f} s vs {s['together']:.1f} s; runs differ by at most "
            f"{result['max_accuracy_difference_points']:.2g} points)")  # fmt: skip
