"""What this build reproduces, claim by claim: the statuses every findings table and the
reproduction report use.

Every finding is decided by the book's statistical protocol (:mod:`racer_lib.evaluation.verdicts`:
a test over replicate seeds at a stated level, with the decision ``holds``, ``fails`` or
``inconclusive``), then given one of six statuses:

* ``reproduced`` / ``not reproduced`` — it was tested on records in which it could have come
  out either way (real judges, the reader's own records, or a simulated finding the simulator
  was not given), and the test supported it / its negation;
* ``inconclusive`` — the evidence supports neither the claim nor its negation at the stated
  level (a directional interval that straddles zero, an equivalence interval that crosses its
  margin), or the build ran too few seeds to decide it, or a check ran no test at all;
* ``by construction`` — the records are simulated and a parameter of the simulator fixes the
  quantity the finding reads (:mod:`racer_lib.claims.given` derives this from the "given" table
  passed in, the paper's :data:`racer_lib.paper.given.GIVEN`): a check of the simulator, not
  evidence. A given finding whose test *fails* on the simulator's records is ``not
  reproduced`` (the simulator did not contain it); a given *level* (a number, such as a judge's
  accuracy) stays ``by construction`` even off its tolerance, the report saying by how much;
* ``not reproducible here`` — the build cannot test it (the reason says why: what it lacks);
* ``verified numerically`` — a mathematical statement (Theorems 3.1, 4.1, 4.2) checked on
  numerical instances (``not reproduced`` when a check fails).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from racer_lib.claims import given as _given
from racer_lib.claims.families import PER_SEED
from racer_lib.claims.given import Given
from racer_lib.claims.rules import FINDING_KEY
from racer_lib.evaluation.verdicts import FAILS, HOLDS
from racer_lib.evaluation.verdicts import INCONCLUSIVE as UNDECIDED

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
BY_CONSTRUCTION = "by construction"
NOT_REPRODUCIBLE = "not reproducible here"
VERIFIED = "verified numerically"
STATUSES = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, BY_CONSTRUCTION, NOT_REPRODUCIBLE, VERIFIED)
#: The statuses of a decided claim that is evidence about the method (not the simulator).
EMERGENT_STATUSES = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)

#: The test of a check that ran none (a single record draw, no replicate seeds).
NO_TEST = "no test: one record draw"
#: The columns a verdict adds to a findings table, after ``finding`` and its labels.
VERDICT_COLUMNS = ("effect", "lo", "hi", "sesoi", "p", "n", "test", "decision", "note")


def status_of(decision: str, is_given: bool, provenance: str, level: bool = False) -> str:
    """The status of a finding whose test gave ``decision`` (``holds``, ``fails`` or
    ``inconclusive``). ``is_given``: a parameter of the simulator fixes it. On ``simulated``
    records a given finding is ``by construction`` unless its test fails (then ``not
    reproduced``: the simulator did not contain it), and a given ``level`` is ``by
    construction`` either way. Every other finding is evidence: ``reproduced``, ``not
    reproduced`` or ``inconclusive`` as the test decided."""
    if decision not in (HOLDS, FAILS, UNDECIDED):
        raise ValueError(f"unknown decision {decision!r}")
    if is_given and provenance == "simulated":
        return NOT_REPRODUCED if decision == FAILS and not level else BY_CONSTRUCTION
    return {HOLDS: REPRODUCED, FAILS: NOT_REPRODUCED, UNDECIDED: INCONCLUSIVE}[decision]


def _decision(row: Mapping[str, Any], is_given: bool, provenance: str) -> dict[str, Any]:
    """A row's verdict columns: its own when it ran a test; else (a check on one record draw,
    ``holds`` only) ``holds``/``fails`` for a check of the simulator on simulated records, and
    ``inconclusive`` anywhere else: a finding is never decided without a stated uncertainty."""
    if "decision" in row and isinstance(row["decision"], str) and row["decision"]:
        return {c: row.get(c, "") for c in VERDICT_COLUMNS}
    held = bool(row.get("holds", False))
    checked = is_given and provenance == "simulated"
    decision = (HOLDS if held else FAILS) if checked else UNDECIDED
    note = "" if checked else "no test ran: a check on one record draw has no stated uncertainty"
    return {"test": NO_TEST, "decision": decision, "note": note}


def add_status(
    findings: Iterable[Mapping[str, Any]] | Any,
    provenance: str,
    chapter: str,
    csv: str,
    given: Iterable[Given],
):
    """A findings table of ``chapter`` (written as ``csv``; one row per finding, with its text
    in ``finding``, a verdict's columns from :meth:`racer_lib.evaluation.verdicts.Verdict.columns`
    or, for a check on one record draw, ``holds``; optionally ``level`` and ``basis``) with the
    verdict's columns (``p_other`` after them when given) and ``status`` (:func:`status_of`).
    Whether the simulator was given a finding is derived (:func:`racer_lib.claims.given.given_by`
    on the ``given`` table and its ``key``), never declared; a ``status`` the rows carry is
    replaced. ``basis`` goes last, then the finding's per-seed family
    (:data:`racer_lib.claims.families.PER_SEED`). A table without rows keeps its columns."""
    import pandas as pd

    table = pd.DataFrame(findings).copy()
    if "finding" not in table.columns:
        table["finding"] = pd.Series(dtype=str)
    rows, given = [], tuple(given)
    for row in table.to_dict("records"):
        key = row.get(FINDING_KEY)
        read = _given.Read(csv, ("finding",), keys=(key,) if isinstance(key, str) else ())
        is_given = bool(_given.given_by(chapter, [read], given))
        verdict = _decision(row, is_given, provenance)
        level = bool(row.get("level", False))
        rows.append(
            {**verdict, "status": status_of(verdict["decision"], is_given, provenance, level)}
        )
    added = pd.DataFrame(rows, columns=[*VERDICT_COLUMNS, "status"], index=table.index)
    if "p_other" in table.columns:  # a verdict's other side (Verdict.columns): with the rest
        added.insert(len(VERDICT_COLUMNS), "p_other", table["p_other"])
    drop = {*VERDICT_COLUMNS, "p_other", "status", "holds", "level", "basis", PER_SEED}
    keep = [c for c in table.columns if c not in drop]
    out = pd.concat([table[keep], added], axis=1)
    for last in ("basis", PER_SEED):
        if last in table.columns:
            out[last] = table[last]
    return out
