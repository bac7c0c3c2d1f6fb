"""How many replicate seeds each ``sim`` chapter needs for its emergent claims' statuses to stop
moving with the master seed (issue 40): ``make bench-seed-plan``.

A status moves between builds when a claim's effect sits a few standard errors from its rule's
edge. For every emergent comparison claim of the report,
:func:`racer_lib.claims.engine.status_odds` pools the per-seed values that the *tuning* builds
wrote for it (``SEED_PLAN_BUILDS``: the sim results of master seeds 0, 1 and 2, the seeds on
which the profile's sizes are chosen) and redraws the claim's decision at each candidate count
of :data:`CANDIDATES`. The rule, fixed before any build it is then measured on:

* a chapter's count is the smallest candidate, no smaller than its present one, at which every
  plannable claim it decides reaches one decision in at least :data:`TARGET` of the redraws
  (so that three builds agree with probability about ``TARGET ** 3``);
* its cost is its notebook time per seed (``SEED_PLAN_TIMINGS``, a clean build's
  ``timings.json``) times the seeds it adds; a chapter whose routers another loads
  (:data:`TIED`) adds both chapters' time;
* chapters are granted their counts cheapest first while the book's notebook time stays within
  :data:`NOTEBOOK_BUDGET_S` (two at a time, about half of it in wall time: ``make book`` keeps
  to its ten minutes); the others keep their count, and the plan names them.

Claims that a chapter decides in its own code (findings) have no per-seed values here and are
listed as not planned. The plan is an estimate from the tuning builds, never evidence for a
claim; the stability that counts is measured afterwards on master seeds never used
(``make bench-verdicts VERDICTS_ONLY=stability``). Writes ``results/bench/seed_plan.json``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from racer_lib.claims.engine import status_odds  # noqa: E402
from racer_lib.paper.registry import claims  # noqa: E402

BUILDS = [Path(p) for p in os.environ.get("SEED_PLAN_BUILDS", "results/sim").split()]
TIMINGS = Path(os.environ.get("SEED_PLAN_TIMINGS", "build/sim/timings.json"))
PROFILE = ROOT / "profiles" / "sim.yaml"
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


def _needed(rows: list[dict]) -> int | None:
    planned = [r for r in rows if r["odds"]]
    if not planned:
        return None
    counts = sorted(set.intersection(*(set(r["odds"]) for r in planned)))
    for n in counts:
        if all(max(r["odds"][n].values()) >= TARGET for r in planned):
            return n
    return None


def run() -> dict:
    start = time.perf_counter()
    notebooks = yaml.safe_load(PROFILE.read_text(encoding="utf-8"))["notebooks"]
    current = {k: int(v["n_seeds"]) for k, v in notebooks.items() if v and "n_seeds" in v}
    seconds = json.loads(TIMINGS.read_text(encoding="utf-8"))
    per_chapter = _odds(current)
    total = sum(seconds.values())
    plan = {}
    for chapter, rows in per_chapter.items():
        needed = _needed(rows)
        members = [chapter, *(k for k, v in TIED.items() if v == chapter)]
        extra = None
        if needed is not None:
            extra = sum(seconds[m] / current[m] * (needed - current[m]) for m in members)
        plan[chapter] = {"current": current.get(chapter), "needed": needed, "extra_s": extra,
                         "chapters": members, "claims": rows}  # fmt: skip
    for chapter in sorted(plan, key=lambda c: (plan[c]["extra_s"] is None, plan[c]["extra_s"])):
        entry = plan[chapter]
        grant = entry["extra_s"] is not None and total + entry["extra_s"] <= NOTEBOOK_BUDGET_S
        entry["granted"] = grant
        if grant:
            total += entry["extra_s"]
    return {
        "name": "seed_plan",
        "ratio": None,
        "plan": plan,
        "notebook_s": total,
        "settings": {
            "builds": [str(b) for b in BUILDS],
            "timings": str(TIMINGS),
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
        elif entry["needed"] is None:
            parts.append(f"{chapter} {entry['current']} (no candidate reaches {TARGET:.0%})")
        elif entry["needed"] == entry["current"]:
            parts.append(f"{chapter} {entry['current']}")
        else:
            word = "->" if entry["granted"] else "needs"
            parts.append(f"{chapter} {entry['current']} {word} {entry['needed']} "
                         f"(+{entry['extra_s']:.0f} s)")  # fmt: skip
    return f"seed plan: {'; '.join(parts)}; notebook time {result['notebook_s']:.0f} s"
