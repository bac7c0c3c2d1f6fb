"""Each emergent claim's rule measured on its own build's data (issue 40): the
per-claim part of ``make bench-verdicts`` (:mod:`bench_verdicts` calls :func:`run`), alone
``make bench-claim-rates`` (``VERDICTS_ONLY=claims``: the recorded builds' measures kept).

For every emergent claim of the report decided on a per-seed family (a ``Difference`` or an
``Equivalence`` with a smallest effect of interest, a rule of the paper's own such as §5.3's
half-cost match, or a finding a chapter decided and wrote with its family,
:mod:`racer_lib.claims.families`), :func:`racer_lib.claims.engine.claim_rates` resamples the
seeds the ``sim`` build wrote for it, at its own sizes (the number of seeds and members that
decided it; a family of more than :data:`MANY_MEMBERS` members gets proportionally fewer
resamples, never fewer than :data:`MIN_REPLICATIONS`):

* **false-positive rate** under the least favourable null: the fewest members that make the
  claim false (one of an "every" family, a bare majority of a "most" one) at the rule's
  boundary (the SESOI; an equivalence at its margin; neither its mean nor its median beyond
  it, since a skewed sample is decided on its median), the others far on the claimed side, in
  turn;
  :data:`REPLICATIONS` resampled data sets per claim, with a Wilson 95 % upper bound (goal: at
  most :data:`FPR_TARGET`); beside it the rate with the member's mean alone at the boundary
  (``fpr_mean_null``: the null of the mean, which outlying seeds make untestable);
* **power** at the effect its quantity expects (the paper's, ``racer_lib.paper.effects``;
  each member's, for a finding);
* **minimum detectable effect** (80 % power; Student's t at the build's spread; for a family,
  its weakest member's), from the report's own row.

No rebuild: it reads ``results/sim`` as ``make book`` left it (``CLAIM_RATES_RESULTS`` names
another results folder). A claim with no per-seed family (a finding checked on one draw) is
listed with the reason. The result is stored in ``results/bench/verdicts.json``
(``claim_rates``) and ``book/_claim_rates.md``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from racer_lib.evaluation.intervals import wilson_interval  # noqa: E402
from racer_lib.paper import engine, report  # noqa: E402
from racer_lib.paper.registry import claims  # noqa: E402

CLAIMS = claims()

RESULTS = Path(os.environ.get("CLAIM_RATES_RESULTS", ROOT / "results" / "sim"))
REPLICATIONS = int(os.environ.get("CLAIM_RATES_REPLICATIONS", "1000"))
FPR_TARGET = 0.05
#: A family with more members than this gets ``REPLICATIONS * MANY_MEMBERS / members``
#: resamples (each redraw tests every member), at least :data:`MIN_REPLICATIONS` (issue 40).
MANY_MEMBERS, MIN_REPLICATIONS = 20, 200
CLAIMS_CSV = Path("01_reproduction_report") / "claims.csv"
PAGE = ROOT / "book" / "_claim_rates.md"


def _report_rows() -> dict[str, dict]:
    """The report's rows of this build, by ``artifact | claim``: which claims are emergent as
    the build's own ``claims.csv`` says (its chapters decided their findings), each
    comparison's status, effect, power and MDE decided again by the rules as they are now
    (:func:`racer_lib.paper.report.report` on the build's CSVs)."""
    path = RESULTS / CLAIMS_CSV
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `make book` first (or set CLAIM_RATES_RESULTS)")
    built = pd.read_csv(path, keep_default_na=False, na_values=[""]).to_dict("records")
    now = {(r["artifact"], r["claim"]): r for r in report.report(RESULTS, "sim").to_dict("records")}
    rows = {}
    for r in built:
        fresh = now.get((r["artifact"], r["claim"]), {})
        rows[f"{r['artifact']} | {r['claim']}"] = {
            **r,
            **{k: fresh[k] for k in ("status", "sesoi", "effect", "power", "mde") if k in fresh},
        }
    return rows


def _number(value) -> float | None:
    """A CSV cell as a JSON number (None when empty)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if value == value else None


def run() -> dict:
    start = time.perf_counter()
    rows = _report_rows()
    claims, unmeasured = {}, {}
    for claim in CLAIMS:
        key = f"{claim.artifact} | {claim.claim}"
        row = rows.get(key)
        if row is None or str(row.get("emergent")).lower() != "true":
            continue
        folder = RESULTS / claim.chapter
        family = engine.family_of(claim, folder)
        if family is None or not family.members:
            unmeasured[key] = (
                f"chapter {claim.chapter} decided it on no per-seed family ({claim.rule.kind})"
            )
            continue
        members = len(family.members)
        replications = REPLICATIONS
        if members > MANY_MEMBERS:
            replications = max(MIN_REPLICATIONS, REPLICATIONS * MANY_MEMBERS // members)
        rates = engine.claim_rates(claim, folder, replications)
        power = rates["power_hits"]
        lo, hi = wilson_interval(rates["fpr_hits"], rates["trials"])
        claims[key] = {
            **rates,
            "status": row["status"],
            "sesoi": _number(row.get("sesoi")),
            "effect": _number(row.get("effect")),
            "fpr": rates["fpr_hits"] / rates["trials"],
            "fpr_wilson_95": [lo, hi],
            "fpr_mean_null": rates["fpr_mean_hits"] / rates["trials"],
            "fpr_mean_null_wilson_95": list(
                wilson_interval(rates["fpr_mean_hits"], rates["trials"])
            ),
            "meets_target": bool(hi <= FPR_TARGET),
            "kind": claim.rule.kind,
            "power": power / rates["trials"] if power is not None else None,
            "power_t": _number(row.get("power")),
            "mde": _number(row.get("mde")),
        }
    uppers = [c["fpr_wilson_95"][1] for c in claims.values()]
    result = {
        "name": "claim_rates",
        "ratio": 0.0,
        # the page never shows an absolute path (`make book-check` refuses one)
        "results": str(RESULTS.relative_to(ROOT))
        if RESULTS.is_relative_to(ROOT)
        else f"a build outside the repository, .../{'/'.join(RESULTS.parts[-2:])}",
        "replications": REPLICATIONS,
        "fpr_target": FPR_TARGET,
        "measured": len(claims),
        "meeting_target": int(sum(c["meets_target"] for c in claims.values())),
        "largest_fpr_upper": max(uppers) if uppers else None,
        "claims": claims,
        "not_measured": unmeasured,
        "seconds": round(time.perf_counter() - start, 1),
        "date": time.strftime("%Y-%m-%d"),
        "commit": _commit(),
    }
    PAGE.write_text(page(result), encoding="utf-8")
    return result


def _commit() -> str:
    import subprocess

    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def page(result: dict) -> str:
    """The re-running page's paragraph and table: each measured claim's false-positive rate
    under its least favourable null, power at the paper's effect and minimum detectable
    effect, on resamples of the build's own seeds."""
    upper = result["largest_fpr_upper"]
    if upper is None:
        return "No emergent claim was measured (`make bench-verdicts`).\n"
    lines = [
        f"Measured on {result['date']} (commit {result['commit']}) by `make bench-verdicts` "
        f"on `{result['results']}`: {result['replications']} resampled data sets per claim, "
        "built from the build's own per-seed values. Of the "
        f"{result['measured']} emergent claims measured, {result['meeting_target']} have a "
        "false-positive rate under their least favourable null whose 95 % Wilson upper bound "
        f"is at most {100 * result['fpr_target']:.0f} % (largest upper bound "
        f"{100 * upper:.1f} %); {len(result['not_measured'])} emergent claims have no per-seed "
        "family to measure. A finding a chapter decides (kind `finding`) is measured on the "
        "family it wrote beside it, as a comparison is. A member whose seeds are skewed "
        "(|skewness| > 1) is decided on its median by the exact sign test; the last column "
        "is the rate when the member's mean alone sits at the boundary (its median beyond).",
        "",
        "| claim | status | false-positive rate | power at the paper's effect | MDE "
        "| mean at the boundary |",
        "|---|---|---|---|---|---|",
    ]
    for key, c in result["claims"].items():
        mde = c["mde"] if c["mde"] is not None else float("nan")
        lines.append(
            f"| {key} | {c['status']} | {100 * c['fpr']:.1f} % (≤ "
            f"{100 * c['fpr_wilson_95'][1]:.1f} %) | {_pct(c['power'], 0)} | {mde:.3g} | "
            f"{_pct(c.get('fpr_mean_null'))} |"
        )
    return "\n".join(lines) + "\n"


def _pct(rate: float | None, digits: int = 1) -> str:
    return "" if rate is None else f"{100 * rate:.{digits}f} %"


def line(result: dict) -> str:
    upper = result["largest_fpr_upper"]
    return (
        f"claim_rates: {result['meeting_target']} of {result['measured']} emergent "
        f"claims with a false-positive upper bound <= {100 * result['fpr_target']:g} % "
        f"(largest {100 * upper:.1f} %); {len(result['not_measured'])} without a per-seed "
        "family, not measured"
        if upper is not None
        else "claim_rates: no emergent claim with a per-seed family in this build"
    )
