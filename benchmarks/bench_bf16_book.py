"""The sim book's claims with the trainer's matrix products in bfloat16, against float32.

Issue 24 keeps float32 as the trainer's default unless every chapter's findings and the
report's statuses are the same under bf16. This builds the ``sim`` profile twice from scratch
(``racer book build --profile sim --no-book`` into fresh folders, the second with
``--set 'trainer={precision: bf16}'``, which reaches every chapter that trains routers) and
compares the reproduction report's ``claims.csv`` claim by claim: the status, and the value
the build measured (the ``build_value`` column, which carries each finding's numbers).

Writes ``results/bench/bf16_book.json``: the claims whose status changed and those whose
value changed, each with both builds' text, and both builds' wall times (``ratio`` is the
float32 build's time over the bf16 build's); and the re-running page's paragraph,
``book/_bf16_check.md`` (included by ``book/rerun.md``). About eight minutes on two cores; run with
``make bench-bf16-book``.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILE = "sim"
CLAIMS = Path(PROFILE) / "01_reproduction_report" / "claims.csv"
BF16 = "trainer={precision: bf16}"
PAGE = ROOT / "book" / "_bf16_check.md"
COLUMNS = ("artifact", "claim", "status_fp32", "status_bf16")


def _build(work: Path, name: str, extra: list[str]) -> tuple[float, Path]:
    """One fresh ``sim`` build without the book; (seconds, its claims.csv)."""
    results = work / name / "results"
    cmd = [sys.executable, "-m", "racer_lib", "book", "build", "--profile", PROFILE, "--no-book"]
    cmd += ["--results-dir", str(results), "--build-dir", str(work / name / "build"), *extra]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, env=os.environ.copy())
    return time.perf_counter() - start, results / CLAIMS


def read_claims(path: Path) -> dict[tuple[str, str], dict]:
    """The report's claims keyed by (artifact, claim)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return {(row["artifact"], row["claim"]): row for row in csv.DictReader(handle)}


def compare(fp32: dict, bf16: dict) -> dict:
    """Claim by claim: which statuses and which measured values differ between two reports."""
    keys = list(dict.fromkeys([*fp32, *bf16]))

    def entry(key):
        a, b = fp32.get(key, {}), bf16.get(key, {})
        return {
            "artifact": key[0],
            "claim": key[1],
            "status_fp32": a.get("status"),
            "status_bf16": b.get("status"),
            "value_fp32": a.get("build_value"),
            "value_bf16": b.get("build_value"),
        }

    status = [
        entry(k) for k in keys if fp32.get(k, {}).get("status") != bf16.get(k, {}).get("status")
    ]
    value = [
        entry(k)
        for k in keys
        if fp32.get(k, {}).get("build_value") != bf16.get(k, {}).get("build_value")
    ]
    return {
        "claims": len(keys),
        "statuses_changed": status,
        "values_changed": value,
        "statuses_unchanged": not status,
    }


#: The trainer's code, whose digest the page names (the paragraph holds for that trainer only).
TRAINER = (
    "racer_lib/routing/train.py",
    "racer_lib/routing/steps.py",
    "racer_lib/routing/policy.py",
)


def provenance() -> dict:
    """The commit the check ran on (``+changes`` when the library had uncommitted changes) and
    the sha256 of the trainer's code (its first 12 hex digits)."""
    import hashlib

    digest = hashlib.sha256()
    for name in TRAINER:
        digest.update((ROOT / name).read_bytes())
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "racer_lib", "notebooks"],
                               cwd=ROOT, text=True, capture_output=True).stdout.strip()  # fmt: skip
        commit = head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"commit": commit, "trainer_sha256": digest.hexdigest()[:12]}


def run() -> dict:
    with tempfile.TemporaryDirectory(prefix="racer-bf16-book-") as tmp:
        work = Path(tmp)
        fp32_s, fp32_claims = _build(work, "fp32", [])
        bf16_s, bf16_claims = _build(work, "bf16", ["--set", BF16])
        result = compare(read_claims(fp32_claims), read_claims(bf16_claims))
    result = {
        "name": "bf16_book",
        "ratio": fp32_s / bf16_s,
        "fp32_build_s": fp32_s,
        "bf16_build_s": bf16_s,
        **result,
        "settings": {
            "profile": PROFILE,
            "set": BF16,
            "data_mirror": os.environ.get("RACER_DATA_DIR") or None,
            "date": time.strftime("%Y-%m-%d"),
            "cores": os.cpu_count(),
            **provenance(),
        },
    }
    PAGE.write_text(page(result), encoding="utf-8")
    return result


def page(result: dict) -> str:
    """The re-running page's paragraph on bfloat16 as the default, from a check's result."""
    changed = result["statuses_changed"]
    rows = "\n".join(
        "| " + " | ".join(str(c[k]).replace("|", "\\|") for k in COLUMNS) + " |" for c in changed
    )
    table = (
        "\n\n| artifact | claim | status (float32) | status (bfloat16) |\n|---|---|---|---|\n"
        + rows
        + "\n"
        if changed
        else "\n"
    )
    verdict = (
        "Every status is the same, so bfloat16 could be the default by the rule this book keeps "
        "(the trainer's default stays float32 until the `paper-sim` profile is checked too)."
        if not changed
        else f"{len(changed)} of them changed status, so float32 stays the trainer's default:"
    )
    settings = result["settings"]
    made = (
        f"commit {settings['commit']}, trainer code sha256 {settings['trainer_sha256']}"
        if "commit" in settings
        else "before the page named its commit"
    )
    return (
        f"Checked on {settings['date']} ({made}; {settings['cores']} CPU cores; the "
        f"`sim` build took {result['fp32_build_s']:.0f} s in float32 and "
        f"{result['bf16_build_s']:.0f} s in bfloat16): of the report's {result['claims']} "
        f"claims, {len(result['values_changed'])} measured a different value with the "
        "trainer's matrix products in bfloat16, which keep about three significant digits, so "
        f"the trained routers and their selected checkpoints differ. {verdict}" + table
    )


def line(result: dict) -> str:
    return (
        f"{result['name']}: sim book in bf16 vs fp32: {len(result['statuses_changed'])} of "
        f"{result['claims']} claims change status, {len(result['values_changed'])} change their "
        f"measured value; builds {result['fp32_build_s']:.0f} s fp32, "
        f"{result['bf16_build_s']:.0f} s bf16"
    )
