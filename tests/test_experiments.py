"""racer_lib.paper.experiments: the chapters' sweeps, on small simulated records."""

import numpy as np
import pandas as pd
import pytest
import torch

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import claims, experiments
from racer_lib.paper.chapters import advanced_baselines, budget_frontier
from racer_lib.paper.chapters import training_dynamics as ch06
from racer_lib.records.sets import stratified_split
from racer_lib.records.simulate import simulate
from racer_lib.routing import baselines, train

SETTINGS = train.TrainSettings(epochs=3, lr=1e-3)


@pytest.fixture(scope="module")
def judged(one_thread):
    records, emb = simulate("qwen3-4b", "training_mix", seed=0, dim=8, scale=0.02)
    return records, emb


@pytest.fixture(scope="module")
def fitted(judged):
    records, emb = judged
    configs = experiments.grid([2.0, 4.0], [0, 1], variant="RACER-R")
    return experiments.fit(records, emb, configs, SETTINGS)


@pytest.fixture(scope="module")
def sets(judged):
    records, emb = judged
    return experiments.evaluation_sets(
        "qwen3-4b", records, emb, ("test",), ["judgebench"], seed=0, dim=8, scale=0.1
    )


def test_grid_varies_outer_axes_then_budget_then_seed():
    configs = experiments.grid(
        [2.0, 3.0], [5, 6], outer={"beta": [0.0, 0.05]}, variant="RACER-R", tau_r=0.5
    )
    assert [(c.beta, c.budget, c.seed) for c in configs] == [
        (b, c, s) for b in (0.0, 0.05) for c in (2.0, 3.0) for s in (5, 6)
    ]
    assert {(c.variant, c.tau_r) for c in configs} == {("RACER-R", 0.5)}
    assert experiments.seeds(3, 4) == [3, 4, 5, 6]
    assert experiments.grid([2.0], []) == []


def test_fit_is_one_batched_training_pass(judged, fitted):
    records, emb = judged
    unit, parts = train.splits(records, emb, ("train", "valid"))
    direct = train.train_policies(
        parts["train"], parts["valid"], fitted.result.configs, SETTINGS, unit, progress=False
    )
    pd.testing.assert_frame_equal(direct.history, fitted.result.history)
    assert fitted.unit == unit
    assert (fitted.train.n, fitted.valid.n) == (parts["train"].n, parts["valid"].n)


def test_fit_takes_another_split_per_row(judged):
    records, emb = judged
    labels = np.where(np.arange(len(records)) % 4 == 0, "valid", "train")
    fit = experiments.fit(records, emb, experiments.grid([3.0], [0]), SETTINGS, split=labels)
    assert (fit.train.n, fit.valid.n) == ((labels == "train").sum(), (labels == "valid").sum())
    assert records["split"].nunique() == 3  # the caller's records are left as they were


def test_fit_together_runs_jobs_in_lockstep_and_fits_each_on_its_own_records():
    """Two replicates' jobs: one asks for two fits (the second depends on the first), one for
    one; each round is trained in one pass, every fit is :func:`fit`'s on the job's records
    (to float32 rounding), and a set of another train size is trained apart."""
    settings = train.TrainSettings(arch="linear", epochs=2, lr=1e-2)
    draws = {s: simulate("qwen3-4b", "wildguardmix", seed=s, dim=8, scale=0.05) for s in (1, 2)}
    for s, (records, emb) in draws.items():
        draws[s] = (
            records.assign(split=stratified_split(records["dataset"], s, (0.8, 0.1, 0.1))),
            emb,
        )
    odd = (draws[2][0].iloc[:-10], draws[2][1][:-10])  # fewer train pairs: its own pass
    seen = []

    def job(records, emb, rounds):
        fits = []
        for k in range(rounds):
            fitted = yield records, emb, [train.PolicyConfig(3.0 - k, seed=len(records) + k)]
            seen.append(fitted.result.configs[0].budget)
            fits.append(fitted)
        return fits

    done = experiments.fit_together([job(*draws[1], 2), job(*draws[2], 1), job(*odd, 1)], settings)
    assert [len(d) for d in done] == [2, 1, 1] and seen == [3.0, 3.0, 3.0, 2.0]
    for (records, emb), fits in zip([draws[1], draws[2], odd], done):
        for fitted in fits:
            alone = experiments.fit(records, emb, fitted.result.configs, settings)
            np.testing.assert_allclose(
                fitted.result.p_reasoning(emb), alone.result.p_reasoning(emb), rtol=1e-5, atol=1e-6
            )
            assert fitted.train.n == alone.train.n


def test_evaluation_sets_are_the_splits_then_the_benchmarks(judged, sets):
    records, emb = judged
    assert list(sets) == ["test", "judgebench"]
    test, x = sets["test"]
    assert (test["split"] == "test").all() and len(test) == (records["split"] == "test").sum()
    assert x.shape == (len(test), emb.shape[1])
    bench, xb = sets["judgebench"]
    assert set(bench["dataset"]) == {"judgebench"} and xb.shape == (len(bench), 8)


def test_policy_rows_are_each_policy_on_each_set(fitted, sets):
    result = fitted.result
    rows = pd.DataFrame(
        experiments.policy_rows(
            result,
            sets,
            method="RACER",
            random=("RACER",),
            lead=("judge", "set", "budget", "seed", "method"),
            judge="j",
        )
    )
    assert list(rows.columns[:5]) == ["judge", "set", "budget", "seed", "method"]
    assert len(rows) == 2 * len(sets) * len(result.configs)
    assert list(rows["method"][:4]) == ["RACER", "Random", "RACER", "Random"]
    for name, (recs, emb) in sets.items():
        p = result.p_reasoning(emb)
        mine = rows[(rows["set"] == name) & (rows["method"] == "RACER")]
        for i, (_, row) in enumerate(mine.iterrows()):
            point = evaluate.policy_point(recs, p[i])
            assert (row["accuracy"], row["cost"]) == (point["accuracy"], point["cost"])
            assert (row["budget"], row["seed"]) == (
                result.configs[i].budget,
                result.configs[i].seed,
            )
            assert row["best_epoch"] == result.best_epoch[i]
        rand = rows[(rows["set"] == name) & (rows["method"] == "Random")]
        assert rand["reasoning_rate"].to_numpy() == pytest.approx(mine["reasoning_rate"].to_numpy())
        assert rand["best_epoch"].isna().all()


def test_policy_rows_with_validation_columns_and_a_shorter_lead(fitted, sets):
    test = {"test": sets["test"]}
    rows = experiments.policy_rows(
        fitted.result, test, valid=fitted.valid, lead=("judge", "method", "budget"), judge="j"
    )
    assert list(rows[0]) == [
        "judge",
        "method",
        "budget",
        "accuracy",
        "cost",
        "reasoning_rate",
        "valid_accuracy",
        "valid_cost",
        "valid_rate",
        "best_epoch",
    ]
    assert rows[0]["method"] == "RACER-R"  # the variant labels a policy by default
    p = fitted.result.p_reasoning(fitted.valid.x.numpy())
    acc, cost = train._evaluate(fitted.result.policies, fitted.valid)
    for i, row in enumerate(rows):
        assert row["valid_rate"] == pytest.approx(p[i].mean())
        assert row["valid_accuracy"] == pytest.approx(acc[i], rel=1e-5)
        assert row["valid_cost"] == pytest.approx(cost[i], rel=1e-5)


def test_baseline_rows_match_every_budget_on_validation(fitted, sets):
    budgets, seeds = [2.0, 4.0], [0, 1]
    options = {"RouteLLM-MF": {"epochs": 2}, "M-IRT": {"epochs": 2}, "RouterBench-KNN": {"k": 5}}
    rows = pd.DataFrame(experiments.baseline_rows(fitted, sets, budgets, seeds, options, judge="j"))
    assert len(rows) == len(baselines.METHODS) * len(seeds) * len(sets) * len(budgets)
    assert list(rows.columns[:5]) == ["judge", "set", "method", "budget", "seed"]
    assert (rows["valid_cost"] <= rows["budget"] + 1e-12).all()
    # the KNN is deterministic: one fit serves every seed, so the seeds agree
    knn = rows[rows["method"] == "RouterBench-KNN"].pivot_table(
        index=["set", "budget"], columns="seed", values="accuracy"
    )
    assert knn[0].to_numpy() == pytest.approx(knn[1].to_numpy())
    # a looser budget never gets a smaller validation reasoning rate
    rate = rows.pivot_table(index=["method", "seed", "set"], columns="budget", values="valid_rate")
    assert (rate[4.0] >= rate[2.0]).all()
    # the same threshold, recomputed by hand
    knn = baselines.make("RouterBench-KNN", k=5).fit(
        fitted.train.x.numpy(), fitted.train.r.numpy(), fitted.train.c.numpy()
    )
    th = baselines.match_budget(knn.score(fitted.valid.x.numpy()), fitted.valid.c.numpy(), 2.0)
    recs, emb = sets["judgebench"]
    got = rows[
        (rows["method"] == "RouterBench-KNN")
        & (rows["set"] == "judgebench")
        & (rows["budget"] == 2.0)
    ]
    assert got["accuracy"].to_numpy() == pytest.approx(
        evaluate.policy_point(recs, th.route(knn.score(emb)))["accuracy"]
    )
    assert got["valid_cost"].to_numpy() == pytest.approx(th.valid_cost)


def test_baseline_rows_can_report_the_validation_point(fitted, sets):
    rows = experiments.baseline_rows(
        fitted,
        {"test": sets["test"]},
        [3.0],
        [0],
        {"RouterBench-KNN": {"k": 5}},
        methods=["RouterBench-KNN"],
        valid_point=True,
    )
    (row,) = rows
    assert list(row)[-3:] == ["valid_accuracy", "valid_cost", "valid_rate"]
    assert row["valid_cost"] <= 3.0 + 1e-6


def test_reference_rows_and_the_oracle(sets):
    rows = pd.DataFrame(experiments.reference_rows(sets, oracle=True, judge="j"))
    assert list(rows.columns[:3]) == ["judge", "set", "method"]
    assert list(rows["method"][:3]) == ["All-Instruct", "All-Reasoning", "Oracle"]
    for name, (recs, _) in sets.items():
        got = rows[rows["set"] == name].set_index("method")
        ends = evaluate.endpoints(recs)
        assert got.loc["All-Instruct", "cost"] == pytest.approx(1.0)
        assert got.loc["All-Reasoning", "accuracy"] == ends["All-Reasoning"]["accuracy"]
        frontier = evaluate.oracle_frontier(recs)
        assert got.loc["Oracle", "accuracy"] == frontier["accuracy"].max()
        assert got.loc["Oracle", "accuracy"] >= got.loc["All-Reasoning", "accuracy"]


def test_thinned_frontier_keeps_both_ends(sets):
    recs, _ = sets["test"]
    full = evaluate.oracle_frontier(recs)
    thin = budget_frontier.thinned_frontier(recs, points=10, set="test")
    assert len(thin) <= 10 and set(thin["set"]) == {"test"}
    assert thin.iloc[[0, -1]][["cost", "accuracy"]].to_numpy() == pytest.approx(
        full.iloc[[0, -1]].to_numpy()
    )
    assert thin["cost"].is_monotonic_increasing


def _toy_runs():
    """Two methods, two budgets, two seeds, two sets, with known accuracies and costs."""
    rows = []
    for s_i, name in enumerate(["test", "b1"]):
        for method, base in (("RACER", 80.0), ("M-IRT", 70.0)):
            for budget in (2.0, 4.0):
                for seed in (0, 1):
                    rows.append(
                        {
                            "judge": "j",
                            "set": name,
                            "method": method,
                            "budget": budget,
                            "seed": seed,
                            "accuracy": base + budget + seed + 10 * s_i,
                            "cost": budget - 0.5 + s_i,
                            "reasoning_rate": budget / 10,
                        }
                    )
    return pd.DataFrame(rows)


def test_set_mean_weighs_every_set_alike():
    runs = _toy_runs()
    extra = runs[runs["set"] == "b1"].assign(seed=2)  # one set with more seeds
    got = advanced_baselines.set_mean(
        pd.concat([runs, extra]), ["test", "b1"], ["method", "budget"]
    )
    racer = got[(got["method"] == "RACER") & (got["budget"] == 2.0)].iloc[0]
    assert racer["accuracy"] == pytest.approx((82.5 + 92.5) / 2)
    assert racer["cost"] == pytest.approx((1.5 + 2.5) / 2)


def test_shifted_table_and_its_findings():
    runs = _toy_runs()
    paper = {("RACER", "j"): (90.0, 3.9)}
    table = advanced_baselines.shifted_table(
        runs, 4.0, ["test", "b1"], paper, ["j"], ["M-IRT", "RACER"]
    )
    assert list(table["method"]) == ["M-IRT", "RACER"]
    racer = table.iloc[1]
    assert racer["accuracy"] == pytest.approx(89.5)  # sets 84.5 and 94.5
    assert racer["accuracy_sd"] == pytest.approx(np.std([89.0, 90.0], ddof=1))
    assert (racer["paper_accuracy"], racer["paper_cost"]) == (90.0, 3.9)
    assert np.isnan(table.iloc[0]["paper_accuracy"]) and racer["seeds"] == 2


def _seeded_runs(leads, n_seeds=10):
    """RACER and baselines on two benchmarks at C = 4 (and RACER alone at C = 2), RACER ahead
    of each baseline by ``leads[baseline]`` points on every seed's records, plus noise."""
    rng = np.random.default_rng(5)
    rows = []
    for seed in range(n_seeds):
        for name in ("b1", "b2"):
            base = 80.0 + rng.normal(0, 1)  # the seed's records: shared by every method
            for method, lead in (("RACER", 0.0), *leads.items()):
                acc = base - lead + rng.normal(0, 0.2)
                rows.append(
                    {
                        "judge": "j",
                        "set": name,
                        "method": method,
                        "budget": 4.0,
                        "seed": seed,
                        "accuracy": acc,
                        "cost": 3.9,
                    }
                )
            rows.append(
                {
                    "judge": "j",
                    "set": name,
                    "method": "RACER",
                    "budget": 2.0,
                    "seed": seed,
                    "accuracy": 0.0,
                    "cost": 1.9,
                }
            )
    return pd.DataFrame(rows)


def test_most_accurate_is_one_finding_over_judges_and_baselines():
    runs = _seeded_runs({"M-IRT": 1.0, "RouteLLM-MF": 2.0})
    findings, members = advanced_baselines.most_accurate(runs, 4.0, ["b1", "b2"], "simulated")
    assert len(findings) == 1 and findings["finding"][0].startswith("RACER is the most accurate")
    assert findings["decision"][0] == "holds" and findings["n"][0] == 10
    # trained routers are not an input of the simulator: evidence even on simulated records
    assert findings["status"][0] == claims.REPRODUCED
    assert list(members["member"]) == ["j, M-IRT", "j, RouteLLM-MF"]
    assert members["effect"].to_numpy() == pytest.approx([1.0, 2.0], abs=0.2)
    # one baseline ahead: every member must hold, so the finding fails
    behind = _seeded_runs({"M-IRT": 1.0, "RouteLLM-MF": -2.0})
    findings, _ = advanced_baselines.most_accurate(behind, 4.0, ["b1", "b2"], "simulated")
    assert findings["decision"][0] == "fails" and findings["status"][0] == claims.NOT_REPRODUCED
    # two seeds decide nothing
    few = _seeded_runs({"M-IRT": 1.0}, n_seeds=2)
    findings, _ = advanced_baselines.most_accurate(few, 4.0, ["b1", "b2"], "simulated")
    assert findings["status"][0] == claims.INCONCLUSIVE


def test_budget_matching_reads_the_thresholds():
    runs = _toy_runs().assign(
        provenance="simulated",
        valid_rate=0.3,
        valid_cost=lambda t: t["budget"] - 0.1 * (t["seed"] == 1),
    )
    runs.loc[0, "valid_cost"] = 9.0  # RACER rows are not baselines and are left out
    match = advanced_baselines.budget_matching(runs)
    assert set(match["method"]) == {"M-IRT"} and len(match) == 4
    assert match["within_budget"].all()
    runs.loc[runs["method"] == "M-IRT", "valid_cost"] = 5.0
    assert not advanced_baselines.budget_matching(runs)["within_budget"].any()


def test_curve_metrics_and_their_summary(sets):
    recs, _ = sets["test"]
    ends = evaluate.endpoints(recs)
    mid = {
        k: (ends["All-Instruct"][k] + ends["All-Reasoning"][k]) / 2
        for k in ("accuracy", "cost", "reasoning_rate")
    }
    runs = pd.DataFrame(
        [
            {"set": s, "method": m, "seed": 0, **mid}
            for s in ("test", "other")
            for m in ("Random", "RACER")
        ]
    )
    both = {"test": sets["test"], "other": sets["test"]}
    metrics = pd.DataFrame(advanced_baselines.curve_metrics(runs, both, judge="j"))
    assert list(metrics.columns[:4]) == ["judge", "set", "method", "seed"]
    assert metrics["apgr"].to_numpy() == pytest.approx(0.5)  # a point on the chord is Random
    summary = advanced_baselines.metric_summary(metrics, ["other"], ["j"], ["RACER", "Random"])
    assert summary[("OOD mean", "apgr")].to_numpy() == pytest.approx(0.5)
    assert summary[("test", "auc")].to_numpy() == pytest.approx(
        (ends["All-Instruct"]["accuracy"] + ends["All-Reasoning"]["accuracy"]) / 2
    )


def test_gap_to_random_of_points_on_the_chord(sets):
    recs, _ = sets["test"]
    ends = evaluate.endpoints(recs)
    rows = []
    for budget, q in ((2.0, 0.25), (3.0, 0.5)):
        rand = evaluate.random_point(recs, q)
        rows += [
            {"method": "RACER", "budget": budget, **rand, "accuracy": rand["accuracy"] + 2.0},
            {"method": "Random", "budget": budget, **rand},
        ]
    gap = budget_frontier.gap_to_random(pd.DataFrame(rows), recs, set="test")
    width = evaluate.random_point(recs, 0.5)["cost"] - evaluate.random_point(recs, 0.25)["cost"]
    assert gap["area_above_random"] == pytest.approx(2.0 * width)
    assert (gap["mean_gap_points"], gap["min_gap_points"]) == pytest.approx((2.0, 2.0))
    assert gap["cost_low"] < gap["cost_high"] <= ends["All-Reasoning"]["cost"]


def test_selected_checkpoints_and_training_summary(fitted):
    result = fitted.result
    selected = ch06.selected_checkpoints(result)
    assert list(selected["best_epoch"]) == result.best_epoch
    h = result.history
    for _, row in selected.iterrows():
        at = h[
            (h["budget"] == row["budget"])
            & (h["seed"] == row["seed"])
            & (h["epoch"] == row["best_epoch"])
        ]
        assert row["valid_cost"] == at["valid_cost"].item()
    summary = ch06.training_summary(h)
    assert list(summary["budget"]) == [2.0, 4.0]
    last = h[(h["epoch"] == SETTINGS.epochs) & (h["budget"] == 4.0)]
    row = summary.set_index("budget").loc[4.0]
    assert row["final_lambda"] == pytest.approx(last["lambda"].mean())
    assert row["final_cost_minus_budget"] == pytest.approx(last["train_cost"].mean() - 4.0)
    assert row["max_lambda_any_epoch"] >= row["final_lambda"]


def test_expected_is_one_definition_for_numpy_and_torch():
    r = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    p = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.5, 0.5, 0.0]])
    assert evaluate.expected(p, r) == pytest.approx([2 / 3, 2 / 3, 2 / 3])
    assert evaluate.expected(torch.tensor(p), torch.tensor(r)).numpy() == pytest.approx(
        evaluate.expected(p, r)
    )
    c = np.array([[1.0, 4.0], [2.0, 2.0], [1.0, 7.0]])
    point = evaluate.split_point(r, c, [1.0, 0.0, 0.5])
    assert point == pytest.approx(
        {"accuracy": 100 * (0 + 0 + 1) / 3, "cost": (4 + 2 + 4) / 3, "reasoning_rate": 0.5}
    )
