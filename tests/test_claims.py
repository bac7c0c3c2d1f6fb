"""racer_lib.claims: the statuses of findings."""

import pytest

from racer_lib import claims


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
