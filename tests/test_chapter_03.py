"""Chapter 03 (Fig. 1 and the OOD benchmarks' domain table) as run by the smoke profile: its
tables recomputed from the tables of chapters 04 and 08 it reads, and from the simulator."""

from pathlib import Path

import pandas as pd
import pytest

from racer_lib.book import chapter
from racer_lib.claims import rules
from racer_lib.evaluation import verdicts
from racer_lib.paper import claims
from racer_lib.paper import numbers as paper
from racer_lib.paper.chapters import motivation_and_benchmarks as ch03
from racer_lib.records import simulate
from tests.conftest import notebook_parameters

STEM = "03_motivation_and_benchmarks"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(smoke):
    """``(results folder, parameters, chapter 04's and 08's parameters)`` of the smoke run."""
    result, _ = smoke
    executed = {Path(p).stem: Path(p) for p in result.executed}
    params = {s: notebook_parameters(executed[s]) for s in (STEM, "04_reasoning_vs_instruct")}
    params["06"] = notebook_parameters(executed["08_robustness_ablation"])
    return Path(result.results_dirs[STEM]), params


def test_domain_table_sums_and_matches_the_simulated_counts(run):
    out, params = run
    table = pd.read_csv(out / "benchmark_domains.csv")
    fig2 = params["04_reasoning_vs_instruct"]
    assert set(table["benchmark"]) == set(fig2["benchmarks"])
    shares = table.groupby("benchmark")["share"].sum()
    assert shares.to_numpy() == pytest.approx(100.0)
    for row in table.itertuples():
        size = simulate.RECIPES[row.benchmark][(row.benchmark, row.benchmark, row.domain)]
        assert row.pairs == max(1, round(size * fig2["scale"]))
        assert (row.paper_count, row.paper_share) == paper.BENCHMARK_DOMAINS[
            (row.benchmark, row.domain)
        ]
    assert len(table) == len(
        [k for k in paper.BENCHMARK_DOMAINS if k[0] in set(fig2["benchmarks"])]
    )
    assert (table["decision"] == "holds").all() and (table["test"] == claims.NO_TEST).all()
    assert set(table["status"]) == {claims.BY_CONSTRUCTION}
    assert set(table["provenance"]) == {"simulated"}


def test_fig1a_tables_recompute_from_chapter_02(run):
    out, params = run
    judge = params[STEM]["judge"]
    by_domain = pd.read_csv(out / params[STEM]["fig2_results"] / "delta_accuracy_by_domain.csv")
    tradeoff = pd.read_csv(out / "fig1a_tradeoff.csv")
    mine = by_domain[by_domain["judge"] == judge]
    assert len(tradeoff) == len(mine) and set(tradeoff["judge"]) == {judge}
    assert tradeoff["cost_reasoning"].to_numpy() == pytest.approx(mine["cost_ratio"].to_numpy())
    groups = pd.read_csv(out / "fig1a_gain_by_group.csv")
    assert groups["pairs"].sum() == tradeoff["n"].sum() == mine["n"].sum()
    again = ch03.gain_by_group(tradeoff.drop(columns="provenance"))
    assert list(groups["group"]) == list(again["group"])
    for column in ("pairs", "acc_instruct", "acc_reasoning", "delta_accuracy", "cost_ratio_max"):
        assert groups[column].to_numpy() == pytest.approx(again[column].to_numpy()), column


def test_fig1b_costs_are_chapter_06s_runs(run):
    out, params = run
    costs = pd.read_csv(out / "fig1b_shift_costs.csv")
    runs = pd.read_csv(out / params[STEM]["shift_results"] / "ablation_runs.csv")
    shift = params["06"]
    assert len(costs) == shift["n_seeds"] * (1 + len(shift["taus_c"]))
    assert set(costs["scenario"]) == {params[STEM]["scenario"]}
    merged = costs.merge(runs, on=["scenario", "method", "seed"])
    assert len(merged) == len(costs)
    assert merged["shift_cost"].to_numpy() == pytest.approx(merged["cost"].to_numpy())
    assert (merged["shift_violated"] == (merged["cost"] > merged["budget_x"])).all()


def test_findings_prose_and_figure(run):
    out, params = run
    findings = pd.read_csv(out / "paper_findings.csv")
    assert len(findings) == 2
    given = (
        claims.BY_CONSTRUCTION
        if findings["decision"].iloc[0] == "holds"
        else (claims.NOT_REPRODUCED)
    )
    assert findings["status"].iloc[0] == given
    # panel (b), recomputed from chapter 08's runs: per replicate seed, cost / C - 1 after the
    # shift, RACER-C's below the margin and ACER's above it (a conjunction)
    costs = pd.read_csv(out / "fig1b_shift_costs.csv")
    runs = pd.read_csv(out / params[STEM]["shift_results"] / "ablation_runs.csv")
    here = runs[runs["scenario"] == params[STEM]["scenario"]]
    per_seed = {
        v: (g["cost"] / g["budget"] - 1).groupby(g["seed"]).mean()
        for v, g in here.groupby("variant")
    }
    assert len(per_seed["RACER-C"]) == params["06"]["n_seeds"]
    parts = {
        "RACER-C within budget": verdicts.directional(
            per_seed["RACER-C"], -1, rules.RATIO_TOLERANCE
        ),
        "ACER over budget": verdicts.directional(per_seed["ACER"], 1, rules.RATIO_TOLERANCE),
    }
    expected = verdicts.conjunction(parts)
    b = findings.iloc[1]
    assert b["finding"] == ch03.WITHIN and b["decision"] == expected.decision
    assert b["n"] == expected.n
    assert b["status"] == claims.status_of(expected.decision, False, "simulated")
    assert chapter.check_prose(out / "prose.csv") == []
    glued = set(pd.read_csv(out / "prose.csv")["name"])  # panel (b)'s numbers are glued too
    assert {"gain_verification", "gain_other", "acer_over", "racer_c_over"} <= glued
    assert {"status_a", "status_b"} <= glued
    assert len(costs) == len(here[here["variant"].isin(["ACER", "RACER-C"])])
    png = out / "fig1_motivation.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
