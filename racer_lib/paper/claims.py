"""The statuses of the paper's findings (:mod:`racer_lib.claims.statuses`) bound to what the
paper's simulator was given (:data:`racer_lib.paper.given.GIVEN`): the chapters call
:func:`add_status` on their findings tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from racer_lib.claims import statuses
from racer_lib.claims.statuses import (
    BY_CONSTRUCTION,
    EMERGENT_STATUSES,
    INCONCLUSIVE,
    NO_TEST,
    NOT_REPRODUCED,
    NOT_REPRODUCIBLE,
    REPRODUCED,
    STATUSES,
    VERDICT_COLUMNS,
    VERIFIED,
    status_of,
)
from racer_lib.paper.files import FINDINGS_CSV
from racer_lib.paper.given import GIVEN

__all__ = [
    "BY_CONSTRUCTION",
    "EMERGENT_STATUSES",
    "INCONCLUSIVE",
    "NOT_REPRODUCED",
    "NOT_REPRODUCIBLE",
    "NO_TEST",
    "REPRODUCED",
    "STATUSES",
    "VERDICT_COLUMNS",
    "VERIFIED",
    "add_status",
    "status_of",
]


def add_status(
    findings: Iterable[Mapping[str, Any]] | Any,
    provenance: str,
    chapter: str,
    csv: str = FINDINGS_CSV,
):
    """:func:`racer_lib.claims.statuses.add_status` with the paper's "given" table."""
    return statuses.add_status(findings, provenance, chapter, csv, GIVEN)
