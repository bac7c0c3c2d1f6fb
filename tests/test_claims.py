"""racer_lib.paper.claims (racer_lib.claims.statuses with the paper's "given" table): the six
statuses of a finding, from its test's decision, what the simulator was given
(racer_lib.paper.given, derived from the key the chapter writes beside the finding, never
declared) and the records' provenance."""

import re

import numpy as np
import pandas as pd
import pytest

from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import FAILS, HOLDS, INCONCLUSIVE
from racer_lib.paper import claims, given
from racer_lib.paper import registry as ch

#: A finding of chapter 04 the simulator was given (JUDGES.rho fixes the headroom) and one it
#: was not (a finding of chapter 07, whose key given.py does not name): (stem, CSV, text, key).
GIVEN = (ch.REASONING, "paper_findings.csv", "the headroom when the two modes disagree", "headroom")
EMERGENT = (ch.FRONTIER, "frontier_findings.csv", "concave frontier at every budget", "concave")

HELD = verdicts.directional([1.0, 1.2, 0.8, 1.1, 0.9, 1.0, 1.05, 0.95, 1.15, 0.85])
REFUTED = verdicts.directional([-x for x in [1.0, 1.2, 0.8, 1.1, 0.9, 1.0, 1.05, 0.95, 1.1, 0.9]])
UNDECIDED = verdicts.directional([1.0, -1.0, 0.5, -0.4, 0.2, -0.3, 0.9, -0.8, 0.1, 0.0])
BY_DECISION = {HOLDS: HELD, FAILS: REFUTED, INCONCLUSIVE: UNDECIDED}


def test_the_examples_decide_as_named():
    assert {d: v.decision for d, v in BY_DECISION.items()} == {d: d for d in BY_DECISION}


def test_the_statuses_are_six_and_distinct():
    assert len(set(claims.STATUSES)) == 6
    assert {claims.VERIFIED, claims.INCONCLUSIVE} <= set(claims.STATUSES)
    assert set(claims.EMERGENT_STATUSES) == {
        claims.REPRODUCED,
        claims.NOT_REPRODUCED,
        claims.INCONCLUSIVE,
    }


@pytest.mark.parametrize("provenance", ["simulated", "release", "generated", "mixed"])
def test_an_emergent_finding_is_decided_by_its_test(provenance):
    assert claims.status_of(HOLDS, False, provenance) == claims.REPRODUCED
    assert claims.status_of(FAILS, False, provenance) == claims.NOT_REPRODUCED
    assert claims.status_of(INCONCLUSIVE, False, provenance) == claims.INCONCLUSIVE


def test_a_given_finding_on_simulated_records_is_by_construction_unless_its_test_fails():
    assert claims.status_of(HOLDS, True, "simulated") == claims.BY_CONSTRUCTION
    assert claims.status_of(INCONCLUSIVE, True, "simulated") == claims.BY_CONSTRUCTION
    # the simulator was given it, yet its records do not contain it (the null-gain control)
    assert claims.status_of(FAILS, True, "simulated") == claims.NOT_REPRODUCED


def test_a_given_level_off_its_tolerance_stays_by_construction_on_simulated_records_only():
    assert claims.status_of(FAILS, True, "simulated", level=True) == claims.BY_CONSTRUCTION
    assert claims.status_of(FAILS, True, "release", level=True) == claims.NOT_REPRODUCED


@pytest.mark.parametrize("provenance", ["release", "generated", "mixed"])
def test_a_given_finding_on_other_records_is_evidence(provenance):
    assert claims.status_of(HOLDS, True, provenance) == claims.REPRODUCED
    assert claims.status_of(FAILS, True, provenance) == claims.NOT_REPRODUCED
    assert claims.status_of(INCONCLUSIVE, True, provenance) == claims.INCONCLUSIVE


def test_an_unknown_decision_is_refused():
    with pytest.raises(ValueError, match="unknown decision"):
        claims.status_of("maybe", False, "simulated")


def test_the_examples_given_and_emergent_are_so_in_given_py():
    for stem, csv, text, key, expected in (*[(*GIVEN, True)], *[(*EMERGENT, False)]):
        read = given.Read(csv, ("finding",), keys=(key,))
        assert bool(given.given_by(stem, [read])) is expected, text
    # the key decides, never the text: the given text under another key is not given
    stem, csv, _, _ = GIVEN
    assert not given.given_by(stem, [given.Read(csv, ("finding",), keys=("other",))])


def test_every_finding_key_given_py_names_is_written_by_its_chapter():
    """Each key of a given finding is a constant of its chapter's module (the one its code
    writes beside the finding), but chapter 08's "every method within budget", which no
    chapter writes today (its quantity stays declared with its perturbation test)."""
    from racer_lib.paper import registry

    for g in given.GIVEN:
        for q in g.fixes:
            module = registry.chapter_module(q.chapter)
            constants = {v for k, v in vars(module).items() if k.isupper() and isinstance(v, str)}
            constants |= set(getattr(module, "KEYS", {}).values())
            for key in set(q.findings) - {"cheaper_within"}:
                assert key in constants, (g.parameter, q.chapter, key)


def _row(text, verdict, key=None, **labels):
    keyed = {"key": key} if key else {}
    return {
        "finding": text,
        **keyed,
        **labels,
        "observed": "x",
        **verdict.columns(),
        "basis": "why",
    }


@pytest.mark.parametrize("decision", [HOLDS, FAILS, INCONCLUSIVE])
@pytest.mark.parametrize("provenance", ["simulated", "release"])
def test_add_status_derives_given_from_the_findings_key(decision, provenance):
    """No flag: the same verdict reads by construction for the given text on simulated records
    and as its test decided for the emergent one, or anywhere on real records."""
    verdict = BY_DECISION[decision]
    stem, csv, text, key = GIVEN
    mine = claims.add_status([_row(text, verdict, key)], provenance, stem, csv)
    stem2, csv2, text2, key2 = EMERGENT
    theirs = claims.add_status([_row(text2, verdict, key2)], provenance, stem2, csv2)
    assert mine["status"].iloc[0] == claims.status_of(decision, True, provenance)
    assert theirs["status"].iloc[0] == claims.status_of(decision, False, provenance)
    assert mine["decision"].iloc[0] == decision and mine["n"].iloc[0] == verdict.n


def test_the_given_text_of_one_chapter_is_emergent_in_another():
    stem, csv, text, key = GIVEN
    other = claims.add_status([_row(text, HELD, key)], "simulated", ch.FRONTIER, csv)
    assert other["status"].iloc[0] == claims.REPRODUCED


def test_add_status_puts_the_verdict_and_status_after_the_labels_and_the_basis_last():
    rows = [
        _row("concave frontier at every budget", HELD, judge="qwen3-4b", split="test"),
        {**_row("x", REFUTED, judge="qwen3-8b", split="test"), "holds": True, "level": False},
    ]
    table = claims.add_status(rows, "simulated", ch.FRONTIER, "frontier_findings.csv")
    assert list(table.columns) == [
        "finding",
        "judge",
        "split",
        "observed",
        *claims.VERDICT_COLUMNS,
        "p_other",  # Verdict.columns() gives it; it stays with the verdict's columns
        "status",
        "basis",
    ]
    assert list(table["status"]) == [claims.REPRODUCED, claims.NOT_REPRODUCED]
    assert list(table["basis"]) == ["why", "why"]
    assert table["effect"].iloc[0] == pytest.approx(HELD.effect)
    assert (table["lo"] < table["hi"]).all()


def test_a_status_in_the_input_is_replaced_not_copied():
    row = {**_row("concave frontier", UNDECIDED), "status": claims.REPRODUCED}
    table = claims.add_status([row], "simulated", ch.FRONTIER, "frontier_findings.csv")
    assert list(table["status"]) == [claims.INCONCLUSIVE]
    assert list(table.columns).count("status") == 1


def test_a_check_without_a_test_is_by_construction_only_when_it_checks_the_simulator():
    """A single record draw states no uncertainty: a check of a given quantity on simulated
    records decides by its result; anywhere else it reads inconclusive, with the reason."""
    stem, csv, text, key = GIVEN
    checks = [{"finding": text, "key": key, "holds": h} for h in (True, False)]
    sim = claims.add_status(checks, "simulated", stem, csv)
    assert list(sim["status"]) == [claims.BY_CONSTRUCTION, claims.NOT_REPRODUCED]
    assert set(sim["test"]) == {claims.NO_TEST}
    real = claims.add_status(checks, "release", stem, csv)
    assert list(real["status"]) == [claims.INCONCLUSIVE] * 2
    assert real["note"].str.contains("no test ran").all()
    emergent = claims.add_status(checks[:1], "simulated", ch.FRONTIER, csv)
    assert list(emergent["status"]) == [claims.INCONCLUSIVE]


def test_a_given_level_off_its_tolerance_stays_by_construction_in_a_findings_table():
    stem, csv, text, key = GIVEN
    rows = [{**_row(text, REFUTED, key), "level": True}]
    assert list(claims.add_status(rows, "simulated", stem, csv)["status"]) == [
        claims.BY_CONSTRUCTION
    ]
    assert list(claims.add_status(rows, "release", stem, csv)["status"]) == [claims.NOT_REPRODUCED]
    assert "level" not in claims.add_status(rows, "release", stem, csv).columns


def test_add_status_keeps_the_columns_of_an_empty_table():
    empty = claims.add_status([], "simulated", ch.FRONTIER)
    assert empty.empty
    assert list(empty.columns) == ["finding", *claims.VERDICT_COLUMNS, "status"]
    frame = claims.add_status(pd.DataFrame(columns=["finding", "judge"]), "release", ch.FRONTIER)
    assert list(frame.columns) == ["finding", "judge", *claims.VERDICT_COLUMNS, "status"]


# ----------------------------------------------------------------------------------------
# Smallest effects of interest (issue 40): every emergent comparison has one, and two claims
# on one quantity cannot be read both ways by one data set.


def _comparisons():
    from racer_lib.claims.rules import Difference, Equivalence
    from racer_lib.paper.registry import claims

    return [c for c in claims() if isinstance(c.rule, (Difference, Equivalence))]


def test_every_comparison_is_decided_against_a_stated_smallest_effect():
    from racer_lib.paper import effects

    for claim in _comparisons():
        assert claim.rule.effect is not None, f"{claim.artifact}: {claim.claim} has no SESOI"
        assert claim.rule.effect in effects.EFFECTS.values()
        assert claim.rule.effect.reason


def test_claims_on_one_quantity_cannot_both_hold_on_one_data_set():
    """For every directional claim and equivalence claim that share a quantity, no data set
    (means from far below to far above the SESOI, spreads from tight to wide) supports both:
    "lowers by at least the SESOI" and "alike within it"."""
    from racer_lib.claims.rules import Difference, Equivalence

    pairs = [
        (d, e)
        for d in _comparisons()
        for e in _comparisons()
        if isinstance(d.rule, Difference)
        and isinstance(e.rule, Equivalence)
        and d.rule.effect == e.rule.effect
    ]
    assert pairs, "the β claims of Table 3 share a quantity"
    rng = np.random.default_rng(0)
    for d, e in pairs:
        sesoi = d.rule.effect.sesoi
        for mean in np.linspace(-3 * sesoi, 3 * sesoi, 13):
            for spread in (0.01, 0.3, 1.0):
                x = mean + spread * sesoi * rng.standard_normal(20)
                assert not (d.rule.decide(x).holds and e.rule.decide(x).holds), (d.claim, e.claim)
                assert not (d.rule.decide(-x).holds and e.rule.decide(-x).holds)


def test_a_contradicting_margin_is_caught():
    """The check above fails on the old table's margins: a ±0.5 pt "alike" beside a "lowers"
    claim whose SESOI is 0.15 pt, on a data set at +0.3 pt."""
    from racer_lib.claims.rules import Difference, Equivalence
    from racer_lib.paper.effects import ROUTER_ACCURACY

    lowers = Difference("x.csv", "accuracy", effect=ROUTER_ACCURACY)
    wide = Equivalence("x.csv", "accuracy", margin=0.5)
    x = 0.3 + 0.01 * np.random.default_rng(1).standard_normal(20)
    assert lowers.decide(x).holds and wide.decide(x).holds
    same = Equivalence("x.csv", "accuracy", effect=ROUTER_ACCURACY)
    assert not same.decide(x).holds


def test_the_smallest_effects_follow_the_papers_numbers():
    from racer_lib.paper import effects
    from racer_lib.paper import numbers as paper

    beta = paper.BETA_SENSITIVITY
    assert effects.ROUTER_ACCURACY.sesoi == pytest.approx(
        (beta[(0.005, 2.0)][0] - beta[(0.0, 2.0)][0]) / 2
    )
    gaps = [r - q for r, _, q, _ in paper.LLAMA_FAMILY.values()]
    assert effects.SELECTION_GAIN.sesoi == pytest.approx(min(gaps) / 2, abs=1e-3)
    assert all(e.sesoi > 0 for e in effects.EFFECTS.values())


# ----------------------------------------------------------------------------------------
# Claims as data of their chapter (issue 40): one engine below them, the report gathers them.


def _beta_runs(folder, gain: float, seeds: int = 10) -> None:
    """Chapter 09's runs CSV (its named constant) at C = 2: β = 0.01 ahead of β = 0 by
    ``gain`` points on every seed, with a little noise."""
    from racer_lib.paper.chapters import beta_sensitivity

    rng = np.random.default_rng(0)
    rows = []
    for seed in range(seeds):
        for beta, acc in ((0.0, 70.0), (0.01, 70.0 + gain + 0.05 * rng.standard_normal())):
            rows.append({"provenance": "simulated", "beta": beta, "budget": 2.0, "seed": seed,
                         "accuracy": acc, "cost": 2.0})  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / beta_sensitivity.RUNS_CSV, index=False)


def test_a_new_claim_is_one_entry_in_its_chapters_module(tmp_path, monkeypatch):
    """A claim added to one chapter module's ``CLAIMS`` (and nothing else) is gathered by the
    registry, decided by the engine on the CSV that module names, shown by the report, and
    decided on the chapter's own page by the same rule."""
    from racer_lib.claims.rules import Claim, Difference
    from racer_lib.paper import effects, registry, report
    from racer_lib.paper.chapters import beta_sensitivity as ch

    new = Claim(
        "Table 3",
        "β = 0.01 is more accurate than β = 0 at C = 2",
        registry.BETA,
        Difference(ch.RUNS_CSV, "accuracy", {"beta": 0.01}, {"beta": 0.0},
                   where={"budget": 2.0}, effect=effects.ROUTER_ACCURACY),
    )  # fmt: skip
    folder = tmp_path / registry.BETA
    _beta_runs(folder, gain=1.0)
    before = report.report(tmp_path, "test", [registry.BETA])
    assert new.claim not in set(before["claim"])

    monkeypatch.setattr(ch, "CLAIMS", (*ch.CLAIMS, new))  # the one change
    assert registry.claims([registry.BETA]) == ch.CLAIMS and new in registry.claims()
    table = report.report(tmp_path, "test", [registry.BETA])
    assert len(table) == len(before) + 1
    row = table[table["claim"] == new.claim].iloc[0]
    assert row["status"] == claims.REPRODUCED and row["emergent"]
    assert row["csv"] == f"{registry.BETA}/{ch.RUNS_CSV}" and row["n"] == 10
    assert row["sesoi"] == effects.ROUTER_ACCURACY.sesoi
    page = ch.beta_findings(folder, "simulated")
    assert list(page["finding"]) == [new.claim] and list(page["status"]) == [row["status"]]
    # the same entry, on a folder where the gain is below the SESOI: not reproduced
    _beta_runs(folder, gain=0.01)
    low = report.report(tmp_path, "test", [registry.BETA])
    assert low.loc[low["claim"] == new.claim, "status"].item() == claims.NOT_REPRODUCED


def test_a_finding_is_found_by_the_key_its_chapter_writes_never_by_its_text(tmp_path):
    """Every ``Finding`` of a chapter's claims names a key that chapter's code writes (a
    constant of its module or of the shared module that writes the row); the rule has no
    pattern to match a sentence with."""
    import dataclasses
    import inspect

    from racer_lib.claims.rules import Finding
    from racer_lib.paper import registry, shift

    fields = {f.name for f in dataclasses.fields(Finding)}
    assert fields == {"key", "files"}
    for stem in registry.STEMS:
        module = registry.chapter_module(stem)
        for claim in getattr(module, "CLAIMS", ()) if module is not None else ():
            if isinstance(claim.rule, Finding):
                source = inspect.getsource(module) + inspect.getsource(shift)
                named = [k for k, v in vars(module).items() if k.isupper() and v == claim.rule.key]
                named += [k for k, v in vars(shift).items() if k.isupper() and v == claim.rule.key]
                assert named or claim.rule.key in str(getattr(module, "KEYS", {})), claim.claim
                assert f'"{claim.rule.key}"' in source, claim.claim  # written once, as a constant
    # a chapter's finding row carries the key its claim reads (chapter 06, on a small history)
    from racer_lib.paper.chapters import training_dynamics as ch06

    history = pd.DataFrame(
        [{"budget": 2.0, "seed": s, "epoch": e, "train_reward": e + 0.01 * s}
         for s in range(10) for e in range(1, 6)]
    )  # fmt: skip
    found = ch06.training_findings(history, "simulated")
    (claim,) = [c for c in ch06.CLAIMS if isinstance(c.rule, Finding)]
    assert list(found["key"]) == [claim.rule.key]
    folder = tmp_path / registry.DYNAMICS
    folder.mkdir()
    found.to_csv(folder / ch06.FINDINGS_CSV, index=False)
    outcome = claim.rule.evaluate(folder)
    assert outcome.decision == found["decision"].item()
    found.assign(key="renamed").to_csv(folder / ch06.FINDINGS_CSV, index=False)
    with pytest.raises(Exception, match="no finding with key"):
        claim.rule.evaluate(folder)  # the same text under another key is not this finding


def _code(path) -> str:
    """A module's source, or a notebook's code cells."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".md":
        return text
    return "\n".join(re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S))


def test_no_csv_a_claim_reads_is_named_twice():
    """Each CSV a chapter's claims read (and each the "given" table names, and each a module
    names as a constant) is written as a string once in the library and the notebooks' code: a
    constant that the code writing the file, the claims reading it and the page use alike."""
    from pathlib import Path

    from racer_lib.paper import files, given, registry, report, shift

    root = Path(__file__).resolve().parents[1]
    names = set()
    for claim in registry.claims():
        rule = claim.rule
        for part in (rule, getattr(rule, "check", None), getattr(rule, "context", None)):
            names |= {getattr(part, a, None) for a in ("csv", "runs", "ends")}
    names |= {q.csv for g in given.GIVEN for q in g.fixes}
    # and every CSV a chapter's module, the shared modules or the report name as a constant
    modules = [registry.chapter_module(s) for s in registry.STEMS]
    for module in [m for m in modules if m is not None] + [files, shift, report]:
        names |= {v for k, v in vars(module).items() if k.endswith("_CSV")}
    names = {n for n in names if isinstance(n, str) and "*" not in n}
    assert len(names) > 15
    sources = [
        *sorted((root / "racer_lib").rglob("*.py")),
        *sorted((root / "notebooks").glob("*.md")),
    ]
    code = {p: _code(p) for p in sources}
    for name in sorted(names):
        where = [p.relative_to(root).as_posix() for p, text in code.items() if f'"{name}"' in text]
        count = sum(text.count(f'"{name}"') for text in code.values())
        assert count == 1, (name, where)
