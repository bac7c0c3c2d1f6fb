"""The engine that decides a list of claims on a results folder: a claim's rule
(:mod:`racer_lib.paper.claim_rules`) evaluated on the CSVs a chapter wrote, and the status that
follows (:mod:`racer_lib.paper.claims`) from the rule's outcome, the quantities it read
(:mod:`racer_lib.paper.given`) and the records' provenance.

The chapters decide their own claims with it (:func:`rule_findings`, :func:`evaluate_claim`)
while they run, and the reproduction report (:mod:`racer_lib.paper.report`) gathers what every
chapter's claims decided: a chapter never imports the report (an import-linter contract in
``pyproject.toml``), so a page and the report cannot disagree and neither stands above the
other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from racer_lib.evaluation.verdicts import HOLDS
from racer_lib.paper import given
from racer_lib.paper.claim_rules import EMERGENT_KINDS, Claim, NotAvailable, Outcome
from racer_lib.paper.claims import (
    NOT_REPRODUCED,
    NOT_REPRODUCIBLE,
    VERDICT_COLUMNS,
    VERIFIED,
    status_of,
)
from racer_lib.paper.claims_table import CLAIMS

__all__ = ["NOT_GIVEN_LEVEL", "decide", "emergent", "evaluate_claim", "rule_findings"]


#: The fields of a claim's verdict the report keeps as columns.
_VERDICT_FIELDS = ("effect", "lo", "hi", "sesoi", "p", "n", "test")


def emergent(claim: Claim, outcome: Outcome) -> bool:
    """Whether a decided claim is evidence about the method: a comparison or finding (not a
    level, an identity or a reading) that the simulator was not given on simulated records,
    or any such claim on other records."""
    if claim.rule.kind not in EMERGENT_KINDS:
        return False
    if outcome.provenance != "simulated":
        return True
    return not given.given_by(claim.chapter, outcome.reads)


#: Why a level of a quantity the simulator was not given cannot be compared with the paper's
#: number on simulated records.
NOT_GIVEN_LEVEL = (
    "the paper's number of a quantity the simulator was not given (it emerges from training "
    "routers): comparing it needs the paper's own judge records (the Qwen3 / Llama pairs judged "
    "on a GPU, profile paper); the simulator is calibrated to the judges, not to a router"
)


def decide(claim: Claim, outcome: Outcome) -> tuple[str, str]:
    """``(status, reason)`` of a claim whose rule gave ``outcome`` (see the module's text)."""
    decision = outcome.decision
    if claim.rule.kind == "identity":
        return (VERIFIED, "") if decision == HOLDS else (NOT_REPRODUCED, "a numerical check failed")
    note = outcome.verdict.note if outcome.verdict is not None else ""
    why_not = "; ".join(t for t in (outcome.reason, note) if t)
    if outcome.provenance != "simulated":
        return status_of(decision, False, outcome.provenance), why_not
    params = given.given_by(claim.chapter, outcome.reads)
    level = claim.rule.kind == "level"
    if not params:
        if level:
            return NOT_REPRODUCIBLE, NOT_GIVEN_LEVEL
        return status_of(decision, False, outcome.provenance), why_not
    why = "the simulator was given it: " + given.describe(params)
    status = status_of(decision, True, outcome.provenance, level)
    if level and outcome.miss:
        return status, f"{why}; calibration {outcome.miss}"
    if status == NOT_REPRODUCED:
        return status, f"{why}, yet it does not hold on the simulator's records"
    return status, why


def evaluate_claim(claim: Claim, folder: Path | None, ran: bool, profile: str) -> dict[str, Any]:
    """One row of the report (:data:`racer_lib.paper.report.REPORT_COLUMNS`)."""
    row = {
        "artifact": claim.artifact,
        "claim": claim.claim,
        "build_value": "",
        "robustness": "",
        "rule": claim.rule.kind,
        "provenance": "",
        "chapter": claim.chapter,
        "link": f"{claim.chapter}.html",
        "csv": "",
        "unit": getattr(claim.rule, "unit", ""),
    }
    if not ran:
        reason = f"chapter {claim.chapter} is not in profile {profile}"
        return row | {"status": NOT_REPRODUCIBLE, "reason": reason}
    if folder is None or not folder.is_dir():
        reason = (
            f"chapter {claim.chapter} left no results in profile {profile} (not run, or failed)"
        )
        return row | {"status": NOT_REPRODUCIBLE, "reason": reason}
    try:
        outcome = claim.rule.evaluate(folder)
    except NotAvailable as err:
        return row | {"status": NOT_REPRODUCIBLE, "reason": str(err)}
    status, reason = decide(claim, outcome)
    verdict = outcome.verdict
    if verdict is not None:
        row |= {k: getattr(verdict, k) for k in _VERDICT_FIELDS}
    return row | {
        "emergent": emergent(claim, outcome),
        "build_value": outcome.value,
        "status": status,
        "reason": reason,
        "provenance": outcome.provenance,
        "csv": f"{claim.chapter}/{outcome.csv}",
    }


def rule_findings(
    stem: str, folder: str | Path, kinds: Sequence[str], basis: str
) -> list[dict[str, Any]]:
    """The claims of chapter ``stem`` whose rule is of one of ``kinds``, decided by the
    report's own rules on the CSVs in ``folder`` (a chapter's results folder while it runs), as
    findings rows for :func:`racer_lib.paper.claims.add_status`: ``finding`` (the claim),
    ``key`` (its name in the simulator-sensitivity chapter), ``observed`` (the rule's value),
    the verdict's columns and ``basis``. So a page and the report cannot disagree. A claim
    this run cannot test (a budget or β it left out) is left out."""
    rows = []
    for claim in CLAIMS:
        if claim.chapter != stem or claim.rule.kind not in kinds:
            continue
        try:
            outcome = claim.rule.evaluate(Path(folder))
        except NotAvailable:
            continue
        verdict = outcome.verdict.columns()
        rows.append(
            {
                "finding": claim.claim,
                "key": claim.sensitivity,
                "observed": outcome.value,
                **{k: verdict[k] for k in VERDICT_COLUMNS},
                "basis": basis,
            }
        )
    return rows
