"""Run every ``benchmarks/bench_*.py``, write ``results/bench/<name>.json``, print one line each.

Each benchmark module has ``run() -> dict`` returning at least ``name``, ``ratio`` (how many
times faster ours is than the reference; above 1 is faster), the timings and the settings, and
``line(result) -> str``. Ratios are measured within one run, so a shared, noisy machine slows
both sides alike. Usage: ``python benchmarks/run.py [NAME ...]`` (default: all but the long
ones of :data:`LONG`, which run only when named: ``make bench-paper-sim``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "results" / "bench"
LONG = {
    "paper_sim",
    "bf16_book",
    "verdicts",
    "seed_plan",
}  # minutes each on two cores: run only when named


def main(argv: list[str]) -> int:
    files = sorted(HERE.glob("bench_*.py"))
    wanted = set(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for path in files:
        stem = path.stem.removeprefix("bench_")
        if (wanted and stem not in wanted) or (not wanted and stem in LONG):
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        result = module.run()
        target = OUT / f"{result['name']}.json"
        target.write_text(json.dumps(result, indent=2) + "\n")
        print(f"{module.line(result)}  -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
