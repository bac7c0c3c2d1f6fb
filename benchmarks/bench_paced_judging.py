"""What pacing costs a judging run beyond the judge: ``racer judge run --router R --pace dual``
decides a round, judges it, then reads the shard's judged costs to move the price.

With the tests' fake judge (``tests/test_judging_paced.py``: no model, so the run's own work is
all there is), the same pairs are judged routed without pacing and paced, in rounds of
:data:`BATCH` pairs, at two run lengths. Before the shard's parts were kept between rounds, each
round parsed every part written so far: 800 pairs took 195 s paced, the time per round growing
with the run (0.27 s at 200 pairs, 0.98 s at 800). ``ratio``: the unpaced run's seconds over
the paced run's at the longer length (1: pacing adds nothing).
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

LENGTHS, BATCH = (200, 800), 4


def _seconds(n: int, pace: str) -> float:
    import test_judging_paced as t

    from racer_lib import judging
    from racer_lib.routing import routed
    from racer_lib.routing.decision import DecisionRule

    router, pairs, plan = t._setup(n)
    backend = t.PricedBackend()
    with tempfile.TemporaryDirectory(prefix="racer-paced-") as out:
        run = judging.RunSpec.of_judge(
            judging.JudgeSpec("hybrid", "fake"), Path(out), batch_size=BATCH, router="r.pt",
            pace=pace,
        )  # fmt: skip
        backends = {"instruct": backend, "reasoning": backend}
        start = time.perf_counter()
        if pace == "off":
            judging.run_judging(pairs, backends, run, routing=plan)
        else:
            routed.execute_paced(run, pairs, plan, DecisionRule(), router, backends=backends)
        return time.perf_counter() - start


def run() -> dict:
    times = {f"{pace}_{n}_s": _seconds(n, pace) for n in LENGTHS for pace in ("off", "dual")}
    rounds = {n: n // BATCH for n in LENGTHS}
    per_round = {n: times[f"dual_{n}_s"] / rounds[n] for n in LENGTHS}
    longest = max(LENGTHS)
    return {
        "name": "paced_judging",
        "ratio": times[f"off_{longest}_s"] / times[f"dual_{longest}_s"],
        "times_s": times,
        "paced_seconds_per_round": {str(n): s for n, s in per_round.items()},
        "growth_per_round": per_round[longest] / per_round[min(LENGTHS)],
        "settings": {
            "judge": "the tests' fake judge (no model)",
            "batch_size": BATCH,
            "lengths": list(LENGTHS),
            "date": time.strftime("%Y-%m-%d"),
            "machine": platform.machine(),
        },
    }


def line(result: dict) -> str:
    t, n = result["times_s"], max(result["settings"]["lengths"])
    return (
        f"paced judging (fake judge, rounds of {result['settings']['batch_size']}): {n} pairs "
        f"{t[f'dual_{n}_s']:.1f} s paced against {t[f'off_{n}_s']:.1f} s unpaced (ratio "
        f"{result['ratio']:.2f}); seconds per round grow x{result['growth_per_round']:.1f} from "
        f"{min(result['settings']['lengths'])} to {n} pairs"
    )
