"""racer_lib.paper.claims: the statuses of findings."""

import pytest

from racer_lib.paper import claims


def test_a_calibrated_finding_on_simulated_records_is_by_construction_when_it_holds():
    assert claims.finding_status(True, True, "simulated") == claims.BY_CONSTRUCTION


def test_a_calibrated_finding_that_fails_on_simulated_records_is_not_reproduced():
    """The simulator was given it, yet its records do not contain it (the null-gain control)."""
    assert claims.finding_status(False, True, "simulated") == claims.NOT_REPRODUCED


def test_a_calibrated_level_off_its_tolerance_stays_by_construction():
    assert claims.finding_status(False, True, "simulated", level=True) == claims.BY_CONSTRUCTION
    assert claims.finding_status(False, True, "release", level=True) == claims.NOT_REPRODUCED
    rows = [{"finding": "share", "holds": False, "calibrated": True, "level": True}]
    table = claims.add_status(rows, "simulated")
    assert list(table.columns) == ["finding", "holds", "status"]
    assert list(table["status"]) == [claims.BY_CONSTRUCTION]


@pytest.mark.parametrize("provenance", ["simulated", "release", "generated", "mixed"])
def test_an_emergent_finding_is_decided_by_its_result(provenance):
    assert claims.finding_status(True, False, provenance) == claims.REPRODUCED
    assert claims.finding_status(False, False, provenance) == claims.NOT_REPRODUCED


@pytest.mark.parametrize("provenance", ["release", "generated", "mixed"])
def test_a_calibrated_finding_on_other_records_is_evidence(provenance):
    assert claims.finding_status(True, True, provenance) == claims.REPRODUCED
    assert claims.finding_status(False, True, provenance) == claims.NOT_REPRODUCED


def test_the_statuses_are_five_and_distinct():
    assert len(set(claims.STATUSES)) == 5
    assert claims.VERIFIED in claims.STATUSES


def test_add_status_puts_the_status_after_holds_and_the_basis_last():
    rows = [
        {"finding": "given", "holds": True, "calibrated": True, "basis": "an input", "detail": "d"},
        {
            "finding": "learned",
            "holds": False,
            "calibrated": False,
            "basis": "emerges",
            "detail": "",
        },
    ]
    sim = claims.add_status(rows, "simulated")
    assert list(sim.columns) == ["finding", "holds", "status", "detail", "basis"]
    assert list(sim["status"]) == [claims.BY_CONSTRUCTION, claims.NOT_REPRODUCED]
    failed = claims.add_status([{**rows[0], "holds": False}], "simulated")
    assert list(failed["status"]) == [claims.NOT_REPRODUCED]
    real = claims.add_status(rows, "release")
    assert list(real["status"]) == [claims.REPRODUCED, claims.NOT_REPRODUCED]


def test_add_status_keeps_the_columns_of_an_empty_table():
    empty = claims.add_status([], "simulated")
    assert empty.empty and list(empty.columns) == ["holds", "status"]
