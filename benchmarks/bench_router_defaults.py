"""The router's training settings on small data, measured (issue 43, item 3).

``racer router train`` and :class:`racer_lib.routing.RacerRouter` default to the paper's
settings (60 epochs, AdamW at 1e-4, a dual step of 1e-3, one seed), chosen for 32,000 training
pairs. A practitioner's own logs are often a few hundred to a few thousand pairs. This
benchmark trains RACER-R at budget 3 with each setting of :data:`SETTINGS` on two small sets
and reports, over :data:`SEEDS` replicate seeds (each re-drawing the hold-out, the
initialisation and the batch order): accuracy on held-out pairs (points), its gain over Random
at the same reasoning rate, the realized cost over the budget, and the share of fits that end
degenerate (all but 1 % of the held-out pairs in one mode, as ``racer router train`` warns).

* **simulated**: qwen3-4b's training mixture at scale 0.1 (4,000 pairs, 32-dim embeddings),
  half of them (stratified by dataset) to train on, the other half held out;
* **LLMBar**: GPT-4's outputs on chapter 17's training subsets, held out on the others,
  embedded with the CPU encoder (where LLMBar's files and the encoder can be had).

``ratio``: the small-data setting's mean gain over Random divided by the paper setting's, on
the simulated set (above 1: the small-data setting routes better there).
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUDGET = 3.0
SEEDS = range(5)
#: The paper's settings (the CLI's defaults) and chapter 17's for a small set.
SETTINGS = {
    "paper (the defaults)": {"epochs": 60, "lr": 1e-4, "dual_step": 1e-3, "n_seeds": 1},
    "small data": {"epochs": 100, "lr": 1e-3, "dual_step": 1e-4, "n_seeds": 3},
}
LLMBAR_TRAIN = ("natural", "neighbor", "gptinst")  # chapter 17's training subsets
DEGENERATE = 0.01  # racer_lib.routing.decision's share for a degenerate router


def _simulated() -> tuple:
    from racer_lib.records.sets import judge_set

    records, x = judge_set(
        "qwen3-4b", "training_mix", seed=0, dim=32, scale=0.1, split_shares=(0.4, 0.1, 0.5)
    )
    held = (records["split"] == "test").to_numpy()
    return records[~held], x[~held], records[held], x[held]


def _llmbar(work: Path) -> tuple | None:
    """GPT-4's LLMBar records (``racer records import``, texts included), embedded (``racer
    pairs embed``), split into chapter 17's training subsets and the others; None where the
    files or the encoder cannot be had."""
    import subprocess

    from racer_lib.records import io, sources

    folder, _ = sources.fetched_folder("llmbar", "LICENSE")
    if not folder:
        return None
    path = work / "llmbar.parquet"
    racer = [sys.executable, "-m", "racer_lib"]
    for args in (
        ["records", "import", "--format", "llmbar", "--llmbar-dir", str(folder),
         "--judge", "GPT-4", "--out", str(path)],
        ["pairs", "embed", str(path), "--encoder", "all-MiniLM-L6-v2", "-q"],
    ):  # fmt: skip
        if subprocess.run(racer + args, capture_output=True).returncode != 0:
            return None
    records, x = io.load(path)
    train = records["subset"].isin(LLMBAR_TRAIN).to_numpy()
    return records[train], x[train], records[~train], x[~train]


def _fit_once(data: tuple, setting: dict, seed: int) -> dict:
    from racer_lib.evaluation.metrics import random_point
    from racer_lib.records import schema
    from racer_lib.routing import RacerRouter

    train, x, test, xt = data
    r, t = schema.correct_matrix(train), schema.token_matrix(train)
    router = RacerRouter(budget=BUDGET, variant="RACER-R", random_state=seed, **setting)
    started = time.perf_counter()
    router.fit(x, r, t)
    seconds = time.perf_counter() - started
    rt, tt = schema.correct_matrix(test), schema.token_matrix(test)
    rate = float(router.predict(xt).mean())
    accuracy = 100 * router.score(xt, rt)
    random = random_point(test, rate)["accuracy"]
    return {
        "accuracy": accuracy,
        "gain_over_random": accuracy - random,
        "overspend": router.cost(xt, tt) / BUDGET - 1,
        "reasoning_rate": rate,
        "degenerate": min(rate, 1 - rate) < DEGENERATE,
        "fit_s": seconds,
    }


def _measure(data: tuple) -> dict:
    found = {}
    for name, setting in SETTINGS.items():
        fits = [_fit_once(data, setting, s) for s in SEEDS]
        found[name] = {
            **{k: float(np.mean([f[k] for f in fits])) for k in fits[0] if k != "degenerate"},
            "gain_sd": float(np.std([f["gain_over_random"] for f in fits], ddof=1)),
            "degenerate_share": float(np.mean([f["degenerate"] for f in fits])),
            "settings": setting,
        }
    return found


def run() -> dict:
    sets = {"simulated (2,000 pairs)": _simulated()}
    with tempfile.TemporaryDirectory(prefix="racer-defaults-") as tmp:
        real = _llmbar(Path(tmp))
        if real is not None:
            sets[f"LLMBar GPT-4 ({len(real[0]):,} training pairs)"] = real
        results = {name: _measure(data) for name, data in sets.items()}
    sim = results["simulated (2,000 pairs)"]
    paper, small = (sim[k]["gain_over_random"] for k in SETTINGS)
    return {
        "name": "router_defaults",
        "ratio": small / paper if paper else float("nan"),
        "sets": results,
        "not_measured": {} if real is not None else {"LLMBar": "files or encoder not at hand"},
        "settings": {
            "budget": BUDGET,
            "variant": "RACER-R",
            "seeds": len(SEEDS),
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        },
    }


def line(result: dict) -> str:
    parts = []
    for name, found in result["sets"].items():
        shown = ", ".join(
            f"{k}: gain over Random {v['gain_over_random']:+.2f} pts, overspend "
            f"{v['overspend']:+.1%}, degenerate {v['degenerate_share']:.0%}"
            for k, v in found.items()
        )
        parts.append(f"{name}: {shown}")
    return "router_defaults: " + "; ".join(parts)
