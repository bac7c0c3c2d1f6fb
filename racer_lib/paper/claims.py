"""What this build reproduces, claim by claim: the statuses every findings table and the
reproduction report use.

A finding computed on records is one of:

* ``reproduced`` / ``not reproduced`` — it was tested on records in which it could have come
  out either way (real judges, the reader's own records, or a simulated finding the simulator
  was not given), and it held / did not hold;
* ``by construction`` — the records are simulated, the simulator was *given* the finding (a
  parameter of :mod:`racer_lib.records.simulate`, such as the per-domain gains or the judges' ρ;
  :mod:`racer_lib.paper.given` lists them) and it holds: a check of the simulator, not evidence.
  A given finding that does *not* hold on the simulator's records is ``not reproduced``: the
  simulator did not contain it (the null-gain control of chapter 16 is such a case). A given
  *level* (a number, such as a judge's accuracy) stays ``by construction`` even off its
  tolerance; the report then says by how much the calibration is off;
* ``not reproducible here`` — the build cannot test it (the reason says why: what it lacks);
* ``verified numerically`` — a mathematical statement (Theorems 3.1, 4.1, 4.2) checked on
  numerical instances: it cannot be reproduced or refuted by records, only confirmed to hold
  on the instances (``not reproduced`` when a check fails).
"""

from __future__ import annotations

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
BY_CONSTRUCTION = "by construction"
NOT_REPRODUCIBLE = "not reproducible here"
VERIFIED = "verified numerically"
STATUSES = (REPRODUCED, NOT_REPRODUCED, BY_CONSTRUCTION, NOT_REPRODUCIBLE, VERIFIED)


def finding_status(holds: bool, calibrated: bool, provenance: str, level: bool = False) -> str:
    """The status of a finding that was computed and ``holds`` (or not).

    ``calibrated``: the simulator was given this finding. On ``simulated`` records such a
    finding is ``by construction`` when it holds and ``not reproduced`` when it does not (the
    simulator did not contain it), unless it is a ``level`` (a given number against the
    paper's, within a tolerance): that stays ``by construction`` off its tolerance too. On any
    other records (real judges, the reader's own, ``mixed``) every finding is evidence and
    reads ``reproduced`` or ``not reproduced``.
    """
    if calibrated and (holds or level) and provenance == "simulated":
        return BY_CONSTRUCTION
    return REPRODUCED if holds else NOT_REPRODUCED


def add_status(findings, provenance: str):
    """A findings table (columns ``holds`` and ``calibrated``, one row per finding, optionally
    ``level`` and ``basis``) with ``status`` (:func:`finding_status` on the records'
    ``provenance``) in place of ``calibrated`` and ``level``, right after ``holds``; ``basis``
    (why a finding is or is not calibrated) goes last. A table without rows keeps its
    columns."""
    import pandas as pd

    table = pd.DataFrame(findings).copy()
    for name in ("holds", "calibrated"):
        if name not in table.columns:
            table[name] = pd.Series(dtype=bool)
    levels = table["level"] if "level" in table.columns else [False] * len(table)
    status = [
        finding_status(bool(h), bool(c), provenance, bool(lv))
        for h, c, lv in zip(table["holds"], table["calibrated"], levels, strict=True)
    ]
    table = table.drop(columns=[c for c in ("calibrated", "level") if c in table.columns])
    table.insert(table.columns.get_loc("holds") + 1, "status", status)
    if "basis" in table.columns:
        table = table[[c for c in table.columns if c != "basis"] + ["basis"]]
    return table
