"""Chapter 15 (robustness under a real LLMBar shift, and the matched-spend control), as run by the
profile full-smoke.

The chapter's CSVs are checked against values recomputed here from its own runs and from
LLMBar's released records: the plan against the subsets present, the shift's two sides against
the records, every violation against the cost in the training unit and the budget, the Wilson
intervals, every robust run's control and its budget rule, and the comparison per judge and
budget and pooled (the findings), decided over the replicate seeds, each row with its
provenance.

The chapter needs the LLMBar files (a mirror in ``RACER_DATA_DIR`` or the download cache), so
the session fixture ``smoke`` only runs it when they are available; otherwise these tests skip.
"""

import numpy as np
import pytest
from conftest import real_chapter, release_table

from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import ALPHA, MIN_SEEDS
from racer_lib.paper import claims, registry, shift
from racer_lib.paper.chapters import llmbar_shift as ch15
from racer_lib.records import llmbar

STEM = "15_llmbar_shift"
KEYS = ["judge", "shift", "method", "seed", "budget"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chapter(smoke):
    return real_chapter(smoke, STEM, "the LLMBar data")[:2]


@pytest.fixture(scope="module")
def results(chapter):
    return chapter[0]


@pytest.fixture(scope="module")
def params(chapter):
    return chapter[1]


_csv = release_table


@pytest.fixture(scope="module")
def runs(results):
    return _csv(results, "shift_runs.csv")


@pytest.fixture(scope="module")
def controls(results):
    return _csv(results, "control_runs.csv")


@pytest.fixture(scope="module")
def records(params):
    return {j: llmbar.llmbar_records(j) for j in params["judges"]}


def test_every_output_is_written_with_provenance(results):
    for name in (
        "shift_plan.csv",
        "shift_modes.csv",
        "shift_runs.csv",
        "shift_summary.csv",
        "control_runs.csv",
        "violations.csv",
        "violations_pooled.csv",
        "reasoning_rates.csv",
        "control_by_judge_budget.csv",
        "control_sweep.csv",
        "findings.csv",
        "prose.csv",
    ):
        assert (results / name).is_file(), name
        if name != "prose.csv":
            _csv(results, name)
    png = results / "spend_and_violations.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_the_plan_is_built_from_the_subsets_present(params, results, records):
    plan = _csv(results, "shift_plan.csv")
    subsets = next(iter(records.values()))["subset"]
    expected = ch15.shift_plan(subsets, params["shifts"], params["natural_subsets"])
    assert list(plan["shift"]) == [sh.name for sh in expected]
    counts = subsets.value_counts()
    for row, sh in zip(plan.itertuples(), expected, strict=True):
        assert row.test_pairs == sum(counts[s] for s in sh.test)
        assert set(row.train_subsets.split(" + ")) | set(row.test_subsets.split(" + ")) <= set(
            subsets
        )


def test_the_shift_sides_recompute_from_the_records(params, results, records):
    sides = _csv(results, "shift_modes.csv")
    subsets = next(iter(records.values()))["subset"]
    plan = {sh.name: sh for sh in ch15.shift_plan(subsets, params["shifts"])}
    for row in sides.itertuples():
        sh = plan[row.shift]
        part = records[row.judge]
        part = part[part["subset"].isin(sh.train if row.side == "train" else sh.test)]
        assert row.n == len(part)
        assert np.isclose(row.acc_reasoning, 100 * part["correct_reasoning"].mean())
        assert np.isclose(row.mean_tokens_instruct, part["tokens_instruct"].mean())


def test_runs_cover_the_grid_and_violations_are_in_the_training_unit(params, runs, records):
    subsets = next(iter(records.values()))["subset"]
    plan = ch15.shift_plan(subsets, params["shifts"], params["natural_subsets"])
    assert list(dict.fromkeys(runs["shift"])) == [sh.name for sh in plan]
    assert list(dict.fromkeys(runs["judge"])) == params["judges"]
    n_methods = 2 + 2 * len(params["taus_c"])
    per = runs.groupby(["judge", "shift"]).size()
    assert len(per) == len(plan) * len(params["judges"])
    assert (per == n_methods * len(params["budgets"]) * params["n_seeds"]).all()
    assert (runs["violated"] == (runs["train_cost"] > runs["budget"])).all()
    assert runs["train_cost"].notna().all()


def test_violation_rates_carry_wilson_intervals(runs, results):
    for name, by in (
        ("violations.csv", ["judge", "method", "budget"]),
        ("violations_pooled.csv", ["method"]),
    ):
        table = _csv(results, name)
        for row in table.itertuples():
            mask = np.logical_and.reduce([runs[c] == getattr(row, c) for c in by])
            mine = runs[mask]
            assert row.runs == len(mine) and row.violations == int(mine["violated"].sum())
            lo, hi = shift.wilson_interval(row.violations, row.runs)
            assert np.isclose(row.rate_lo, lo) and np.isclose(row.rate_hi, hi)
            assert row.rate_lo <= row.rate <= row.rate_hi


def test_each_robust_run_has_its_matched_spend_control(runs, controls):
    robust = runs[runs["variant"].isin(shift.ROBUST)]
    both = robust.merge(controls, on=KEYS, suffixes=("", "_control"), validate="one_to_one")
    assert len(both) == len(robust) == len(controls)
    assert np.allclose(both["robust_valid_cost"], both["valid_cost"])
    assert (both["control_budget"] <= both["budget"] + 1e-9).all()
    under = both["valid_cost"] < both["budget"]
    # the rule: the spend, unless below the feasible floor (at most one unit)
    matched = np.isclose(both["control_budget"], both["valid_cost"])
    floored = (both["control_budget"] > both["valid_cost"]) & (both["control_budget"] <= 1.01)
    assert (matched | floored)[under].all()
    assert (both.loc[~under, "control_budget"] == both.loc[~under, "budget"]).all()


def _per_seed(g):
    """Per seed of paired rows ``g``: robust share over budget minus the controls', and the
    mean paired accuracy difference (recomputed here, not with the library's helpers)."""
    over = (g["train_cost"] > g["budget"]).astype(float)
    over_control = (g["train_cost_control"] > g["budget"]).astype(float)
    frame = g.assign(d=over - over_control, a=g["accuracy"] - g["accuracy_control"])
    return frame.groupby("seed")[["d", "a"]].mean()


def _check_decided(row, seeds):
    """A comparison row's verdicts: inconclusive with too few seeds, else each part's decision
    by its p-value and the conjunction holding only when both parts hold."""
    parts = (row.violations_decision, row.accuracy_decision)
    if seeds < MIN_SEEDS:
        assert parts == ("inconclusive", "inconclusive") and row.decision == "inconclusive"
        assert "too few seeds" in row.note
        return
    assert (row.violations_decision == "holds") == (row.violations_p < ALPHA)
    assert (row.accuracy_decision == "holds") == (row.accuracy_p < ALPHA)
    assert (row.decision == "holds") == (parts == ("holds", "holds"))


def test_the_comparison_per_judge_and_budget_recomputes(params, runs, controls, results):
    table = _csv(results, "control_by_judge_budget.csv")
    robust = runs[runs["variant"].isin(shift.ROBUST)]
    assert len(table) == robust.groupby(["method", "judge", "budget"]).ngroups
    both = robust.merge(controls, on=KEYS, suffixes=("", "_control"))
    for row in table.itertuples():
        g = both[(both["method"] == row.method) & (both["judge"] == row.judge)]
        g = g[np.isclose(g["budget"], row.budget)]
        assert row.runs == len(g) and row.seeds == g["seed"].nunique() == params["n_seeds"]
        assert row.robust_violations == int((g["train_cost"] > g["budget"]).sum())
        assert row.control_violations == int((g["train_cost_control"] > g["budget"]).sum())
        lo, hi = shift.wilson_interval(row.control_violations, row.runs)
        assert np.isclose(row.control_lo, lo) and np.isclose(row.control_hi, hi)
        seeds = _per_seed(g)  # the replicate is the seed: one value per seed
        assert np.isclose(row.violation_difference, seeds["d"].mean())
        assert np.isclose(row.accuracy_difference, seeds["a"].mean())
        over = g["train_cost"] > g["budget"]
        over_control = g["train_cost_control"] > g["budget"]
        assert row.only_robust == int((over & ~over_control).sum())
        assert row.only_control == int((over_control & ~over).sum())
        _check_decided(row, len(seeds))


def test_findings_are_the_cost_reweighting_variants_pooled(params, runs, controls, results):
    """The findings read only the variants that reweight the costs (RACER-C and RACER, not
    RACER-R), each with every temperature, judge, shift and budget pooled within its seed,
    each run paired with its own control; the report's claim reads exactly these rows."""
    every = _csv(results, "findings.csv")
    findings = every[every["key"] == shift.KEY_MATCHED]
    variants = [v for v in dict.fromkeys(runs["variant"]) if v in shift.COST_ROBUST]
    assert list(findings["finding"]) == [f"{v}: beats the matched-spend control" for v in variants]
    _check_by_shift(every[every["key"] == ch15.KEY_BY_SHIFT], runs, controls, variants)
    assert set(claims.VERDICT_COLUMNS) <= set(findings.columns)
    both = runs.merge(controls, on=KEYS, suffixes=("", "_control"))
    status = {"holds": claims.REPRODUCED, "fails": claims.NOT_REPRODUCED}
    for f in findings.itertuples():
        g = both[both["variant"] == f.variant]
        assert f.n == g["seed"].nunique() == params["n_seeds"]
        assert f.status == status.get(f.decision, claims.INCONCLUSIVE)
        k = int((g["train_cost"] > g["budget"]).sum())
        assert f"over budget in {k} of {len(g)} runs" in f.observed
        if params["n_seeds"] < MIN_SEEDS:
            assert f.decision == "inconclusive"
    (claim,) = ch15.CLAIMS
    assert claim.chapter == registry.LLMBAR_SHIFT
    assert (findings["key"] == claim.rule.key).all()  # every row: a variant that reweights cost
    assert set(findings["variant"]) <= set(shift.COST_ROBUST)


def _check_by_shift(by_shift, runs, controls, variants):
    """One finding per shift construction and cost-reweighting variant, decided on that
    shift's runs alone (each paired with its own control), seeds as replicates."""
    shifts = list(dict.fromkeys(runs["shift"]))
    expect = [f"{s}, {v}: beats the matched-spend control" for s in shifts for v in variants]
    assert sorted(by_shift["finding"]) == sorted(expect)
    both = runs.merge(controls, on=KEYS, suffixes=("", "_control"))
    for f in by_shift.itertuples():
        g = both[(both["variant"] == f.variant) & (both["shift"] == f.shift)]
        k = int((g["train_cost"] > g["budget"]).sum())
        assert f"over budget in {k} of {len(g)} runs" in f.observed
        assert f.n == g["seed"].nunique()


def test_the_seeds_are_the_replicate_seeds(params, runs, controls):
    seeds = verdicts.replicate_seeds(params["seed"], params["n_seeds"])
    assert sorted(runs["seed"].unique()) == seeds
    assert sorted(controls["seed"].unique()) == seeds


def test_reasoning_rates_before_and_after(runs, results):
    rates = _csv(results, "reasoning_rates.csv")
    for row in rates.itertuples():
        g = runs[(runs["judge"] == row.judge) & (runs["shift"] == row.shift)]
        g = g[g["method"] == row.method]
        assert np.isclose(row.rate_before, g["valid_rate"].mean())
        assert np.isclose(row.rate_after, g["reasoning_rate"].mean())
        assert np.isclose(row.cost_after, g["train_cost"].mean())


def test_shifted_costs_lie_between_the_modes_in_the_training_unit(params, runs, records):
    """Each run's shifted cost, in its own training unit (``unit_tokens``), lies between the
    cheaper and the dearer mode of every shifted pair, and its unit is its training pairs' mean
    Vanilla tokens, which the shift's two sides need not share."""
    subsets = next(iter(records.values()))["subset"]
    plan = {s.name: s for s in ch15.shift_plan(subsets, params["shifts"])}
    for (judge, name), mine in runs.groupby(["judge", "shift"]):
        recs = records[judge]
        t = recs.loc[recs["subset"].isin(plan[name].test), ["tokens_instruct", "tokens_reasoning"]]
        lo = t.min(axis=1).mean() / mine["unit_tokens"]
        hi = t.max(axis=1).mean() / mine["unit_tokens"]
        assert (mine["train_cost"] >= lo - 1e-9).all() and (mine["train_cost"] <= hi + 1e-9).all()
        train_side = recs.loc[recs["subset"].isin(plan[name].train), "tokens_instruct"]
        assert mine["unit_tokens"].between(train_side.min(), train_side.max()).all()
        all_instruct = evaluate.policy_point(recs[recs["subset"].isin(plan[name].test)], 0.0)
        assert all_instruct["cost"] == pytest.approx(1.0)  # the set's own unit, for contrast


def test_the_summary_over_seeds_judges_violations_in_the_training_unit(runs, results):
    summary = _csv(results, "shift_summary.csv")
    by = ["judge", "shift", "method", "budget"]
    assert len(summary) == runs.groupby(by).ngroups
    for row in summary.itertuples():
        g = runs[(runs["judge"] == row.judge) & (runs["shift"] == row.shift)]
        g = g[(g["method"] == row.method) & np.isclose(g["budget"], row.budget)]
        assert np.isclose(row.violation_rate, g["violated"].mean())
        assert np.isclose(row.train_cost_mean, g["train_cost"].mean())
        assert np.isclose(row.accuracy_mean, g["accuracy"].mean())
