"""A claim's family of per-seed tests (``racer_lib.claims.families``): it decides as the
protocol joins its members, its fast ``holds`` agrees with its decision, its nulls are the
least favourable, it survives a round trip through a findings CSV, a damaged one is named, and
the engine measures a chapter's finding on it (issue 40: every emergent claim's error rates)."""

import math

import numpy as np
import pandas as pd
import pytest

from racer_lib.claims import engine, families, rules
from racer_lib.claims.families import MOST, PER_SEED, Family, from_rows, joined
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import ALPHA, FAILS, HOLDS

GAIN = families.Test(1, 0.0, 0.15, 0.3)


def _family(means, sd=0.2, n=10, seed=0, combine="every", part="", test=GAIN):
    rng = np.random.default_rng(seed)
    rows = {f"m{i}": rng.normal(m, sd, n) for i, m in enumerate(means)}
    return Family(from_rows(part, rows, test), {part: combine})


def test_a_family_decides_as_the_protocol_joins_its_members():
    """``every`` and ``most`` over a part, a conjunction over parts, a lone member as itself:
    the same decisions and p-values as the verdicts module gives on the same values."""
    every = _family([0.6, 0.5, 0.1])
    members = {m.name: GAIN.decide(m.values) for m in every.members}
    assert every.decide() == verdicts.every(members)
    assert every.decide().decision == FAILS or every.decide().decision != HOLDS
    most = _family([0.6, 0.5, 0.1], combine=MOST)
    assert most.decide() == verdicts.most({m.name: GAIN.decide(m.values) for m in most.members})
    bound = families.Test(-1, 0.05, expected=0.025)
    both = Family(
        _family([0.6, 0.7], part="gain").members
        + from_rows("cost", {"RACER": np.full(10, 0.01) + np.arange(10) / 1e3}, bound)
    )
    parts = {p: every_of(both, p) for p in ("gain", "cost")}
    assert both.decide() == verdicts.conjunction(parts)
    assert both.parts == ("gain", "cost") and both.decide().decision == HOLDS
    # a part with no member ran no test: the claim is inconclusive, never holds
    empty = Family((), parts=("",))
    assert empty.decide().decision == verdicts.INCONCLUSIVE and not empty.holds({})


def every_of(family, part):
    found = family.verdicts()[part]
    return next(iter(found.values())) if len(found) == 1 else verdicts.every(found)


@pytest.mark.parametrize("combine", ["every", MOST])
def test_holds_agrees_with_the_decision_on_every_draw(combine):
    """The engine's shortcut (stop at the first member short of holding) never disagrees with
    the full decision: 60 families near their boundary, some holding, some not."""
    agree, held = 0, 0
    for seed in range(60):
        means = np.random.default_rng(seed).uniform(0.1, 0.7, 4)
        fam = _family(means, sd=0.15, seed=seed, combine=combine)
        full = fam.decide().decision == HOLDS
        held += full
        agree += fam.holds(fam.values(), first=[fam.members[-1].key]) == full
    assert agree == 60 and 0 < held < 60


def test_the_nulls_are_the_fewest_members_that_make_the_claim_false():
    """``every``: each member alone at its boundary; ``most`` of n: each run of n - n // 2
    members (with the others far beyond, no majority is left)."""
    assert [len(k) for k in _family([1, 1, 1]).nulls()] == [1, 1, 1]
    four = _family([1, 1, 1, 1], combine=MOST).nulls()
    assert len(four) == 4 and {len(k) for k in four} == {2}
    five = _family([1] * 5, combine=MOST).nulls()
    assert {len(k) for k in five} == {3} and len({frozenset(k) for k in five}) == 5


def test_a_family_survives_its_findings_csv_and_a_damaged_one_is_named(tmp_path):
    fam = _family([0.6, 0.7], combine=MOST)
    again = Family.from_json(fam.to_json())
    assert again == fam and again.decide() == fam.decide()
    assert joined([fam]) is fam and len(joined([fam, fam]).parts) == 2
    folder = tmp_path / "07_x"
    folder.mkdir()
    row = {"key": "k", "finding": "f", **fam.decide().columns(), PER_SEED: fam.to_json()}
    pd.DataFrame([row]).to_csv(folder / "findings.csv", index=False)
    finding = rules.Finding("k")
    assert finding.family(folder) == fam
    assert finding.evaluate(folder).verdict.decision == fam.decide().decision
    # the row says one thing, its per-seed values another: stale or edited, never used
    flipped = {**row, "decision": FAILS if row["decision"] == HOLDS else HOLDS}
    pd.DataFrame([flipped]).to_csv(folder / "findings.csv", index=False)
    with pytest.raises(rules.NotAvailable, match="findings.csv, finding 'k'.*rebuild"):
        finding.evaluate(folder)
    broken = {**row, PER_SEED: '{"members": [{"part": ""}]}'}
    pd.DataFrame([broken]).to_csv(folder / "findings.csv", index=False)
    with pytest.raises(rules.NotAvailable, match="findings.csv, finding 'k': per_seed"):
        finding.family(folder)


def test_a_chapters_finding_is_measured_on_its_own_per_seed_family(tmp_path):
    """The engine redraws a finding as it redraws a comparison: at the boundary of a ``most``
    family (half its members far beyond, the rest at the SESOI) it holds at most at the level;
    with every member at the paper's effect and seeds this tight it holds nearly always; the
    seed plan's odds settle with the seeds."""
    fam = _family([0.45, 0.5, 0.4], sd=0.15, combine=MOST)
    folder = tmp_path / "12_x"
    folder.mkdir()
    row = {"key": "k", "finding": "f", **fam.decide().columns(), PER_SEED: fam.to_json()}
    pd.DataFrame([row]).to_csv(folder / "findings.csv", index=False)
    claim = rules.Claim("Table 7", "often", "12_x", rules.Finding("k"))
    rates = engine.claim_rates(claim, folder, replications=300)
    assert rates["members"] == 3 and rates["nulls"] == 3 and rates["seeds"] == 10
    assert rates["fpr_hits"] / 300 <= ALPHA + 3 * math.sqrt(ALPHA / 300)
    assert rates["power_hits"] / 300 > 0.5
    few = engine.status_odds(claim, [folder], 10, replications=200)
    many = engine.status_odds(claim, [folder], 80, replications=200)
    assert many["holds"] >= few["holds"] and many["holds"] > 0.9


def test_a_family_states_its_power_and_its_weakest_members_mde():
    """Student's t at the family's own spread: power rises with the seeds, and the MDE of
    the weakest member lies beyond its boundary, named."""
    small, large = _family([0.5, 0.5], n=10), _family([0.5, 0.5], n=40)
    p_small, mde, name = small.sensitivity()
    assert 0 < p_small < large.sensitivity()[0] <= 1
    assert mde > GAIN.boundary and name in {"m0", "m1"}
    unstated = _family([0.5], test=families.Test(1, 0.0, 0.15))
    assert math.isnan(unstated.sensitivity()[0])
