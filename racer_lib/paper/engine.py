"""The engine (:mod:`racer_lib.claims.engine`) bound to what the paper's simulator was given
(:data:`racer_lib.paper.given.GIVEN`, and why a level it was not given is not reproducible here,
:data:`racer_lib.paper.given.NOT_GIVEN_LEVEL`): a chapter decides its own ``CLAIMS`` with
:func:`rule_findings` and :func:`evaluate_claim` while it runs; the report gathers every
chapter's (:func:`racer_lib.paper.registry.claims`) with :func:`decide_all`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from racer_lib.claims import engine
from racer_lib.claims.engine import (
    RATE_REPLICATIONS,
    claim_rates,
    family_of,
    sensitivity_of,
    status_odds,
)
from racer_lib.claims.rules import Claim, Outcome
from racer_lib.paper.given import GIVEN, NOT_GIVEN_LEVEL

__all__ = [
    "NOT_GIVEN_LEVEL",
    "RATE_REPLICATIONS",
    "claim_rates",
    "decide",
    "decide_all",
    "emergent",
    "evaluate_claim",
    "family_of",
    "rule_findings",
    "sensitivity_of",
    "status_odds",
]


def decide(claim: Claim, outcome: Outcome) -> tuple[str, str]:
    """:func:`racer_lib.claims.engine.decide` with the paper's "given" table."""
    return engine.decide(claim, outcome, GIVEN, NOT_GIVEN_LEVEL)


def emergent(claim: Claim, outcome: Outcome) -> bool:
    """:func:`racer_lib.claims.engine.emergent` with the paper's "given" table."""
    return engine.emergent(claim, outcome, GIVEN)


def evaluate_claim(claim: Claim, folder: Path | None, ran: bool, profile: str) -> dict[str, Any]:
    """:func:`racer_lib.claims.engine.evaluate_claim` with the paper's "given" table."""
    return engine.evaluate_claim(claim, folder, ran, profile, GIVEN, NOT_GIVEN_LEVEL)


def decide_all(
    claims: Iterable[Claim], results_root: str | Path, ran: Iterable[str], profile: str
) -> list[dict[str, Any]]:
    """:func:`racer_lib.claims.engine.decide_all` with the paper's "given" table."""
    return engine.decide_all(claims, results_root, ran, profile, GIVEN, NOT_GIVEN_LEVEL)


def rule_findings(
    claims: Iterable[Claim], folder: str | Path, kinds: Sequence[str], basis: str
) -> list[dict[str, Any]]:
    """:func:`racer_lib.claims.engine.rule_findings` (no status yet: the chapter adds it)."""
    return engine.rule_findings(claims, folder, kinds, basis)
