"""Keeping the budget after deployment, measured against issue 43's goal (chapter 18).

The goal: paced RACER's running mean cost after 500 pairs at most 1 % over the budget on every
stream of chapter 18, at an accuracy at most 1 point below offline RACER's at the same realized
cost, with offline RACER's and RACER-C's overspend beside it. This benchmark builds chapter 18
as the ``sim`` profile does (``racer book build --profile sim --only 18_keeping_the_budget``) at
the master seeds :data:`SEEDS`, never used to choose a setting, and reads each build's
``pacing_summary.csv``: per stream, the mean over the build's replicate seeds.

``ratio``: the goal's overspend divided by the largest paced overspend found (above 1: the goal
is met with room; at or below 0, every stream underspends).
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from racer_lib.paper import effects  # noqa: E402
from racer_lib.paper.chapters import keeping_the_budget as ch  # noqa: E402

SEEDS = (20, 21, 22)
GOAL_OVERSPEND = effects.PACED_OVERSPEND.sesoi  # 1 %: the goal, and the claim's margin
GOAL_ACCURACY = effects.PACED_ACCURACY.sesoi  # 1 point
CHAPTER = "18_keeping_the_budget"


def _build(seed: int, work: Path) -> pd.DataFrame:
    """Chapter 18 at master seed ``seed`` under the sim profile: its summary table."""
    out = work / f"seed{seed}"
    subprocess.run(
        [sys.executable, "-m", "racer_lib", "book", "build", "--profile", "sim", "--only",
         CHAPTER, "--no-book", "--set", f"seed={seed}", "--results-dir", str(out / "results"),
         "--build-dir", str(out / "build")],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    return pd.read_csv(out / "results" / "sim" / CHAPTER / ch.SUMMARY_CSV)


def _rows(seed: int, summary: pd.DataFrame) -> list[dict]:
    """Per stream: each policy's overspend after 500 pairs and paced RACER's accuracy gap."""
    table = summary.set_index(["stream", "policy"])
    rows = []
    for stream in summary["stream"].unique():
        at = table.loc[stream]
        rows.append(
            {
                "seed": seed,
                "stream": stream,
                **{f"overspend {p}": float(at.loc[p, "overspend"]) for p in ch.POLICIES},
                "accuracy gap (offline at paced spend - paced)": float(
                    at.loc[ch.MATCHED, "accuracy_mean"] - at.loc[ch.PACED, "accuracy_mean"]
                ),
            }
        )
    return rows


def run() -> dict:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="racer-pacing-") as tmp:
        rows = [r for s in SEEDS for r in _rows(s, _build(s, Path(tmp)))]
    table = pd.DataFrame(rows)
    paced = table[f"overspend {ch.PACED}"]
    gap = table["accuracy gap (offline at paced spend - paced)"]
    worst = float(paced.max())
    return {
        "name": "pacing",
        "ratio": GOAL_OVERSPEND / worst if worst > 0 else float("inf"),
        "worst_paced_overspend": worst,
        "worst_capped_overspend": float(table[f"overspend {ch.CAPPED}"].max()),
        "worst_accuracy_gap": float(gap.max()),
        "meets_target": bool(worst <= GOAL_OVERSPEND and gap.max() <= GOAL_ACCURACY),
        "goals": {"overspend_after_500": GOAL_OVERSPEND, "accuracy_gap_points": GOAL_ACCURACY},
        "per_stream": table.to_dict(orient="records"),
        "seconds": time.perf_counter() - start,
        "settings": {
            "profile": "sim",
            "master_seeds": list(SEEDS),
            "records": "simulated",
            "date": time.strftime("%Y-%m-%d"),
            "machine": platform.machine(),
        },
    }


def line(result: dict) -> str:
    met = "met" if result["meets_target"] else "NOT met"
    return (
        f"pacing (chapter 18, sim, master seeds {result['settings']['master_seeds']}): largest "
        f"paced overspend after 500 pairs {result['worst_paced_overspend']:+.2%} (capped "
        f"{result['worst_capped_overspend']:+.2%}), largest accuracy gap to offline RACER at the "
        f"same spend {result['worst_accuracy_gap']:+.2f} pts; goal (+{GOAL_OVERSPEND:.0%}, "
        f"{GOAL_ACCURACY:g} pt) {met}"
    )
