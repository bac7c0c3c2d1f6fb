"""A practitioner's router from the command line, timed as a user runs it (issue 43's goals).

Each command runs in its own process, as typed at a shell, and its wall time counts everything
the user waits for: Python's start, the imports (torch once), reading the records, training or
routing, writing the result.

* **train, 32,000 simulated pairs**: ``racer simulator generate`` (qwen3-4b's training mixture
  at scale 1: 40,000 pairs, 32-dim embeddings), then ``racer router train --budget 3`` on it
  (a fifth held out for validation: 32,000 train pairs; the default epochs). Goal: at most
  60 s on two cores. ``racer router train`` fits the logistic-regression baseline at the same
  budget and prints both fit times; both are recorded.
* **train, one LLMBar judge**: GPT-4's outputs on LLMBar's training subsets (chapter 17's),
  imported and embedded with the CPU encoder beforehand (not timed), then ``racer router
  train``. Goal: at most 5 s. Measured only where LLMBar's files (the mirror
  ``RACER_DATA_DIR``, or the cache) and the encoder can be had; otherwise the reason is
  recorded.
* **route, 10,000 pairs**: ``racer records route`` of a second simulated draw (scale 0.25)
  with the 32,000-pair router. Goal: at most 5 s wall.

``ratio``: the slowest goal's time over its measured time (above 1: every goal met).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RACER = [sys.executable, "-m", "racer_lib"]
GOALS = {"train_32k_s": 60.0, "train_llmbar_s": 5.0, "route_10k_s": 5.0}
LLMBAR_TRAIN = ("natural", "neighbor", "gptinst")  # chapter 17's training subsets


def _timed(args: list[str], cwd: Path) -> tuple[float, str]:
    """Wall seconds of one ``racer`` command, and what it printed."""
    start = time.perf_counter()
    done = subprocess.run(RACER + args, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"racer {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return seconds, done.stdout + done.stderr


def _fit_times(printed: str) -> dict[str, float]:
    """The two fit times ``racer router train`` prints (``fitted in 0.12 s (the router: 41.0
    s)``): the logistic regression's and the router's, in seconds; empty if not found."""
    found = re.search(r"fitted in (\d+(?:\.\d+)?) s \(the router: (\d+(?:\.\d+)?) s\)", printed)
    if found is None:
        return {}
    return {"logistic_regression_s": float(found[1]), "router_s": float(found[2])}


def _llmbar(work: Path) -> tuple[float | None, str]:
    """``router train`` on GPT-4's LLMBar training subsets, or None and why not."""
    sys.path.insert(0, str(ROOT))
    from racer_lib.records import sources

    folder, why = sources.fetched_folder("llmbar", "LICENSE")  # as chapter 17 finds them
    if not folder:
        return None, f"LLMBar's files not at hand: {why}"
    records = work / "llmbar.parquet"
    args = ["records", "import", "--format", "llmbar", "--llmbar-dir", str(folder)]
    args += ["--judge", "GPT-4", "--out", str(records)]
    args += [a for s in LLMBAR_TRAIN for a in ("--subset", s)]
    try:
        _timed(args, work)
        _timed(["pairs", "embed", str(records), "--encoder", "all-MiniLM-L6-v2", "-q"], work)
    except SystemExit as exc:
        return None, f"LLMBar records or the encoder not at hand: {str(exc)[-300:]}"
    seconds, _ = _timed(
        ["router", "train", str(records), "--budget", "3", "--seed", "0", "-q",
         "--out", str(work / "llmbar.pt")], work,
    )  # fmt: skip
    return seconds, ""


def run() -> dict:
    with tempfile.TemporaryDirectory(prefix="racer-router-cli-") as tmp:
        work = Path(tmp)
        sim, new = work / "sim.parquet", work / "new.parquet"
        gen = ["simulator", "generate", "--judge", "qwen3-4b", "--dim", "32"]
        _timed([*gen, "--seed", "0", "--scale", "1.0", "--out", str(sim)], work)
        _timed([*gen, "--seed", "1", "--scale", "0.25", "--out", str(new)], work)
        train_s, printed = _timed(
            ["router", "train", str(sim), "--budget", "3", "--seed", "0",
             "--out", str(work / "r.pt")], work,
        )  # fmt: skip
        route_s, _ = _timed(["records", "route", str(new), "--router", str(work / "r.pt")], work)
        llmbar_s, why = _llmbar(work)
    times = {"train_32k_s": train_s, "train_llmbar_s": llmbar_s, "route_10k_s": route_s}
    measured = {k: v for k, v in times.items() if v is not None}
    return {
        "name": "router_cli",
        "ratio": min(GOALS[k] / v for k, v in measured.items()),
        **times,
        "fit_times_printed": _fit_times(printed),
        "goals_s": GOALS,
        "meets_target": {k: v <= GOALS[k] for k, v in measured.items()},
        "not_measured": {"train_llmbar_s": why} if llmbar_s is None else {},
        "settings": {
            "simulated": "qwen3-4b training mixture, scale 1.0 (40,000 pairs, 32,000 train), "
            "dim 32; routed: scale 0.25 (10,000 pairs)",
            "budget": 3,
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        },
    }


def line(result: dict) -> str:
    parts = []
    for key, goal in result["goals_s"].items():
        value = result[key]
        shown = "not measured" if value is None else f"{value:.1f} s"
        ok = "" if value is None else (" met" if value <= goal else " NOT met")
        parts.append(f"{key.removesuffix('_s')} {shown} (goal <= {goal:g} s{ok})")
    return "router_cli: " + "; ".join(parts)
