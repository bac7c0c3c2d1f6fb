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


@pytest.mark.parametrize(
    ("provenance", "status"),
    [("simulated", claims.BY_CONSTRUCTION), ("release", claims.NOT_REPRODUCED)],
)
def test_a_calibrated_claim_is_by_construction_on_simulated_records_only(
    tmp_path, provenance, status
):
    _runs(tmp_path, [-1.0, -1.1, -0.9], provenance=provenance)
    claim = rules.Claim("Fig. 2", "x", STEM, RACER_VS_RANDOM, calibrated=True)
    row = _one(claim, tmp_path)
    assert row["status"] == status
    assert row["build_value"]


@pytest.mark.parametrize(
    ("provenance", "status"),
    [("simulated", claims.NOT_REPRODUCIBLE), ("generated", claims.REPRODUCED)],
)
def test_a_claim_that_needs_real_records_is_not_reproducible_on_simulated_ones(
    tmp_path, provenance, status
):
    _runs(tmp_path, [1.0, 1.1, 0.9], provenance=provenance)
    row = _one(rules.Claim("Table 2", "x", STEM, RACER_VS_RANDOM, needs="real records"), tmp_path)
    assert row["status"] == status
    assert (row["reason"] == "real records") is (status == claims.NOT_REPRODUCIBLE)
    assert row["build_value"]  # the value is shown either way


def test_a_finding_uses_the_csv_status_when_it_has_one(tmp_path):
    rows = {
        "provenance": "simulated",
        "finding": ["self-routing reasons a lot", "other"],
        "holds": [True, False],
        "detail": ["99.5 %", "-"],
    }
    _write(tmp_path, STEM, "findings.csv", rows)
    claim = rules.Claim("Table 5", "x", STEM, rules.Finding(r"reasons a lot"))
    row = _one(claim, tmp_path)
    assert (row["status"], row["build_value"]) == (claims.REPRODUCED, "99.5 %")
    _write(
        tmp_path,
        STEM,
        "findings.csv",
        {**rows, "status": [claims.BY_CONSTRUCTION] * 2, "basis": ["the rate is calibrated", "-"]},
    )
    row = _one(claim, tmp_path)
    assert (row["status"], row["reason"]) == (claims.BY_CONSTRUCTION, "the rate is calibrated")
    missing = rules.Claim("Table 5", "x", STEM, rules.Finding(r"no such finding"))
    row = _one(missing, tmp_path)
    assert row["status"] == claims.NOT_REPRODUCIBLE and "no finding matching" in row["reason"]


def test_several_rows_of_one_finding_take_the_weakest_status(tmp_path):
    rows = {
        "provenance": "release",
        "finding": ["beats", "beats"],
        "holds": [True, False],
        "status": [claims.REPRODUCED, claims.NOT_REPRODUCED],
    }
    _write(tmp_path, STEM, "findings.csv", rows)
    row = _one(rules.Claim("T", "x", STEM, rules.Finding("beats")), tmp_path)
    assert row["status"] == claims.NOT_REPRODUCED


def test_the_matched_spend_claims_read_the_control_findings(tmp_path):
    """Chapters 08 and 15 write racer_lib.paper.shift.control_findings; each claim reads its rows
    (08: the costlier shift's only), every row must hold."""
    from racer_lib.paper import shift

    def comparison(holds):
        return pd.DataFrame(
            {
                "scenario": ["(a) cheaper shift", "(b) costlier shift", "(b) costlier shift"],
                "method": ["RACER-C τ=1", "RACER-C τ=1", "RACER-R τ=1"],
                "runs": 10,
                **{f"{w}_{k}": 0.1 for w in ("robust", "control") for k in ("lo", "hi")},
                "robust_violations": 1,
                "control_violations": 6,
                "only_robust": 0,
                "only_control": 5,
                "violations_p": 1 / 32,
                "spend_share": 0.4,
                "accuracy_difference": 0.0,
                "difference_lo": -0.5,
                "difference_hi": 0.5,
                "equal_accuracy": True,
                "holds": holds,
            }
        )

    found = {c.chapter: c for c in report.CLAIMS if "matched-spend control" in c.claim}
    assert set(found) == {"08_robustness_ablation", "15_llmbar_shift"}
    for stem, prov, label in (
        ("08_robustness_ablation", "simulated", ("scenario", "method")),
        ("15_llmbar_shift", "release", ("method",)),
    ):
        table = shift.control_findings(comparison([False, True, True]), prov, label)
        _write(tmp_path, stem, "control_findings.csv", table.assign(provenance=prov))
        row = _one(found[stem], tmp_path, chapters=(stem,))
        if stem == "08_robustness_ablation":  # the cheaper shift's failing row is not read
            assert row["status"] == claims.REPRODUCED, row
            assert "cheaper" not in row["build_value"]
        else:
            assert row["status"] == claims.NOT_REPRODUCED, row


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
    assert 25 <= len(report.CLAIMS) <= 42
    assert {c.chapter for c in report.CLAIMS} <= set(registry.STEMS)
    for name in ARTIFACTS.values():
        assert any(name in c.artifact for c in report.CLAIMS), name
    if not PAPER.is_file():
        pytest.skip(f"no paper source at {PAPER}")
    floats = re.findall(r"\\begin\{(figure|table)\*?\}(.*?)\\end\{\1\*?\}", PAPER.read_text(), re.S)
    labels = {re.search(r"\\label\{((?!subfig:)[^}]*)\}", body).group(1) for _, body in floats}
    assert labels - {"tab:prompts"} == set(ARTIFACTS)


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
    assert len(table) >= 25
    assert set(claims.STATUSES) <= set(table["status"])
    decided = table[table["status"].isin([claims.REPRODUCED, claims.NOT_REPRODUCED])]
    assert (decided["build_value"].str.strip() != "").all()
    assert decided["provenance"].isin(["simulated", "release", "generated", "mixed"]).all()
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
