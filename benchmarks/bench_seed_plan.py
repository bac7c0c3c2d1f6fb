"""How many replicate seeds each ``sim`` chapter needs for its emergent claims' statuses to stop
moving with the master seed (issue 40): ``make bench-seed-plan``.

A status moves between builds when a claim's effect sits a few standard errors from its rule's
edge. For every emergent comparison claim of the report,
:func:`racer_lib.claims.engine.status_odds` pools the per-seed values that the *tuning* builds
wrote for it (``SEED_PLAN_BUILDS``: the sim results of master seeds 0, 1 and 2, the seeds on
which the profile's sizes are chosen) and redraws the claim's decision at each candidate count
of :data:`CANDIDATES`. The rule, fixed before any build it is then measured on:

* a chapter's count is the smallest candidate, no smaller than the count it ran with in the
  timing build (below), at which its least stable plannable claim reaches one decision in at
  least :data:`TARGET` of the redraws (so that three builds agree with probability about
  ``TARGET ** 3``); where no candidate does, the one at which that claim is most stable. Each
  redraw first resamples the pool (the pooled effect is an estimate too), then draws the count
  from it;
* its cost is its notebook time per seed (``SEED_PLAN_TIMING_BUILD``: a clean build's
  ``timings.json`` over the counts its notebooks ran with) times the seeds it adds; a chapter
  whose routers another loads (:data:`TIED`) adds both chapters' time;
* chapters are granted their counts in order of what their least stable claim gains per second
  of notebook time, while the book's notebook time stays within :data:`NOTEBOOK_BUDGET_S` (two
  at a time, about half of it in wall time: ``make book`` keeps to its ten minutes); the others
  keep their count, and the plan names them.

Claims that a chapter decides in its own code (findings) have no per-seed values here and are
listed as not planned. The plan is an estimate from the tuning builds, never evidence for a
claim; the stability that counts is measured afterwards on master seeds never used
(``make bench-verdicts VERDICTS_ONLY=stability``). Writes ``results/bench/seed_plan.json``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from racer_lib.claims.engine import status_odds  # noqa: E402
from racer_lib.paper.registry import claims  # noqa: E402

BUILDS = [Path(p) for p in os.environ.get("SEED_PLAN_BUILDS", "results/sim").split()]
#: a clean sim build (``--build-dir``/sim): its ``timings.json`` and the seed counts its executed
#: notebooks were given, whose ratio is each chapter's notebook time per seed
TIMING_BUILD = Path(os.environ.get("SEED_PLAN_TIMING_BUILD", "build/sim"))
CANDIDATES = (10, 20, 30, 40, 60, 80, 120)
TARGET = 0.98
NOTEBOOK_BUDGET_S = 1000.0
REPLICATIONS = int(os.environ.get("SEED_PLAN_REPLICATIONS", "400"))
#: chapter -> the chapter whose routers (and so seed count) it shares
TIED = {"10_advanced_baselines": "07_budget_frontier"}
CLAIMS_CSV = Path("01_reproduction_report") / "claims.csv"


def _emergent(build: Path) -> set[tuple[str, str]]:
    path = build / CLAIMS_CSV
    if not path.is_file():
        raise SystemExit(f"{path} is missing: build the sim book first (or set SEED_PLAN_BUILDS)")
    table = pd.read_csv(path)
    return {(r.artifact, r.claim) for r in table.itertuples() if r.emergent is True}


def _odds(current: dict[str, int]) -> dict[str, list[dict]]:
    """Per chapter, each plannable emergent claim's modal-decision share at every candidate."""
    emergent = _emergent(BUILDS[0])
    per_chapter: dict[str, list[dict]] = {}
    for claim in claims():
        if (claim.artifact, claim.claim) not in emergent:
            continue
        row = {"claim": f"{claim.artifact} | {claim.claim}", "odds": {}}
        for n in (c for c in CANDIDATES if c >= current.get(claim.chapter, 0)):
            odds = status_odds(claim, [b / claim.chapter for b in BUILDS], n, REPLICATIONS)
            if odds is None:
                row["odds"] = None
                break
            row["pooled"] = odds["pooled"]
            row["odds"][n] = {k: odds[k] for k in ("holds", "fails", "inconclusive")}
        per_chapter.setdefault(TIED.get(claim.chapter, claim.chapter), []).append(row)
        print(f"  {claim.chapter}: {row['claim'][:70]}", flush=True)
    return per_chapter


def _timed_counts(build: Path) -> tuple[dict[str, float], dict[str, int]]:
    """The notebook seconds of each chapter in ``build`` and the seed count it ran with (the
    ``n_seeds`` that papermill injected into its executed notebook)."""
    seconds = json.loads((build / "timings.json").read_text(encoding="utf-8"))
    counts = {}
    for stem in seconds:
        path = build / "executed" / f"{stem}.ipynb"
        if not path.is_file():
            continue
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
                found = re.search(r"^n_seeds = (\d+)$", "".join(cell["source"]), re.M)
                if found:
                    counts[stem] = int(found.group(1))
    return seconds, counts


def _least_stable(rows: list[dict], n: int) -> float:
    """The smallest modal-decision share over a chapter's plannable claims at ``n`` seeds."""
    return min(max(r["odds"][n].values()) for r in rows if r["odds"])


def _chosen(rows: list[dict]) -> int | None:
    """The smallest candidate (those :func:`_odds` redrew: none below the chapter's count) at
    which the chapter's least stable claim reaches :data:`TARGET`;
    where none does, the one at which it is most stable (the smallest of equals). None for a
    chapter with no plannable claim."""
    planned = [r for r in rows if r["odds"]]
    if not planned:
        return None
    for r in planned:  # a plan read back from JSON has its counts as strings
        r["odds"] = {int(n): v for n, v in r["odds"].items()}
    counts = sorted(set.intersection(*(set(r["odds"]) for r in planned)))
    reached = [n for n in counts if _least_stable(planned, n) >= TARGET]
    if reached:
        return reached[0]
    return max(counts, key=lambda n: (_least_stable(planned, n), -n))


def select(per_chapter: dict, seconds: dict, current: dict) -> tuple[dict, float]:
    """The plan: each chapter's chosen count (:func:`_chosen`), what it adds to the notebook
    time and to its least stable claim's share, granted in order of that gain per second while
    the book's notebook time stays within :data:`NOTEBOOK_BUDGET_S`."""
    total = sum(seconds.values())
    plan = {}
    for chapter, rows in per_chapter.items():
        chosen = _chosen(rows)
        members = [chapter, *(k for k, v in TIED.items() if v == chapter)]
        entry = {"current": current.get(chapter), "needed": chosen, "extra_s": None, "gain": 0.0,
                 "chapters": members, "claims": rows}  # fmt: skip
        if chosen is not None:
            entry["extra_s"] = sum(seconds[m] / current[m] * (chosen - current[m]) for m in members)
            entry["least_stable"] = {"current": _least_stable(rows, current[chapter]),
                                     "chosen": _least_stable(rows, chosen)}  # fmt: skip
            entry["gain"] = entry["least_stable"]["chosen"] - entry["least_stable"]["current"]
        plan[chapter] = entry

    def value(chapter: str) -> float:
        entry = plan[chapter]
        if entry["extra_s"] is None or entry["gain"] <= 0:
            return -1.0
        return entry["gain"] / max(entry["extra_s"], 1e-9)

    for chapter in sorted(plan, key=value, reverse=True):
        entry = plan[chapter]
        grant = value(chapter) > 0 and total + entry["extra_s"] <= NOTEBOOK_BUDGET_S
        entry["granted"] = grant
        if grant:
            total += entry["extra_s"]
    return plan, total


def run() -> dict:
    start = time.perf_counter()
    seconds, current = _timed_counts(TIMING_BUILD)
    per_chapter = _odds(current)
    plan, total = select(per_chapter, seconds, current)
    return {
        "name": "seed_plan",
        "ratio": None,
        "plan": plan,
        "notebook_s": total,
        "settings": {
            "builds": [str(b) for b in BUILDS],
            "timing_build": str(TIMING_BUILD),
            "candidates": list(CANDIDATES),
            "target": TARGET,
            "notebook_budget_s": NOTEBOOK_BUDGET_S,
            "replications": REPLICATIONS,
            "seconds": round(time.perf_counter() - start, 1),
            "date": time.strftime("%Y-%m-%d"),
        },
    }


def line(result: dict) -> str:
    parts = []
    for chapter, entry in result["plan"].items():
        if not any(r["odds"] for r in entry["claims"]):
            parts.append(f"{chapter} {entry['current']} (no claim it can plan)")
        elif entry["needed"] == entry["current"]:
            parts.append(f"{chapter} {entry['current']}")
        else:
            word = "->" if entry["granted"] else "needs"
            parts.append(f"{chapter} {entry['current']} {word} {entry['needed']} "
                         f"(+{entry['extra_s']:.0f} s)")  # fmt: skip
    return f"seed plan: {'; '.join(parts)}; notebook time {result['notebook_s']:.0f} s"
