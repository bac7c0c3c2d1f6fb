"""The code of chapters 08, 09 and 12 (the robustness ablation, the β grid and
RACER against Random at matched cost), on small simulated records and hand-made tables."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import claims, experiments, plots
from racer_lib.paper import numbers as paper
from racer_lib.paper.chapters import beta_sensitivity, llama_family, robustness_ablation
from racer_lib.records.simulate import simulate  # noqa: E402
from racer_lib.routing import train  # noqa: E402

SETTINGS = train.TrainSettings(arch="linear", epochs=3, lr=1e-3, dual_step=1e-2)
JUDGE = "qwen3-4b"


@pytest.fixture(scope="module")
def judged(one_thread):
    return simulate(JUDGE, "training_mix", seed=0, dim=8, scale=0.02)


@pytest.fixture(scope="module")
def shifted(one_thread):
    return simulate(JUDGE, "offsetbias", seed=0, dim=8, scale=0.05)


# ---------------------------------------------------------------------- 06: the ablation


def test_ablation_plan_names_each_method_and_keeps_the_batch_order():
    names, configs = robustness_ablation.ablation_plan([0.1, 1.0], [0.3], 2.0, [5, 6])
    assert names == [
        "ACER",
        "ACER",
        "RACER-R τ=0.1",
        "RACER-R τ=0.1",
        "RACER-R τ=1",
        "RACER-R τ=1",
        "RACER-C τ=0.3",
        "RACER-C τ=0.3",
    ]
    assert [(c.variant, c.tau_r, c.tau_c, c.seed) for c in configs] == [
        ("ACER", 1.0, 1.0, 5),
        ("ACER", 1.0, 1.0, 6),
        ("RACER-R", 0.1, 1.0, 5),
        ("RACER-R", 0.1, 1.0, 6),
        ("RACER-R", 1.0, 1.0, 5),
        ("RACER-R", 1.0, 1.0, 6),
        ("RACER-C", 1.0, 0.3, 5),
        ("RACER-C", 1.0, 0.3, 6),
    ]
    assert {c.budget for c in configs} == {2.0}
    names, configs = robustness_ablation.ablation_plan([], [], 3.0, [0])
    assert names == ["ACER"] and configs[0].taus == (np.inf, np.inf)


def test_the_trainer_weights_the_costlier_pairs_up():
    w = robustness_ablation.trainer_cost_weights([1.0, 3.0])
    assert w.shape == (2,) and w[1] > w[0]
    assert w.sum() == pytest.approx(1.0)  # weights of one batch, normalised
    assert np.allclose(robustness_ablation.trainer_cost_weights([2.0, 2.0, 2.0]), 1 / 3)
    sharp = robustness_ablation.trainer_cost_weights([1.0, 3.0], tau_c=0.3)
    assert sharp[1] > w[1]  # a smaller temperature: a more pessimistic adversary


@pytest.fixture(scope="module")
def ablation(judged, shifted):
    records, emb = judged
    ood, ood_emb = shifted
    names, configs = robustness_ablation.ablation_plan([0.5], [0.2], 2.0, [0, 1])
    fit = experiments.fit(records, emb, configs, SETTINGS)
    rows = robustness_ablation.shift_rows(
        fit,
        names,
        records,
        emb,
        ood,
        ood_emb,
        scenario="(a)",
        train_subset="training_mix",
        test_subset="offsetbias",
    )
    return fit, names, pd.DataFrame(rows)


def test_shift_rows_hold_every_policy_on_the_shifted_set_and_on_validation(
    judged, shifted, ablation
):
    records, emb = judged
    ood, ood_emb = shifted
    fit, names, runs = ablation
    assert list(runs.columns) == [
        "scenario",
        "train_subset",
        "test_subset",
        "method",
        "variant",
        "tau",
        "seed",
        "budget",
        "best_epoch",
        "accuracy",
        "cost",
        "reasoning_rate",
        "valid_accuracy",
        "valid_cost",
        "final_lambda",
        "violated",
    ]
    assert list(runs["method"]) == names
    assert list(runs["seed"]) == [c.seed for c in fit.result.configs]
    assert np.isnan(runs.loc[0, "tau"])
    assert list(runs["tau"].iloc[2:]) == [0.5, 0.5, 0.2, 0.2]
    p_ood = fit.result.p_reasoning(ood_emb)
    valid = (records["split"] == "valid").to_numpy()
    p_valid = fit.result.p_reasoning(emb[valid])
    last = fit.result.history[fit.result.history["epoch"] == SETTINGS.epochs]
    for i, row in runs.iterrows():
        point = evaluate.policy_point(ood, p_ood[i])
        assert (row["accuracy"], row["cost"]) == pytest.approx((point["accuracy"], point["cost"]))
        iid = evaluate.policy_point(records[valid], p_valid[i])
        assert row["valid_cost"] == pytest.approx(iid["cost"])
        assert row["final_lambda"] == last.loc[last["policy"] == i, "lambda"].item()
        assert row["best_epoch"] == fit.result.best_epoch[i]
    assert (runs["violated"] == (runs["cost"] > runs["budget"])).all()


def test_ablation_summary_keeps_the_plan_order_within_each_scenario(ablation):
    _, names, runs = ablation
    both = pd.concat([runs.assign(scenario="(b)"), runs], ignore_index=True)
    summary = robustness_ablation.ablation_summary(both)
    methods = list(dict.fromkeys(names))
    assert list(zip(summary["scenario"], summary["method"], strict=True)) == [
        (s, m) for s in ("(a)", "(b)") for m in methods
    ]
    assert (summary["seeds"] == 2).all()
    acer = runs[runs["method"] == "ACER"]
    row = summary.iloc[0]
    assert row["accuracy_mean"] == pytest.approx(acer["accuracy"].mean())
    assert row["valid_cost"] == pytest.approx(acer["valid_cost"].mean())
    assert row["final_lambda"] == pytest.approx(acer["final_lambda"].mean())
    assert list(summary["variant"].iloc[:3]) == ["ACER", "RACER-R", "RACER-C"]


def _hand_runs():
    """Two scenarios, ACER and RACER-C at two temperatures, RACER-R at one; 2 seeds each."""
    rows = []
    spec = {  # method: variant, tau, (accuracy, cost) per scenario and seed
        "ACER": ("ACER", np.nan, {"cheap": [(80, 1.2), (80, 1.4)], "dear": [(82, 2.2), (82, 1.8)]}),
        "RACER-R τ=1": (
            "RACER-R",
            1.0,
            {"cheap": [(81, 1.3), (81, 1.3)], "dear": [(83, 2.4), (83, 2.4)]},
        ),
        "RACER-C τ=0.1": (
            "RACER-C",
            0.1,
            {"cheap": [(79, 1.0), (79, 1.0)], "dear": [(80, 1.5), (80, 1.6)]},
        ),
        "RACER-C τ=1": (
            "RACER-C",
            1.0,
            {"cheap": [(79, 1.1), (79, 1.1)], "dear": [(81, 1.9), (81, 2.1)]},
        ),
    }
    for scenario in ("cheap", "dear"):
        for method, (variant, tau, points) in spec.items():
            for seed, (acc, cost) in enumerate(points[scenario]):
                rows.append(
                    {
                        "scenario": scenario,
                        "method": method,
                        "variant": variant,
                        "tau": tau,
                        "seed": seed,
                        "budget": 2.0,
                        "accuracy": acc,
                        "cost": cost,
                        "reasoning_rate": 0.5,
                        "valid_accuracy": acc,
                        "valid_cost": cost,
                        "final_lambda": 0.0,
                        "violated": cost > 2.0,
                    }
                )
    return pd.DataFrame(rows)


def test_violation_rates_per_temperature_and_pooled():
    viol = robustness_ablation.violation_rates(_hand_runs(), [0.1, 1.0])
    assert list(viol["method"]) == ["ACER", "RACER-C τ=0.1", "RACER-C τ=1", "RACER-C (all τ)"] * 2
    dear = viol[viol["scenario"] == "dear"].set_index("method")
    assert dear.loc["ACER", ["runs", "violations"]].tolist() == [2, 1]
    assert dear.loc["RACER-C τ=1", "violation_rate"] == 0.5
    assert dear.loc["RACER-C (all τ)", ["runs", "violations"]].tolist() == [4, 1]
    assert dear.loc["RACER-C τ=0.1", "cost_max"] == 1.6
    assert (dear["acer_violation_rate"] == 0.5).all()
    assert np.isnan(dear.loc["ACER", "fewer_violations_than_acer"])
    assert dear.loc["RACER-C τ=0.1", "fewer_violations_than_acer"] == True  # noqa: E712
    assert dear.loc["RACER-C τ=1", "fewer_violations_than_acer"] == False  # noqa: E712


def test_ablation_findings_read_the_five_statements():
    runs = _hand_runs()
    summary = robustness_ablation.ablation_summary(runs)
    findings = robustness_ablation.ablation_findings(
        runs, summary, [1.0], [0.1, 1.0], "simulated", seed=0
    )
    assert list(findings.columns) == ["finding", "scenario", "observed", "holds", "status", "basis"]
    assert list(findings["scenario"]) == ["cheap", "cheap", "dear", "dear", "both"]
    # cheap: no violation; RACER-R +1 over ACER and +2 over each RACER-C, no spread (se 0)
    # dear: best RACER-C 81 < min(ACER 82, RACER-R 83); one RACER-C run over budget (τ = 1);
    # every reasoning rate 0.5: no conservative routing
    assert list(findings["holds"]) == [True, True, True, False, False]
    assert list(findings["status"]) == [claims.REPRODUCED] * 3 + [claims.NOT_REPRODUCED] * 2
    assert findings.loc[0, "observed"] == "0 of 8 runs over budget"
    assert findings.loc[1, "observed"] == (
        "RACER-R τ=1 (its best τ) vs ACER: +1.00 ± 0.00 pts, RACER-C τ=0.1: +2.00 ± 0.00 pts, "
        "RACER-C τ=1: +2.00 ± 0.00 pts"
    )
    assert findings.loc[3, "observed"] == "1 of 4 RACER-C runs over budget (every τ_C: 0.1, 1)"
    worse = runs.assign(accuracy=np.where(runs["method"] == "RACER-R τ=1", 80.0, runs["accuracy"]))
    findings = robustness_ablation.ablation_findings(
        worse, robustness_ablation.ablation_summary(worse), [1.0], [0.1, 1.0], "simulated"
    )
    assert list(findings["holds"]) == [True, False, False, False, False]
    assert findings["status"][1] == findings["status"][2] == claims.NOT_REPRODUCED


def test_subset_statistics_count_the_full_subsets_beside_the_paper():
    stats = robustness_ablation.subset_statistics(
        JUDGE,
        {"wildguardmix": "train", "judgebench": "x"},
        paper.DATASET_STATISTICS,
        seed=0,
        scale=0.05,
    )
    assert list(stats.columns) == [
        "subset",
        "role",
        "pairs",
        "cost_ratio",
        "acc_instruct",
        "acc_reasoning",
        "pairs_used",
        "paper_pairs",
        "paper_cost_ratio",
        "provenance",
    ]
    guard = stats.iloc[0]
    assert guard["pairs"] == paper.DATASET_STATISTICS["wildguardmix"][0]  # full size
    assert guard["pairs_used"] == len(simulate(JUDGE, "wildguardmix", dim=0, scale=0.05)[0])
    assert guard["cost_ratio"] == pytest.approx(3.4, rel=0.05)
    assert np.isnan(stats.iloc[1]["paper_pairs"])  # not a subset of the paper's table
    assert set(stats["provenance"]) == {"simulated"}


# ---------------------------------------------------------------------- 07: the β grid


def test_config_rows_name_each_policy_by_its_fields(judged):
    records, emb = judged
    configs = experiments.grid([2.0, 4.0], [0], outer={"beta": [0.0, 0.05]}, variant="RACER-R")
    fit = experiments.fit(records, emb, configs, SETTINGS)
    test, test_emb = experiments.evaluation_sets(JUDGE, records, emb)["test"]
    rows = pd.DataFrame(
        beta_sensitivity.config_rows(fit.result, test, test_emb, ("beta", "budget", "seed"))
    )
    assert list(rows.columns) == [
        "beta",
        "budget",
        "seed",
        "best_epoch",
        "accuracy",
        "cost",
        "reasoning_rate",
    ]
    assert list(zip(rows["beta"], rows["budget"], strict=True)) == [
        (0.0, 2.0),
        (0.0, 4.0),
        (0.05, 2.0),
        (0.05, 4.0),
    ]
    p = fit.result.p_reasoning(test_emb)
    for i, row in rows.iterrows():
        assert row["cost"] == pytest.approx(evaluate.policy_point(test, p[i])["cost"])
    columns = pd.DataFrame(beta_sensitivity.config_rows(fit.result, test, test_emb)).columns
    assert list(columns)[:3] == [
        "budget",
        "seed",
        "best_epoch",
    ]


def _beta_runs(accuracy):
    """Runs of two seeds per (beta, budget) cell: accuracy[beta] = the two seeds' values."""
    return pd.DataFrame(
        [
            {
                "beta": b,
                "budget": c,
                "seed": s,
                "accuracy": acc[s] + c,
                "cost": c - 0.1,
                "reasoning_rate": 0.3,
            }
            for b, acc in accuracy.items()
            for c in (2.0, 3.0)
            for s in (0, 1)
        ]
    )


def test_beta_table_sits_beside_the_paper():
    table = beta_sensitivity.beta_table(
        _beta_runs({0.0: (85, 86), 0.2: (80, 80)}), paper.BETA_SENSITIVITY
    )
    assert list(zip(table["beta"], table["budget"], strict=True)) == [
        (0.0, 2.0),
        (0.0, 3.0),
        (0.2, 2.0),
        (0.2, 3.0),
    ]
    assert table.loc[0, "accuracy_mean"] == 87.5 and table.loc[0, "seeds"] == 2
    assert (table.loc[0, "paper_accuracy"], table.loc[0, "paper_cost"]) == (85.2, 1.9)
    assert table.loc[[2, 3], ["paper_accuracy", "paper_cost"]].isna().all().all()


def test_mean_difference_and_its_standard_error():
    table = evaluate.over_seeds(_beta_runs({0.0: (85, 87), 0.005: (86, 86)}), ["beta", "budget"])
    m, se = beta_sensitivity.mean_difference(table, ("beta", "budget"), (0.005, 2.0), (0.0, 2.0))
    assert m == pytest.approx(0.0)
    assert se == pytest.approx(np.sqrt(2.0 / 2 + 0.0 / 2))  # sd sqrt(2) over 2 seeds, and 0
    one = table.assign(accuracy_sd=np.nan, seeds=1)
    assert (
        beta_sensitivity.mean_difference(one, ("beta", "budget"), (0.005, 2.0), (0.0, 2.0))[1]
        == np.inf
    )


def test_beta_findings_check_what_the_betas_allow():
    runs = _beta_runs({0.0: (84, 84.2), 0.005: (86, 86.2), 0.01: (86.1, 86.1), 0.05: (83, 83.2)})
    table = beta_sensitivity.beta_table(runs, paper.BETA_SENSITIVITY)
    findings = beta_sensitivity.beta_findings(
        table, [0.0, 0.005, 0.01, 0.05], [2.0, 3.0], "simulated"
    )
    assert list(findings.columns) == ["finding", "budget", "observed", "holds", "status", "basis"]
    assert len(findings) == 1 + 2 + 2
    assert findings["holds"].all()
    assert (findings["status"] == claims.REPRODUCED).all()  # β acts on training only
    assert findings.loc[0, "observed"] == "β=0.005 minus β=0: +2.00 ± 0.14 pts"
    only = beta_sensitivity.beta_findings(
        table[table["beta"] != 0.05], [0.0, 0.005, 0.01], [2.0, 3.0], "simulated"
    )
    assert len(only) == 3 and "0.05" not in " ".join(only["finding"])
    assert beta_sensitivity.beta_findings(table, [0.01, 0.05], [2.0], "simulated").empty


# ---------------------------------------------------------------------- 10: matched cost


@pytest.fixture(scope="module")
def matched(judged):
    records, emb = judged
    fit = experiments.fit(
        records, emb, experiments.grid([2.0, 3.0], [0, 1], variant="RACER-R"), SETTINGS
    )
    test, test_emb = experiments.evaluation_sets(JUDGE, records, emb)["test"]
    return test, pd.DataFrame(llama_family.matched_random_rows(fit.result, test, test_emb))


def test_matched_random_rows_spend_what_the_router_spends(matched):
    test, runs = matched
    ends = evaluate.endpoints(test)
    a0, a1 = ends["All-Instruct"]["accuracy"], ends["All-Reasoning"]["accuracy"]
    c1 = ends["All-Reasoning"]["cost"]
    assert list(zip(runs["budget"], runs["seed"], strict=True)) == [
        (2.0, 0),
        (2.0, 1),
        (3.0, 0),
        (3.0, 1),
    ]
    inside = (runs["racer_cost"] > 1) & (runs["racer_cost"] < c1)
    assert inside.all()
    np.testing.assert_allclose(runs["random_at_cost_cost"], runs["racer_cost"], atol=1e-9)
    q = (runs["racer_cost"] - 1) / (c1 - 1)
    np.testing.assert_allclose(runs["random_at_cost_rate"], q, atol=1e-9)
    np.testing.assert_allclose(runs["random_at_cost_accuracy"], a0 + q * (a1 - a0), atol=1e-9)
    rate = runs["racer_reasoning_rate"]
    np.testing.assert_allclose(runs["random_at_rate_cost"], 1 + rate * (c1 - 1), atol=1e-9)
    np.testing.assert_allclose(runs["random_at_rate_accuracy"], a0 + rate * (a1 - a0), atol=1e-9)


def test_matched_random_table_and_findings(matched):
    test, runs = matched
    ends = evaluate.endpoints(test)
    table = llama_family.matched_random_table(
        runs, ends, paper.LLAMA_FAMILY, paper.LLAMA_FAMILY_ENDPOINTS
    )
    assert list(table["method"]) == ["All-Instruct", "RACER", "RACER", "All-Reasoning"]
    assert table.columns[0] == "method" and table.columns[-1] == "paper_random_cost"
    racer = table[table["method"] == "RACER"].set_index("budget")
    by_budget = runs.groupby("budget")
    np.testing.assert_allclose(racer["accuracy_mean"], by_budget["racer_accuracy"].mean())
    np.testing.assert_allclose(racer["cost_sd"], by_budget["racer_cost"].std())
    np.testing.assert_allclose(
        racer["racer_minus_random_at_cost"],
        racer["accuracy_mean"] - racer["random_at_cost_accuracy_mean"],
    )
    assert tuple(racer.loc[2.0, list(paper.LLAMA_FAMILY_COLUMNS)]) == paper.LLAMA_FAMILY[2.0]
    assert racer.loc[3.0, list(paper.LLAMA_FAMILY_COLUMNS)].tolist() == list(
        paper.LLAMA_FAMILY[3.0]
    )
    top = table.iloc[-1]
    assert top["accuracy_mean"] == ends["All-Reasoning"]["accuracy"]
    assert (top["paper_accuracy"], top["paper_cost"]) == (79.93, 4.12)
    assert np.isnan(top["paper_random_accuracy"])

    findings = llama_family.matched_random_findings(table, "simulated")
    assert list(findings.columns) == ["finding", "holds", "status", "detail", "basis"]
    expected = [
        (racer["racer_minus_random_at_cost"] > 0).all(),
        (
            (racer["accuracy_mean"] >= top["accuracy_mean"])
            & (racer["cost_mean"] < top["cost_mean"])
        ).any(),
        (racer["cost_mean"] <= racer.index).all(),
    ]
    assert list(findings["holds"]) == [bool(e) for e in expected]
    assert list(findings["status"]) == [
        claims.REPRODUCED if e else claims.NOT_REPRODUCED for e in expected
    ]
    forced = table.assign(racer_minus_random_at_cost=-1.0, cost_mean=table["cost_mean"] + 5)
    forced = llama_family.matched_random_findings(forced, "simulated")
    assert list(forced["holds"])[::2] == [False, False]
    assert list(forced["status"])[::2] == [claims.NOT_REPRODUCED] * 2


# ---------------------------------------------------------------------- the figures


def test_the_chapters_figures_draw(ablation, matched):
    _, _, runs = ablation
    test, matched_runs = matched
    table = llama_family.matched_random_table(matched_runs, evaluate.endpoints(test), {}, {})
    beta = beta_sensitivity.beta_table(_beta_runs({0.0: (85, 86), 0.05: (84, 84)}), {})
    figures = [
        robustness_ablation.shift_panels(pd.concat([runs, runs.assign(scenario="(b)")]), 2.0),
        beta_sensitivity.beta_panels(beta),
        llama_family.matched_random_figure(table, "cost", "title"),
    ]
    assert [len(f.axes) for f in figures] == [2, 2, 1]
    assert figures[0].axes[0].get_title() == "(a): training_mix → offsetbias"
    legend = [t.get_text() for t in figures[0].axes[-1].get_legend().get_texts()]
    assert legend[1:] == ["ACER", "RACER-R τ=0.5", "RACER-C τ=0.2"]
    view = llama_family.matched_random_view(table)
    assert list(view.index) == ["All-Instruct", "RACER, C = 2", "RACER, C = 3", "All-Reasoning"]
    assert view.loc["All-Instruct", ("Random, matched cost", "acc.")] == ""
    at2 = table[(table["method"] == "RACER") & (table["budget"] == 2.0)].iloc[0]
    assert view.loc["RACER, C = 2", ("RACER or mode", "cost")] == plots.mean_sd(
        at2["cost_mean"], at2["cost_sd"], 2
    )
    for fig in figures:
        plt.close(fig)
