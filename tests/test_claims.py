"""racer_lib.paper.claims: the statuses of findings."""

import pytest

from racer_lib.paper import claims


@pytest.mark.parametrize("holds", [True, False])
def test_a_calibrated_finding_on_simulated_records_is_by_construction(holds):
    assert claims.finding_status(holds, True, "simulated") == claims.BY_CONSTRUCTION


@pytest.mark.parametrize("provenance", ["simulated", "release", "generated", "mixed"])
def test_an_emergent_finding_is_decided_by_its_result(provenance):
    assert claims.finding_status(True, False, provenance) == claims.REPRODUCED
    assert claims.finding_status(False, False, provenance) == claims.NOT_REPRODUCED


@pytest.mark.parametrize("provenance", ["release", "generated", "mixed"])
def test_a_calibrated_finding_on_other_records_is_evidence(provenance):
    assert claims.finding_status(True, True, provenance) == claims.REPRODUCED
    assert claims.finding_status(False, True, provenance) == claims.NOT_REPRODUCED


def test_the_statuses_are_four_and_distinct():
    assert len(set(claims.STATUSES)) == 4


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
    real = claims.add_status(rows, "release")
    assert list(real["status"]) == [claims.REPRODUCED, claims.NOT_REPRODUCED]


def test_add_status_keeps_the_columns_of_an_empty_table():
    empty = claims.add_status([], "simulated")
    assert empty.empty and list(empty.columns) == ["holds", "status"]
