"""The library pieces of the LLMBar routing chapter (12), on small simulated records: the
stratified split per seed, the sweep rows it writes (``experiments.fit`` on a split label,
``policy_rows``, ``baseline_rows``, ``reference_rows`` with its leading columns), the training
check, the findings, and the two tables and the figure of ``plots``."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import claims, experiments
from racer_lib.paper.chapters import llmbar_judges as ch13
from racer_lib.paper.chapters import llmbar_routing as ch14
from racer_lib.records import sets
from racer_lib.records.simulate import simulate  # noqa: E402
from racer_lib.routing import (
    baselines,
    train,  # noqa: E402
)

JUDGE = "qwen3-4b"
LEAD = ("judge", "seed", "unit_tokens", "method", "budget")
BUDGETS = [2.0, 4.0]
SEED = 3


# ----------------------------------------------------------------------------------------
# The split


def test_cut_points_round_half_up_and_cover_every_row():
    assert sets.cut_points(10, [0.6, 0.2, 0.2]) == [6, 8]
    assert sets.cut_points(5, [0.5, 0.5]) == [3]  # 2.5 rounds up (numpy's round gives 2)
    assert sets.cut_points(85, [0.6, 0.2, 0.2]) == [51, 68]
    for n in range(0, 40):
        cuts = sets.cut_points(n, [0.6, 0.2, 0.2])
        sizes = np.diff([0, *cuts, n])
        assert (sizes >= 0).all() and sizes.sum() == n
        assert np.abs(np.array(cuts) - np.array([0.6, 0.8]) * n).max() <= 0.5 + 1e-9
        assert np.abs(sizes - np.array([0.6, 0.2, 0.2]) * n).max() <= 1


def test_stratified_split_is_the_stated_rule():
    """One generator seeded with the seed; per group in order: shuffle, cut by the shares."""
    groups = np.array(["b"] * 7 + ["a"] * 10 + ["b"] * 3)
    labels = sets.stratified_split(groups, 5, [0.6, 0.2, 0.2], order=["a", "b"])
    rng = np.random.default_rng(5)
    a = rng.permutation(np.flatnonzero(groups == "a"))  # "a" first: it comes first in order
    b = rng.permutation(np.flatnonzero(groups == "b"))
    assert set(labels[a[:6]]) == {"train"} and set(labels[a[6:8]]) == {"valid"}
    assert set(labels[a[8:]]) == {"test"}
    assert set(labels[b[:6]]) == {"train"} and set(labels[b[6:8]]) == {"valid"}
    assert set(labels[b[8:]]) == {"test"}
    # the order of the groups is part of the rule: another order draws another split
    other = sets.stratified_split(groups, 5, [0.6, 0.2, 0.2], order=["b", "a"])
    assert (other != labels).any()
    # by default the groups are visited sorted
    assert (sets.stratified_split(groups, 5, [0.6, 0.2, 0.2]) == labels).all()


def test_stratified_split_per_seed_and_proportions():
    records, _ = simulate(JUDGE, "judgebench", seed=0, dim=8, scale=0.3)
    groups = records["domain"]
    first = sets.stratified_split(groups, 0, [0.6, 0.2, 0.2])
    assert (sets.stratified_split(groups, 0, [0.6, 0.2, 0.2]) == first).all()
    second = sets.stratified_split(groups, 1, [0.6, 0.2, 0.2])
    assert (second != first).any(), "each seed draws its own split"
    for labels in (first, second):
        for group in groups.unique():
            cell = labels[(groups == group).to_numpy()]
            cuts = sets.cut_points(len(cell), [0.6, 0.2, 0.2])
            want = np.diff([0, *cuts, len(cell)])
            got = [int((cell == name).sum()) for name in sets.SPLITS]
            assert got == list(want), group


def test_test_groups_are_all_test_and_draw_nothing():
    groups = np.array(["x"] * 12 + ["y"] * 9 + ["z"] * 8)
    labels = sets.stratified_split(
        groups, 2, [0.75, 0.25], order=["x", "y", "z"], test_groups=["y"]
    )
    assert set(labels[groups == "y"]) == {"test"}
    for g in ("x", "z"):
        cell = labels[groups == g]
        assert set(cell) == {"train", "valid"}
        assert (cell == "valid").sum() == len(cell) - sets.cut_points(len(cell), [0.75, 0.25])[0]
    # "y" draws no random numbers: "z" is split as if "y" were not there
    keep = groups != "y"
    alone = sets.stratified_split(groups[keep], 2, [0.75, 0.25], order=["x", "z"])
    assert (alone == labels[keep]).all()


def test_stratified_split_refuses_unknown_groups_and_bad_shares():
    with pytest.raises(ValueError, match="not in the split order"):
        sets.stratified_split(["a", "c"], 0, [0.5, 0.5], order=["a", "b"])
    with pytest.raises(ValueError, match="two or three shares"):
        sets.stratified_split(["a", "b"], 0, [1.0])


def test_split_rule_checks_and_translates_the_settings():
    order = ["natural", "neighbor", "gptinst", "gptout", "manual"]
    assert sets.split_rule("random", [0.6, 0.2, 0.2], [], order) == ([0.6, 0.2, 0.2], [])
    shares, test = sets.split_rule("subset", None, ["natural", "gptinst"], order, 0.25)
    assert shares == [0.75, 0.25] and test == ["neighbor", "gptout", "manual"]
    with pytest.raises(ValueError, match="split_by must be random or subset"):
        sets.split_rule("domain", [0.6, 0.2, 0.2], [], order)
    for bad in ([0.5, 0.5], [0.6, 0.3, 0.2], [0.8, 0.2, 0.0]):
        with pytest.raises(ValueError, match="split_shares must be three positive shares"):
            sets.split_rule("random", bad, [], order)
    for bad in ([], order, ["natural", "other"]):
        with pytest.raises(ValueError, match="train_subsets must be a non-empty proper subset"):
            sets.split_rule("subset", None, bad, order)


# ----------------------------------------------------------------------------------------
# One judge and one seed, as the chapter runs it


@pytest.fixture(scope="module")
def run(one_thread):
    """The chapter's loop body on 186 simulated pairs: a stratified split, ACER and RACER at
    two budgets, the baselines, the references and the training check."""
    records, emb = simulate(JUDGE, "judgebench", seed=0, dim=8, scale=0.3)
    split = sets.stratified_split(records["domain"], SEED, [0.6, 0.2, 0.2])
    configs = experiments.grid(BUDGETS, [SEED], outer={"variant": ("ACER", "RACER")})
    settings = train.TrainSettings(epochs=4, lr=1e-3)
    fit = experiments.fit(records, emb, configs, settings, split=split)
    is_test = split == "test"
    test = {"test": (records[is_test], emb[is_test])}
    key = {"judge": JUDGE, "seed": SEED, "unit_tokens": fit.unit.tokens_per_unit}
    policies = experiments.policy_rows(
        fit.result, test, random=("RACER",), valid=fit.valid, lead=LEAD, **key
    )
    options = {"RouteLLM-MF": {"epochs": 2}, "M-IRT": {"epochs": 2}}
    base = experiments.baseline_rows(
        fit, test, BUDGETS, [SEED], options, valid_point=True, lead=LEAD, **key
    )
    ends = experiments.reference_rows(test, oracle=True, lead=LEAD[:4], **key)
    checks = ch14.training_check(fit.result, emb[is_test], judge=JUDGE)
    return dict(
        records=records,
        emb=emb,
        split=split,
        fit=fit,
        test=test,
        policies=policies,
        base=base,
        ends=ends,
        checks=checks,
    )


def test_fit_trains_on_the_given_split_labels(run):
    fit, split, records = run["fit"], run["split"], run["records"]
    assert fit.train.n == (split == "train").sum() and fit.valid.n == (split == "valid").sum()
    want = records.loc[split == "train", "tokens_instruct"].mean()
    assert np.isclose(fit.unit.tokens_per_unit, want)
    assert "split" in records and set(records["split"]) == {"ood"}, "records left unchanged"


def test_policy_rows_lead_random_and_validation(run):
    rows, fit = run["policies"], run["fit"]
    methods = [r["method"] for r in rows]
    assert methods == ["ACER", "ACER", "RACER", "Random", "RACER", "Random"]
    assert list(rows[0]) == [
        *LEAD,
        "accuracy",
        "cost",
        "reasoning_rate",
        "valid_accuracy",
        "valid_cost",
        "valid_rate",
        "best_epoch",
    ]
    assert list(rows[3]) == [*LEAD, "accuracy", "cost", "reasoning_rate"]  # Random
    assert [r["budget"] for r in rows] == [2.0, 4.0, 2.0, 2.0, 4.0, 4.0]
    assert all(r["seed"] == SEED and r["judge"] == JUDGE for r in rows)
    recs, emb = run["test"]["test"]
    p_test = fit.result.p_reasoning(emb)
    p_valid = fit.result.p_reasoning(fit.valid.x.numpy())
    trained = [r for r in rows if r["method"] != "Random"]
    for i, row in enumerate(trained):
        assert row["best_epoch"] == fit.result.best_epoch[i]
        assert row["accuracy"] == evaluate.policy_point(recs, p_test[i])["accuracy"]
        point = evaluate.split_point(fit.valid.r.numpy(), fit.valid.c.numpy(), p_valid[i])
        assert (row["valid_accuracy"], row["valid_cost"], row["valid_rate"]) == (
            point["accuracy"],
            point["cost"],
            point["reasoning_rate"],
        )
    for racer, rand in zip(rows[2::2], rows[3::2], strict=True):
        assert rand["reasoning_rate"] == pytest.approx(racer["reasoning_rate"])
        assert rand == {**rand, **evaluate.random_point(recs, racer["reasoning_rate"])}


def test_baseline_rows_meet_the_budget_on_validation(run):
    rows, fit = run["base"], run["fit"]
    assert [(r["method"], r["budget"]) for r in rows] == [
        (m, b) for m in baselines.METHODS for b in BUDGETS
    ]
    assert list(rows[0]) == [
        *LEAD,
        "accuracy",
        "cost",
        "reasoning_rate",
        "valid_accuracy",
        "valid_cost",
        "valid_rate",
    ]
    for row in rows:
        assert row["valid_cost"] <= row["budget"] + 1e-9
        assert 0 <= row["valid_rate"] <= 1 and 0 <= row["reasoning_rate"] <= 1
    # the deterministic KNN, refitted and matched by hand
    knn = baselines.make("RouterBench-KNN", seed=SEED)
    knn.fit(fit.train.x.numpy(), fit.train.r.numpy(), fit.train.c.numpy())
    valid_scores = knn.score(fit.valid.x.numpy())
    recs, emb = run["test"]["test"]
    for row in (r for r in rows if r["method"] == "RouterBench-KNN"):
        th = baselines.match_budget(valid_scores, fit.valid.c.numpy(), row["budget"])
        assert np.isclose(row["valid_cost"], th.valid_cost)
        assert row["accuracy"] == evaluate.policy_point(recs, th.route(knn.score(emb)))["accuracy"]


def test_reference_rows_with_the_chapter_lead(run):
    ends = run["ends"]
    recs = run["test"]["test"][0]
    assert [r["method"] for r in ends] == ["All-Instruct", "All-Reasoning", "Oracle"]
    assert list(ends[0]) == [*LEAD[:4], "accuracy", "cost", "reasoning_rate"]
    assert ends[0]["cost"] == 1.0 and ends[0]["reasoning_rate"] == 0.0
    r = recs[["correct_instruct", "correct_reasoning"]].to_numpy(bool)
    assert np.isclose(ends[2]["accuracy"], 100 * (r[:, 0] | r[:, 1]).mean())
    assert np.isnan(ends[2]["reasoning_rate"])
    assert 0 < ends[2]["cost"] <= ends[1]["cost"]


# ----------------------------------------------------------------------------------------
# The training check


def test_training_check_reads_the_history(run):
    checks, fit = run["checks"], run["fit"]
    result = fit.result
    assert len(checks) == len(result.configs)
    assert list(checks[0])[:5] == ["judge", "seed", "method", "budget", "best_epoch"]
    p_test = result.p_reasoning(run["test"]["test"][1])
    trained = [r for r in run["policies"] if r["method"] != "Random"]
    for i, (row, cfg) in enumerate(zip(checks, result.configs, strict=True)):
        h = result.history[result.history["policy"] == i]
        assert (row["judge"], row["seed"], row["method"], row["budget"]) == (
            JUDGE,
            SEED,
            cfg.variant,
            cfg.budget,
        )
        assert row["best_epoch"] == result.best_epoch[i]
        assert row["valid_accuracy_epoch1"] == h["valid_accuracy"].iloc[0]
        assert row["valid_accuracy_min"] <= row["valid_accuracy_best"] <= row["valid_accuracy_max"]
        assert row["lambda_max"] == h["lambda"].max() >= 0
        assert row["p_test_sd"] == pytest.approx(float(np.std(p_test[i])))
        # the selected checkpoint is the one the rows evaluate
        assert row["valid_cost_best"] == pytest.approx(trained[i]["valid_cost"], rel=1e-4)
        assert row["valid_accuracy_best"] == pytest.approx(trained[i]["valid_accuracy"], rel=1e-4)
    assert ch14.training_check(result, run["emb"][:5], method="X")[0]["method"] == "X"


def test_training_check_summary():
    checks = pd.DataFrame(
        {
            "judge": "J",
            "method": ["RACER"] * 4,
            "seed": [0, 0, 1, 1],
            "budget": [2.0, 5.0] * 2,
            "valid_accuracy_epoch1": 80.0,
            "valid_accuracy_best": 81.0,
            "valid_accuracy_min": [80.0, 79.0, 80.0, 80.0],
            "valid_accuracy_max": [82.0, 82.0, 81.0, 80.0],
            "valid_cost_epoch1": 9.0,
            "valid_cost_best": [1.5, 4.0, 3.0, 2.5],
            "best_epoch": [3, 4, 5, 6],
            "lambda_max": 0.1,
            "p_test_sd": 0.2,
        }
    )
    view, reading = ch14.training_check_summary(checks)
    assert list(view.index) == [("J", "RACER", 2.0), ("J", "RACER", 5.0)]
    assert view.loc[("J", "RACER", 2.0), "valid_cost_best"] == 2.25
    assert view.loc[("J", "RACER", 5.0), "best_epoch"] == 5.0
    # moved: 2, 3, 1, 0 -> median 1.5; within budget: 3 of 4; grows: seed 0 yes, seed 1 no
    assert reading.to_dict("records") == [
        {
            "moved_points": 1.5,
            "within_budget": 75.0,
            "grows_with_budget": 50.0,
            "runs": "judge, method, seed",
        }
    ]


# ----------------------------------------------------------------------------------------
# The findings


def _runs(acc):
    """Runs of one judge: ``acc[method]`` is a list per budget of a list per seed."""
    rows = []
    for method, by_budget in acc.items():
        for b, per_seed in zip(BUDGETS, by_budget, strict=True):
            for s, a in enumerate(per_seed):
                rows.append(
                    {
                        "judge": "J",
                        "method": method,
                        "budget": b,
                        "seed": s,
                        "accuracy": a,
                        "cost": b / 2,
                        "reasoning_rate": 0.1,
                    }
                )
    return pd.DataFrame(rows)


def _ten(base, step=0.0, spread=0.2):
    """Ten seeds' accuracies around ``base`` (a fixed alternating wobble of ``spread``)."""
    return [base + step + spread * (-1) ** s * (1 + s % 3) / 3 for s in range(10)]


def _findings(runs, **kw):
    summary = evaluate.over_seeds(runs, ["judge", "method", "budget"])
    return ch14.routing_findings(runs, summary, ["J"], BUDGETS, "release", **kw)


def test_routing_findings_decide_each_statement_over_seeds():
    """Planted per-seed differences: RACER 3 pts over Random at both budgets (above the SESOI
    of a gain over Random, 1.9 pts: holds), level
    with ACER (non-inferior within the margin: holds), behind the best baseline by 2 pts at
    C=2 (fails) and ahead of it at C=4 (holds)."""
    runs = _runs(
        {
            "RACER": [_ten(80), _ten(85)],
            "Random": [_ten(77), _ten(82)],
            "ACER": [_ten(80), _ten(85)],
            "RouterBench-KNN": [_ten(82), _ten(80)],
            "RouteLLM-MF": [_ten(70), _ten(70)],
            "M-IRT": [_ten(70), _ten(70)],
        }
    )
    findings = _findings(runs)
    assert findings["finding"].tolist() == [
        "J: RACER is more accurate than Random at every budget",
        "J: RACER is at least as accurate as ACER on average",
        "J: at C=2, RACER is at least as accurate as the best baseline",
        "J: at C=4, RACER is at least as accurate as the best baseline",
    ]
    assert list(findings.columns[:5]) == ["judge", "budget", "claim", "finding", "observed"]
    assert set(claims.VERDICT_COLUMNS) <= set(findings.columns)
    assert findings["decision"].tolist() == ["holds", "holds", "fails", "holds"]
    assert findings["status"].tolist() == [
        claims.REPRODUCED,
        claims.REPRODUCED,
        claims.NOT_REPRODUCED,
        claims.REPRODUCED,
    ]
    assert np.allclose(findings["effect"], [3.0, 0.0, -2.0, 5.0])
    assert (findings["n"] == 10).all()
    assert findings["test"][0].startswith(
        "every one of 2 (intersection-union): one-sided t and bootstrap-t (> 1.925)"
    )
    assert findings["test"][1] == (
        f"one-sided t and bootstrap-t (> {-ch14.AT_LEAST_AS_ACCURATE_POINTS:g})"
    )
    assert "best baseline RouterBench-KNN 82.0" in findings["observed"][2]
    assert "ahead in 10 of 10 seeds" in findings["observed"][0]
    # nothing about trained routers is given to a simulator: the same statuses on its records
    summary = evaluate.over_seeds(runs, ["judge", "method", "budget"])
    sim = ch14.routing_findings(runs, summary, ["J"], BUDGETS, "simulated")
    assert sim["status"].tolist() == findings["status"].tolist()


def test_routing_findings_with_too_few_seeds_are_inconclusive():
    runs = _runs(
        {
            "RACER": [[80, 82], [85, 85]],
            "Random": [[79, 81], [85, 86]],
            "ACER": [[81, 81], [84, 84]],
            "RouterBench-KNN": [[79, 79], [86, 86]],
            "RouteLLM-MF": [[70, 70], [70, 70]],
            "M-IRT": [[70, 70], [70, 70]],
        }
    )
    findings = _findings(runs)
    assert set(findings["decision"]) == {"inconclusive"}
    assert set(findings["status"]) == {claims.INCONCLUSIVE}
    assert findings["note"].str.contains("too few seeds").all()
    # the same runs decided as if two seeds sufficed: the protocol's minimum is what stops them
    decided = _findings(runs, min_n=2)
    assert "holds" in set(decided["decision"]) or "fails" in set(decided["decision"])


def test_the_non_inferiority_margin_decides_at_least_as_accurate():
    """RACER 0.2 pt behind ACER on every seed: within the margin (holds); 1 pt behind: fails."""
    base = {
        "Random": [_ten(70), _ten(70)],
        "RouterBench-KNN": [_ten(60), _ten(60)],
        "RouteLLM-MF": [_ten(60), _ten(60)],
        "M-IRT": [_ten(60), _ten(60)],
        "ACER": [_ten(80), _ten(80)],
    }
    close = _findings(_runs({**base, "RACER": [_ten(80, -0.2), _ten(80, -0.2)]}))
    far = _findings(_runs({**base, "RACER": [_ten(80, -1.0), _ten(80, -1.0)]}))
    assert close["decision"][1] == "holds" and far["decision"][1] == "fails"


# ----------------------------------------------------------------------------------------
# Chapter 13: exact tests over the pairs of a fixed release


def test_exact_share_is_the_exact_binomial_test():
    from scipy.stats import binomtest

    v = ch13.exact_share(30, 40, 1, 419, "t")
    assert v.p == pytest.approx(binomtest(30, 40, 0.5, alternative="greater").pvalue)
    assert v.p_other == pytest.approx(binomtest(30, 40, 0.5, alternative="less").pvalue)
    assert v.decision == "holds" and v.n == 419 and v.lo < 0.75 < v.hi
    assert ch13.exact_share(30, 40, -1, 419, "t").decision == "fails"
    assert ch13.exact_share(21, 40, 1, 419, "t").decision == "inconclusive"
    none = ch13.exact_share(0, 0, 1, 419, "t")
    assert none.decision == "inconclusive" and none.p == 1.0


def test_mcnemar_reads_the_discordant_pairs_and_gives_delta_accuracy():
    row = {"n": 200, "only_reasoning": 30, "only_instruct": 10}
    up = ch13.mcnemar(row, 1)
    assert up.effect == pytest.approx(100 * (30 - 10) / 200)
    assert up.lo < up.effect < up.hi and up.decision == "holds"
    assert "exact McNemar over 200 pairs (CoT > Vanilla)" == up.test
    down = ch13.mcnemar(row, -1)
    assert down.decision == "fails" and down.p == pytest.approx(up.p_other)


def test_some_and_every_over_judges():
    """ "At least one" holds when one member survives Holm; "every" needs all of them."""
    strong = ch13.mcnemar({"n": 400, "only_reasoning": 5, "only_instruct": 40}, -1)
    weak = ch13.mcnemar({"n": 400, "only_reasoning": 20, "only_instruct": 22}, -1)
    some = ch13.some({"a": strong, "b": weak})
    assert some.decision == "holds" and "strongest a" in some.note
    assert some.test.startswith("Holm over 2, any: exact McNemar")
    better = ch13.mcnemar({"n": 400, "only_reasoning": 40, "only_instruct": 5}, -1)
    assert ch13.some({"a": better, "b": better}).decision == "fails"
    assert ch13.some({"a": weak, "b": weak}).decision == "inconclusive"
    from racer_lib.evaluation import verdicts

    assert verdicts.every({"a": strong, "b": weak}).decision == "inconclusive"


def test_fig2_reading_decides_four_findings_over_the_pairs():
    by_judge = pd.DataFrame(
        {
            "judge": ["A", "B"],
            "n": [300, 300],
            "only_reasoning": [40, 10],
            "only_instruct": [10, 40],
            "delta_accuracy": [10.0, -10.0],
        }
    )
    by_subset = pd.DataFrame(
        {
            "judge": ["A", "B"],
            "subset": ["s", "s"],
            "n": [300, 300],
            "only_reasoning": [40, 10],
            "only_instruct": [10, 40],
            "delta_accuracy": [10.0, -10.0],
        }
    )
    agreement = by_judge.assign(share_one_mode_right=50 / 300)
    found = ch13.fig2_reading(by_judge, by_subset, agreement, "release")
    assert found["finding"].tolist() == [ch13.LOWERS, ch13.CELL_LE0, ch13.MINORITY, ch13.IMPROVES]
    # B loses (some judge, some cell), both agree on most pairs, A gains but B is shown behind
    assert found["decision"].tolist() == ["holds", "holds", "holds", "fails"]
    assert found["status"].tolist() == [claims.REPRODUCED] * 3 + [claims.NOT_REPRODUCED]
    assert found["test"][3] == (
        "every one of 2 (intersection-union): exact McNemar over 300 pairs (CoT > Vanilla)"
    )
    # on simulated records the first three are given to the simulator (by construction)
    sim = ch13.fig2_reading(by_judge, by_subset, agreement, "simulated")
    assert sim["status"].tolist() == [claims.BY_CONSTRUCTION] * 3 + [claims.NOT_REPRODUCED]
    tests = ch13.cot_tests(by_judge)
    assert tests["shown"].tolist() == ["more accurate", "less accurate"]
    assert (tests["p_improves_holm"] >= tests["p_improves"]).all()


# ----------------------------------------------------------------------------------------
# Tables and figure


def test_mean_sd_by_budget():
    summary = pd.DataFrame(
        {
            "judge": "J",
            "method": ["A", "A", "B", "B"],
            "budget": [2.0, 10.0] * 2,
            "accuracy_mean": [80.0, 81.25, 70.0, 71.0],
            "accuracy_sd": [1.0, np.nan, 0.5, 0.25],
            "cost_mean": [1.5, 8.0, 2.0, 9.0],
            "cost_sd": [0.1, 0.2, 0.3, 0.4],
        }
    )
    view = ch14.mean_sd_by_budget(summary, ["judge", "method"], [10.0, 2.0])
    assert list(view.columns) == ["C=10 acc", "C=10 cost", "C=2 acc", "C=2 cost"]
    assert view.loc[("J", "A"), "C=2 acc"] == "80.0 ± 1.0"
    assert view.loc[("J", "A"), "C=10 acc"] == "81.2"  # one seed: no sd
    assert view.loc[("J", "B"), "C=10 cost"] == "9.0 ± 0.4"
    two = ch14.mean_sd_by_budget(summary, ["method"], [2.0], [("a", "accuracy")], digits=2)
    assert list(two.columns) == ["C=2 a"] and two.loc["B", "C=2 a"] == "70.00 ± 0.50"


@pytest.mark.parametrize("judges", [["J1"], ["J1", "J2", "J3"]])
def test_accuracy_and_gain_draws_both_rows(judges):
    runs, ends, frontiers = [], [], []
    for j in judges:
        for s in (0, 1):
            base = 80.0 + s
            ends += [
                {"judge": j, "seed": s, "method": "All-Instruct", "accuracy": base, "cost": 1.0},
                {
                    "judge": j,
                    "seed": s,
                    "method": "All-Reasoning",
                    "accuracy": base + 4,
                    "cost": 20.0,
                },
            ]
            frontiers.append(
                pd.DataFrame(
                    {"cost": [1.0, 3.0], "accuracy": [base, base + 6], "judge": j, "seed": s}
                )
            )
            for method in ("RACER", "Random"):
                for b in BUDGETS:
                    runs.append(
                        {
                            "judge": j,
                            "method": method,
                            "budget": b,
                            "seed": s,
                            "accuracy": base + b / 2,
                            "cost": b,
                            "reasoning_rate": 0.1,
                            "instruct_accuracy": base,
                        }
                    )
    runs, ends = pd.DataFrame(runs), pd.DataFrame(ends)
    summary = evaluate.over_seeds(runs, ["judge", "method", "budget"])
    fig = ch14.accuracy_and_gain(
        summary, runs, ends, pd.concat(frontiers), judges, ["RACER", "Random"]
    )
    axes = np.array(fig.axes).reshape(2, len(judges))
    assert [ax.get_title() for ax in axes[0]] == judges
    top, bottom = axes[0][0], axes[1][0]
    # top: accuracies; bottom: gains over each seed's All-Instruct (2 and 1 points for RACER)
    assert top.get_ylim()[0] < 80.5 + 1 and top.get_ylim()[1] >= 86.5
    racer = [c for c in bottom.containers if c.get_label() == "RACER"][0]
    assert np.allclose(racer.lines[0].get_ydata(), [1.0, 2.0])
    oracle = [ln for ln in bottom.lines if ln.get_label() == "oracle frontier"][0]
    assert np.isclose(oracle.get_ydata().max(), 6.0)
    assert top.get_xlim() == pytest.approx((0, 20.0 * 1.04))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["oracle frontier", "All-Instruct", "All-Reasoning", "RACER", "Random"]
    plt.close(fig)


def test_chapter_14_split_table_and_sizes_per_seed():
    pairs = pd.DataFrame(
        {"id": ["a", "b", "c", "d"], "subset": ["natural", "natural", "manual", "manual"]}
    )
    splits = {0: np.array(["train", "test", "train", "valid"]), 1: np.array(["test"] * 4)}
    table = ch14.split_table(pairs, splits)
    assert list(table.columns) == ["seed", "id", "subset", "split"] and len(table) == 8
    sizes = ch14.split_sizes(table, 0)
    assert list(sizes.columns) == ["train", "valid", "test"]
    assert sizes.loc["natural"].tolist() == [1, 0, 1] and sizes.loc["manual"].tolist() == [1, 1, 0]
    assert sizes.loc["neighbor"].isna().all()  # a subset absent from the pairs
    assert "test on gptout" in ch14.describe_split("subset", [0, 1], [], ["natural"], ["gptout"])
    assert "0.6/0.2/0.2" in ch14.describe_split("random", [0], [0.6, 0.2, 0.2], [], [])
    with pytest.raises(ValueError, match="judges must be among"):
        ch14.check_parameters(["GPT-5"], 1, [2.0])
    with pytest.raises(ValueError, match="at least one seed"):
        ch14.check_parameters(["GPT-4"], 0, [2.0])
