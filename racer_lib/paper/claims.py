"""What this build reproduces, claim by claim: the statuses every findings table and the
reproduction report use.

A finding computed on records is one of:

* ``reproduced`` / ``not reproduced`` — it was tested on records in which it could have come
  out either way (real judges, the reader's own records, or a simulated finding the simulator
  was not given), and it held / did not hold;
* ``by construction`` — the records are simulated and the simulator was *given* the finding
  (a calibrated input of :mod:`racer_lib.records.simulate`, such as the per-domain gains or the
  judges' ρ); that it holds is a check of the simulator, not evidence;
* ``not reproducible here`` — the build cannot test it (the reason says why).
"""

from __future__ import annotations

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
BY_CONSTRUCTION = "by construction"
NOT_REPRODUCIBLE = "not reproducible here"
STATUSES = (REPRODUCED, NOT_REPRODUCED, BY_CONSTRUCTION, NOT_REPRODUCIBLE)


def finding_status(holds: bool, calibrated: bool, provenance: str) -> str:
    """The status of a finding that was computed and ``holds`` (or not).

    ``calibrated``: the simulator was given this finding. On ``simulated`` records such a
    finding is ``by construction`` whatever it came out as; on any other records (real judges,
    the reader's own, ``mixed``) it is evidence and reads ``reproduced`` or ``not reproduced``.
    """
    if calibrated and provenance == "simulated":
        return BY_CONSTRUCTION
    return REPRODUCED if holds else NOT_REPRODUCED


def add_status(findings, provenance: str):
    """A findings table (columns ``holds`` and ``calibrated``, one row per finding, optionally
    ``basis``) with ``status`` (:func:`finding_status` on the records' ``provenance``) in place
    of ``calibrated``, right after ``holds``; ``basis`` (why a finding is or is not calibrated)
    goes last. A table without rows keeps its columns."""
    import pandas as pd

    table = pd.DataFrame(findings).copy()
    for name in ("holds", "calibrated"):
        if name not in table.columns:
            table[name] = pd.Series(dtype=bool)
    status = [
        finding_status(bool(h), bool(c), provenance)
        for h, c in zip(table["holds"], table["calibrated"], strict=True)
    ]
    table = table.drop(columns="calibrated")
    table.insert(table.columns.get_loc("holds") + 1, "status", status)
    if "basis" in table.columns:
        table = table[[c for c in table.columns if c != "basis"] + ["basis"]]
    return table
