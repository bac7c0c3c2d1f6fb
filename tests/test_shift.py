"""racer_lib.paper.shift: the Wilson interval, the shift plan, the matched-spend control's budget
rule and the training-unit cost, on small records; the control's verdict over seeds (a
conjunction) on hand-made runs; one tiny end-to-end run on simulated records."""

import numpy as np
import pandas as pd
import pytest

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import claims, experiments, shift
from racer_lib.paper.chapters import llmbar_shift as ch15
from racer_lib.records.schema import CostUnit, correct_matrix, token_matrix
from racer_lib.records.simulate import simulate
from racer_lib.routing import train

# ----------------------------------------------------------------------------------------
# Wilson interval


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [  # 95 % Wilson score intervals as scipy.stats.binomtest(k, n).proportion_ci(
        # method="wilson") gives them (scipy 1.x), rounded to 6 decimals
        (0, 10, 0.0, 0.277533),
        (5, 10, 0.236593, 0.763407),
        (1, 45, 0.003934, 0.115667),
        (10, 10, 0.722467, 1.0),
        (6, 45, 0.062571, 0.261773),
    ],
)
def test_wilson_interval_matches_known_values(k, n, lo, hi):
    got = shift.wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-5)


def test_wilson_interval_widens_with_the_level_and_rejects_bad_counts():
    lo90, hi90 = shift.wilson_interval(3, 20, level=0.90)
    lo99, hi99 = shift.wilson_interval(3, 20, level=0.99)
    assert lo99 < lo90 < 3 / 20 < hi90 < hi99
    assert shift.wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        shift.wilson_interval(4, 3)


# ----------------------------------------------------------------------------------------
# The plan: subsets discovered from the records


def test_plan_discovers_the_subsets_present():
    subsets = pd.Series(["natural"] * 3 + ["foo"] * 2 + ["bar"] * 4)
    plan = ch15.shift_plan(subsets)
    names = [sh.name for sh in plan]
    assert names == [
        "natural->adversarial",
        "adversarial->natural",
        "without natural",
        "without foo",
        "without bar",
    ]
    assert plan[0].train == ("natural",) and plan[0].test == ("foo", "bar")
    assert plan[1].train == ("foo", "bar") and plan[1].test == ("natural",)
    assert plan[3].train == ("natural", "bar") and plan[3].test == ("foo",)
    table = ch15.plan_table(plan, subsets)
    assert list(table["test_pairs"]) == [6, 3, 3, 2, 4]
    assert list(table["train_valid_pairs"]) == [3, 6, 6, 7, 5]
    # another natural side, and one kind only
    only = ch15.shift_plan(subsets, ["adversarial->natural"], natural=["bar"])
    assert [(sh.train, sh.test) for sh in only] == [(("natural", "foo"), ("bar",))]
    with pytest.raises(ValueError):
        ch15.shift_plan(subsets, ["sideways"])
    with pytest.raises(ValueError):  # no natural subset present
        ch15.shift_plan(subsets, natural=["absent"])


def test_split_labels_hold_out_a_share_of_each_training_subset():
    subsets = np.array(["a"] * 8 + ["b"] * 12 + ["c"] * 5)
    sh = ch15.Shift("x", ("a", "b"), ("c",))
    labels = ch15.split_labels(subsets, sh, seed=3, valid_share=0.25)
    assert (labels[subsets == "c"] == "test").all()
    assert (labels[subsets == "a"] == "valid").sum() == 2
    assert (labels[subsets == "b"] == "valid").sum() == 3
    assert set(labels) == {"train", "valid", "test"}
    again = ch15.split_labels(subsets, sh, seed=3, valid_share=0.25)
    assert (labels == again).all()
    other = ch15.split_labels(subsets, ch15.Shift("y", ("a",), ("b",)), seed=3)
    assert (other[subsets == "c"] == "unused").all()


# ----------------------------------------------------------------------------------------
# The control's budget rule and the training-unit cost, on small records


def _records(tokens, correct):
    """Small judge records: tokens and correctness of (instruct, reasoning) per pair."""
    t, r = np.asarray(tokens, float), np.asarray(correct, bool)
    return pd.DataFrame(
        {
            "tokens_instruct": t[:, 0],
            "tokens_reasoning": t[:, 1],
            "correct_instruct": r[:, 0],
            "correct_reasoning": r[:, 1],
        }
    )


def test_control_budget_is_the_validation_spend_capped_and_feasible():
    train_recs = _records([[4, 40], [4, 20], [4, 60]], [[1, 1], [0, 1], [1, 0]])
    valid_recs = _records([[2, 30], [6, 50]], [[1, 1], [0, 1]])
    unit = CostUnit.from_records(train_recs)  # 4 tokens per unit
    p = np.array([0.5, 0.1])
    # the robust run's validation spend, in the training unit: expected tokens / 4
    spent = (0.5 * 2 + 0.5 * 30 + 0.9 * 6 + 0.1 * 50) / 2 / 4
    valid = train.make_split("valid", valid_recs, np.zeros((2, 1)), unit)
    point = evaluate.split_point(valid.r.numpy(), valid.c.numpy(), p)
    assert point["cost"] == pytest.approx(spent)
    cheapest = float(unit.cost(train_recs).min(axis=1).mean())  # 1.0: instruct everywhere
    assert shift.control_budget(point["cost"], 5.0, cheapest) == pytest.approx(spent)
    assert shift.control_budget(point["cost"], 2.0, cheapest) == 2.0  # capped at the budget
    floor = shift.FEASIBLE_MARGIN * cheapest
    assert shift.control_budget(0.5, 5.0, cheapest) == pytest.approx(floor)  # kept feasible
    assert floor > cheapest


def test_costs_are_in_the_training_unit_not_the_sets_own():
    train_recs = _records([[4, 40], [4, 40]], [[1, 1], [1, 1]])
    shifted = _records([[8, 40], [8, 80]], [[1, 0], [0, 1]])  # instruct answers twice as long
    unit = CostUnit.from_records(train_recs)
    p = np.array([0.0, 1.0])
    point = evaluate.policy_point(shifted, p, unit)
    assert point["train_cost"] == pytest.approx((8 + 80) / 2 / 4)  # 11 training units
    assert point["cost"] == pytest.approx((8 + 80) / 2 / 8)  # 5.5 in the set's own unit
    assert point["accuracy"] == pytest.approx(100.0)


# ----------------------------------------------------------------------------------------
# A tiny run end to end: rows, controls, comparison and findings


@pytest.fixture(scope="module")
def tiny(one_thread):
    records, emb = simulate("qwen3-4b", "training_mix", dim=8, scale=0.02)
    records = records.assign(subset=np.where(np.arange(len(records)) % 3 == 0, "natural", "adv"))
    plan = ch15.shift_plan(records["subset"], ["natural->adversarial"])
    settings = train.TrainSettings(arch="linear", epochs=3, lr=1e-2)
    runs, controls = ch15.run_plan(
        {"j": records}, emb, plan, [0, 1], [2.0, 50.0], settings, taus_c=[1.0, 5.0]
    )
    return records, emb, plan, runs, controls


def test_runs_cost_in_the_training_unit_and_violations(tiny):
    records, emb, plan, runs, _ = tiny
    methods = ["ACER", "RACER-R", "RACER-C τ_C=1", "RACER-C τ_C=5", "RACER τ_C=1", "RACER τ_C=5"]
    assert list(dict.fromkeys(runs["method"])) == methods
    assert len(runs) == len(methods) * 2 * 2  # budgets x seeds
    labels = ch15.split_labels(records["subset"], plan[0], 0)
    unit = CostUnit.from_records(records[labels == "train"])
    test = records[labels == "test"]
    row = runs[(runs["seed"] == 0)].iloc[0]
    assert row["unit_tokens"] == pytest.approx(unit.tokens_per_unit)
    # the expected cost of the row's reasoning rate cannot be rebuilt from the rate alone, but
    # its bounds can: between All-Instruct and All-Reasoning in the training unit
    lo, hi = (float(v) for v in (token_matrix(test) / unit.tokens_per_unit).mean(axis=0))
    assert (runs["train_cost"] >= lo - 1e-9).all() and (runs["train_cost"] <= hi + 1e-9).all()
    assert (runs["violated"] == (runs["train_cost"] > runs["budget"])).all()
    acc = 100 * correct_matrix(test).mean(axis=0)
    assert runs["accuracy"].between(acc.min() - 1e-9, acc.max() + 1e-9).all()


def test_each_robust_run_has_its_control(tiny):
    _, _, _, runs, controls = tiny
    robust = runs[runs["variant"].isin(shift.ROBUST)]
    assert len(controls) == len(robust)
    both = robust.merge(controls, on=["judge", "shift", "method", "seed", "budget"])
    assert len(both) == len(robust)
    assert (both["robust_valid_cost"] == both["valid_cost"]).all()
    assert (both["control_budget"] <= both["budget"] + 1e-12).all()
    over = both["valid_cost"] >= both["budget"]
    assert (both.loc[over, "control_budget"] == both.loc[over, "budget"]).all()
    under = both[~over]
    matched = np.isclose(under["control_budget"], under["valid_cost"])
    # otherwise the spend lay below the feasible floor (the cheapest training cost, <= 1 unit)
    floored = (under["control_budget"] > under["valid_cost"]) & (
        under["control_budget"] <= shift.FEASIBLE_MARGIN + 1e-9
    )
    assert (matched | floored).all()
    assert matched.any()


def test_comparison_counts_and_findings(tiny):
    _, _, _, runs, controls = tiny
    table = shift.control_comparison(runs, controls, ["method"])
    assert set(table["method"]) == {m for m in runs["method"] if m != "ACER"}
    for row in table.itertuples():
        mine = runs[runs["method"] == row.method]
        ctrl = controls[controls["method"] == row.method]
        assert row.runs == len(mine) == len(ctrl)
        assert row.seeds == mine["seed"].nunique() == 2
        assert row.robust_violations == int((mine["train_cost"] > mine["budget"]).sum())
        assert row.control_violations == int((ctrl["train_cost"] > ctrl["budget"]).sum())
        assert (row.robust_lo, row.robust_hi) == shift.wilson_interval(
            row.robust_violations, row.runs
        )
        assert row.only_robust + row.only_control <= row.runs
        assert row.only_robust <= row.robust_violations
        assert row.only_control <= row.control_violations
        # two seeds: every test is inconclusive, none run (verdicts.MIN_SEEDS)
        assert row.decision == row.violations_decision == row.accuracy_decision == "inconclusive"
        assert "too few seeds" in row.note
    findings = shift.control_findings(table, "simulated", "15_llmbar_shift", "findings.csv")
    assert list(findings["finding"]) == [
        f"{m}: beats the matched-spend control" for m in table["method"]
    ]
    assert set(findings["status"]) == {claims.INCONCLUSIVE}
    by_cell = shift.control_comparison(runs, controls, ["method", "budget"])
    assert by_cell["runs"].sum() == table["runs"].sum()
    # with two seeds allowed, the tests run and each row is decided over its seeds
    two = shift.control_comparison(runs, controls, ["method"], min_n=2)
    assert two["violations_p"].notna().all() and two["accuracy_p"].notna().all()


def _paired(spec, seeds=12, runs_per_seed=3, control_acc=70.0):
    """Hand-made runs and their controls (budget 2): ``spec`` maps a method to ``(robust over,
    control over, accuracy shift)``, the first two functions of ``(seed, run)`` saying whether
    that run (or its control) exceeds the budget."""
    rows, ctrl = [], []
    for m, (robust_over, control_over, shift_acc) in spec.items():
        for s in range(seeds):
            for k in range(runs_per_seed):
                jitter = 0.01 * ((7 * s + 3 * k) % 5)
                rows.append(
                    {
                        "method": m,
                        "variant": "RACER-C",
                        "tau": float(k),
                        "seed": s,
                        "budget": 2.0,
                        "accuracy": control_acc + shift_acc + jitter,
                        "train_cost": 2.5 if robust_over(s, k) else 1.5,
                    }
                )
                ctrl.append(
                    {
                        "method": m,
                        "seed": s,
                        "tau": float(k),
                        "budget": 2.0,
                        "accuracy": control_acc + 0.02 * ((s + k) % 3),
                        "train_cost": 2.5 if control_over(s, k) else 1.5,
                        "robust_valid_cost": 1.0,
                        "control_budget": 1.0,
                    }
                )
    return pd.DataFrame(rows), pd.DataFrame(ctrl)


def test_beating_the_control_is_a_conjunction_over_seeds():
    """The rule on hand-made paired runs (12 seeds of 3 runs, budget 2): A never exceeds the
    budget where its controls mostly do (planted signal: holds); B exceeds it exactly with its
    controls (a tie in every seed: no effect at all, which fails); C is A with every run over
    budget while its controls stay within it (fails); D is A two points less accurate than its
    controls (fewer violations holds, equal accuracy fails: the conjunction fails)."""
    spec = {
        "A": (lambda s, k: False, lambda s, k: k < 2 or s % 2 == 0, 0.0),
        "B": (lambda s, k: k == 0, lambda s, k: k == 0, 0.0),
        "C": (lambda s, k: True, lambda s, k: k == 0 and s % 3 == 0, 0.0),
        "D": (lambda s, k: False, lambda s, k: k < 2 or s % 2 == 0, -2.0),
    }
    runs, controls = _paired(spec)
    table = shift.control_comparison(runs, controls, ["method"]).set_index("method")
    assert table["decision"].to_dict() == {
        "A": "holds",
        "B": "fails",
        "C": "fails",
        "D": "fails",
    }
    assert table.loc["A", "violations_decision"] == "holds"
    assert table.loc["A", "accuracy_decision"] == "holds"
    assert table.loc["D", "violations_decision"] == "holds"
    assert table.loc["D", "accuracy_decision"] == "fails"
    assert table.loc["A", "seeds"] == 12 and table.loc["A", "runs"] == 36
    # the per-seed shares: A's robust share 0, its controls' (2 + [s even]) / 3
    control_share = np.array([(2 + (s % 2 == 0)) / 3 for s in range(12)])
    assert table.loc["A", "violation_difference"] == pytest.approx(-control_share.mean())
    assert table.loc["A", "only_control"] == int(round(36 * control_share.mean()))
    assert table.loc["A", "spend_share"] == pytest.approx(0.5)
    # a variant's temperatures pooled within each seed (variant_comparison)
    pooled = shift.variant_comparison(runs[runs["method"] == "A"], controls)
    assert list(pooled["variant"]) == ["RACER-C"] and pooled["decision"].item() == "holds"
    findings = shift.control_findings(
        table.reset_index(), "simulated", "08_robustness_ablation", "control_findings.csv"
    )
    assert list(findings["status"]) == [
        claims.REPRODUCED,
        claims.NOT_REPRODUCED,
        claims.NOT_REPRODUCED,
        claims.NOT_REPRODUCED,
    ]
    assert "12" in findings.loc[0, "observed"] and "(holds)" in findings.loc[0, "observed"]
    view = shift.control_view(table.reset_index(), ["method"])
    assert list(view["beats control"]) == list(table["decision"])
    assert view.loc[0, "robust over budget"].startswith("0/36 [0.00, ")


def test_experiments_fit_is_reused(monkeypatch, tiny):
    """The controls are trained through racer_lib.paper.experiments.fit (the shared training
    path)."""
    records, emb, plan, runs, _ = tiny
    calls = []
    real = experiments.fit
    monkeypatch.setattr(experiments, "fit", lambda *a, **k: calls.append(k) or real(*a, **k))
    ch15.run_shift(records, emb, plan[0], [0], [3.0], train.TrainSettings(arch="linear", epochs=1))
    assert len(calls) == 2 and all(k["split"] is not None for k in calls)


def test_the_controls_are_trained_through_the_store_of_the_runs_they_match(monkeypatch, tiny):
    """matched_controls trains its ACER controls the way ``fit``'s routers were (``fit.store``:
    here no store, as chapter 16 trains), one row per robust run of the plan."""
    records, emb, *_ = tiny
    settings = train.TrainSettings(arch="linear", epochs=1)
    names, configs = shift.ablation_plan([0.5], [1.0], 2.0, [0])
    fitted = experiments.fit(records, emb, configs, settings)
    assert fitted.store is None
    calls = []
    real = experiments.fit
    monkeypatch.setattr(experiments, "fit", lambda *a, **k: calls.append(k) or real(*a, **k))
    rows = shift.matched_controls(
        fitted, names, records, emb, settings, (records, emb), robust=shift.COST_ROBUST, at="x"
    )
    assert [k["store"] for k in calls] == [None]
    assert [(r["at"], r["method"]) for r in rows] == [("x", "RACER-C τ=1")]


def test_the_spend_and_violations_figure_has_one_panel_per_value(tiny):
    from racer_lib.paper import plots

    _, _, _, runs, controls = tiny
    table = shift.control_comparison(runs, controls, ["method", "budget"])
    fig = plots.spend_and_violations(table, panel="budget")
    assert [ax.get_title() for ax in fig.axes] == ["2.0", "50.0"]
    xs = fig.axes[0].lines[0].get_xdata()  # the first robust method's marker, at its spend
    first = table[table["budget"] == 2.0].iloc[0]
    assert xs[0] == pytest.approx(100 * first["spend_share"], abs=1.0)
    assert len(plots.spend_and_violations(table.head(1)).axes) == 1


def test_wilson_interval_ends_exactly_at_zero_and_one():
    for n in (1, 3, 6, 7, 10, 45, 60, 97):
        assert shift.wilson_interval(0, n)[0] == 0.0
        assert shift.wilson_interval(n, n)[1] == 1.0
        lo, hi = shift.wilson_interval(n, n)
        assert lo <= 1.0 <= hi
