"""Chapter 14 (RACER on LLMBar's real judges), as run by the profile full-smoke.

Everything the chapter wrote is checked against values recomputed here from LLMBar's released
records: the split against the library's rule (racer_lib.records.sets.stratified_split) with the
run's settings, the endpoints and the oracle on each seed's test split, Random on its chord,
the baselines' budget on validation (the deterministic RouterBench-KNN refitted and re-matched
from scratch), the summary, the curve metrics and the findings. A second, tiny run checks the
subset (shift) split.

The chapter needs the LLMBar files (a mirror in ``RACER_DATA_DIR`` or the download cache), so
the session fixture ``smoke`` only runs it when they are available; otherwise these tests skip.
"""

from pathlib import Path

import jupytext
import numpy as np
import pytest
from conftest import execute_notebook, real_chapter, release_table

from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import ALPHA, MIN_SEEDS
from racer_lib.paper import claims, registry
from racer_lib.paper.chapters import llmbar_routing as ch14
from racer_lib.records import embed, llmbar, sets
from racer_lib.routing import baselines

ROOT = Path(__file__).resolve().parents[1]
STEM = "14_llmbar_routing"
SPLITS = sets.SPLITS
SUBSETS = ("natural", "neighbor", "gptinst", "gptout", "manual")  # the order the page states
SUBSET_VALID_SHARE = 0.25
ROUTERS = ["ACER", "RACER", *baselines.METHODS]

pytestmark = pytest.mark.slow

# ----------------------------------------------------------------------------------------
# The chapter's run and its parameters


@pytest.fixture(scope="module")
def chapter(smoke):
    """``(results folder, parameters)`` of chapter 14 in the session's smoke run."""
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
    return _csv(results, "llmbar_routing_runs.csv")


@pytest.fixture(scope="module")
def ends(results):
    return _csv(results, "llmbar_endpoints.csv")


@pytest.fixture(scope="module")
def split_table(results):
    return _csv(results, "llmbar_splits.csv")


@pytest.fixture(scope="module")
def pairs():
    return llmbar.llmbar_pairs()


@pytest.fixture(scope="module")
def records(params):
    return {j: llmbar.llmbar_records(j) for j in params["judges"]}


@pytest.fixture(scope="module")
def test_sets(params, records, split_table):
    """Per (judge, seed): the records of that seed's test split, from the split CSV."""
    out = {}
    for s, part in split_table.groupby("seed"):
        test_ids = set(part.loc[part["split"] == "test", "id"])
        for judge, recs in records.items():
            out[judge, s] = recs[recs["id"].isin(test_ids)]
    return out


# ----------------------------------------------------------------------------------------
# The split the page describes: racer_lib.records.sets.stratified_split (unit-tested on its own in
# test_experiments_llmbar.py), with the settings of the run


def _expected_split(pairs, run_seed, split_by, shares, train_subsets):
    shares, test_subsets = sets.split_rule(
        split_by, shares, train_subsets, SUBSETS, SUBSET_VALID_SHARE
    )
    labels = sets.stratified_split(
        pairs["subset"], run_seed, shares, order=SUBSETS, test_groups=test_subsets
    )
    return dict(zip(pairs["id"], labels, strict=True))


def test_every_output_is_written(results):
    for name in (
        "llmbar_routing_runs.csv",
        "llmbar_routing_summary.csv",
        "llmbar_endpoints.csv",
        "routing_metrics.csv",
        "findings.csv",
        "llmbar_splits.csv",
        "llmbar_routing.png",
    ):
        assert (results / name).is_file(), name


def test_split_is_the_stated_rule(params, pairs, split_table):
    seeds = verdicts.replicate_seeds(params["seed"], params["n_seeds"])
    assert sorted(split_table["seed"].unique()) == seeds
    assert set(split_table["split_by"]) == {params["split_by"]}
    for s, part in split_table.groupby("seed"):
        assert sorted(part["id"]) == sorted(pairs["id"]), "every pair once per seed"
        expected = _expected_split(
            pairs, s, params["split_by"], params["split_shares"], params["train_subsets"]
        )
        assert dict(zip(part["id"], part["split"])) == expected, s
        if params["split_by"] == "random":  # stratified: each subset in the stated shares
            for subset, cell in part.groupby("subset"):
                for name, share in zip(SPLITS, params["split_shares"]):
                    assert abs((cell["split"] == name).sum() - share * len(cell)) <= 1, (
                        s,
                        subset,
                        name,
                    )
    if params["split_by"] == "random" and params["n_seeds"] > 1:
        tests = split_table[split_table["split"] == "test"].groupby("seed")["id"].apply(set)
        assert tests.iloc[0] != tests.iloc[1], "each seed draws its own split"


def test_endpoints_and_oracle_recompute_from_the_records(params, ends, test_sets):
    assert set(ends["method"]) == {"All-Instruct", "All-Reasoning", "Oracle"}
    assert set(ends["set"]) == {"test"}
    assert len(ends) == 3 * len(params["judges"]) * params["n_seeds"]
    for row in ends.itertuples():
        test = test_sets[row.judge, row.seed]
        r0 = test["correct_instruct"].to_numpy(bool)
        r1 = test["correct_reasoning"].to_numpy(bool)
        ratio = test["tokens_reasoning"].sum() / test["tokens_instruct"].sum()
        expected = {
            "All-Instruct": (100 * r0.mean(), 1.0),
            "All-Reasoning": (100 * r1.mean(), ratio),
            "Oracle": (100 * (r0 | r1).mean(), None),
        }[row.method]
        assert np.isclose(row.accuracy, expected[0]), row
        if expected[1] is not None:
            assert np.isclose(row.cost, expected[1]), row
        else:  # the oracle reaches its best accuracy somewhere between the two modes
            assert 0 < row.cost <= ratio + 1e-9, row


def test_random_lies_on_the_chord_at_racer_rate(runs, ends):
    ref = ends.set_index(["judge", "seed", "method"])
    rnd = runs[runs["method"] == "Random"]
    racer = runs[runs["method"] == "RACER"].set_index(["judge", "seed", "budget"])
    assert len(rnd) == len(racer) > 0
    for row in rnd.itertuples():
        a0, c0 = ref.loc[(row.judge, row.seed, "All-Instruct"), ["accuracy", "cost"]]
        a1, c1 = ref.loc[(row.judge, row.seed, "All-Reasoning"), ["accuracy", "cost"]]
        q = racer.loc[(row.judge, row.seed, row.budget), "reasoning_rate"]
        assert np.isclose(row.reasoning_rate, q)
        assert np.isclose(row.accuracy, a0 + q * (a1 - a0))
        assert np.isclose(row.cost, c0 + q * (c1 - c0))


def test_every_router_is_run_at_every_budget_and_seed(params, runs):
    seeds = verdicts.replicate_seeds(params["seed"], params["n_seeds"])
    for method in [*ROUTERS, "Random"]:
        got = runs[runs["method"] == method]
        assert len(got) == len(params["judges"]) * len(params["budgets"]) * len(seeds), method
        assert set(got["budget"]) == set(params["budgets"])
        assert set(got["seed"]) == set(seeds)
    assert runs["reasoning_rate"].between(0, 1).all()
    assert (runs["cost"] > 0).all() and runs["accuracy"].between(0, 100).all()


def test_baselines_meet_the_budget_on_validation(runs):
    base = runs[runs["method"].isin(baselines.METHODS)]
    assert base["valid_cost"].notna().all()
    assert (base["valid_cost"] <= base["budget"] + 1e-9).all(), base[
        base["valid_cost"] > base["budget"]
    ]
    assert base["valid_rate"].between(0, 1).all()


def test_knn_runs_recompute_from_scratch(params, pairs, records, split_table, runs):
    """RouterBench-KNN is deterministic: refit it on each split, match, route, compare."""
    emb = embed.embed_pairs(pairs, params["encoder"], progress=False)  # cached by the chapter
    for judge, recs in records.items():
        for s, part in split_table.groupby("seed"):
            where = dict(zip(part["id"], part["split"]))
            mask = {n: pairs["id"].map(where).eq(n).to_numpy() for n in SPLITS}
            unit = recs.loc[mask["train"], "tokens_instruct"].mean()
            cost = {
                n: recs.loc[mask[n], ["tokens_instruct", "tokens_reasoning"]].to_numpy(float) / unit
                for n in SPLITS
            }
            corr = recs.loc[mask["train"], ["correct_instruct", "correct_reasoning"]]
            router = baselines.KNNRouter(k=params["knn_k"]).fit(
                emb[mask["train"]], corr.to_numpy(float)
            )
            valid_scores = router.score(emb[mask["valid"]])
            test_scores = router.score(emb[mask["test"]])
            test = recs[mask["test"]]
            mine = runs[(runs["judge"] == judge) & (runs["seed"] == s)]
            assert np.isclose(mine["unit_tokens"].iloc[0], unit)
            for b in params["budgets"]:
                th = baselines.match_budget(valid_scores, cost["valid"], b)
                go = th.route(test_scores).astype(bool)
                acc = 100 * np.where(go, test["correct_reasoning"], test["correct_instruct"]).mean()
                tokens = np.where(go, test["tokens_reasoning"], test["tokens_instruct"])
                row = mine[(mine["method"] == "RouterBench-KNN") & (mine["budget"] == b)]
                assert len(row) == 1
                row = row.iloc[0]
                assert np.isclose(row["valid_cost"], th.valid_cost), (judge, s, b)
                assert np.isclose(row["accuracy"], acc), (judge, s, b)
                assert np.isclose(row["cost"], tokens.sum() / test["tokens_instruct"].sum())


def test_racer_rows_are_the_selected_checkpoints(runs, results):
    """The validation cost of each ACER/RACER run is that of its best valid epoch."""
    checks = _csv(results, "training_check.csv")
    trained = runs[runs["method"].isin(["ACER", "RACER"])]
    both = trained.merge(checks, on=["judge", "seed", "method", "budget"], suffixes=("", "_check"))
    assert len(both) == len(trained) == len(checks)
    assert np.allclose(both["valid_cost"], both["valid_cost_best"], rtol=1e-4)
    assert np.allclose(both["valid_accuracy"], both["valid_accuracy_best"], rtol=1e-4)
    assert (both["best_epoch"] == both["best_epoch_check"]).all()
    # the routers were trained: validation accuracy moved and the probabilities vary by pair
    moved = checks["valid_accuracy_max"] - checks["valid_accuracy_min"]
    assert (moved > 0).mean() >= 0.5
    assert (checks["p_test_sd"] > 0).all()


def test_summary_is_mean_and_sd_over_seeds(runs, results):
    summary = _csv(results, "llmbar_routing_summary.csv")
    for (judge, method, b), g in runs.groupby(["judge", "method", "budget"]):
        row = summary[
            (summary["judge"] == judge) & (summary["method"] == method) & (summary["budget"] == b)
        ]
        assert len(row) == 1
        row = row.iloc[0]
        assert np.isclose(row["accuracy_mean"], g["accuracy"].mean())
        assert np.isclose(row["cost_mean"], g["cost"].mean())
        if len(g) > 1:
            assert np.isclose(row["accuracy_sd"], g["accuracy"].std())
        assert np.isclose(row["violation_rate"], (g["cost"] > b).mean())
        assert row["seeds"] == len(g)


def test_routing_metrics_are_finite_and_recompute(params, runs, ends, results, test_sets):
    metrics = _csv(results, "routing_metrics.csv")
    assert len(metrics) == len(params["judges"]) * params["n_seeds"] * (len(ROUTERS) + 1)
    assert np.isfinite(metrics["auc"]).all()
    ref = ends.pivot_table(index=["judge", "seed"], columns="method", values="accuracy")
    for row in metrics.itertuples():
        gap = (
            ref.loc[(row.judge, row.seed), "All-Reasoning"]
            - ref.loc[(row.judge, row.seed), "All-Instruct"]
        )
        if gap != 0:  # with no gap between the modes the two are undefined
            assert np.isfinite(row.apgr) and np.isfinite(row.cpt), row
            assert 0 <= row.cpt <= 1, row
        pts = runs[
            (runs["judge"] == row.judge)
            & (runs["seed"] == row.seed)
            & (runs["method"] == row.method)
        ]
        expected = evaluate.routing_metrics(pts, test_sets[row.judge, row.seed])
        for name, value in expected.items():
            assert np.isclose(getattr(row, name), value, equal_nan=True), (row, name)
        if row.method == "Random" and gap != 0:  # on the chord: Random's own scores
            assert np.isclose(row.apgr, 0.5) and np.isclose(row.cpt, 0.5)


def _t_p(x, threshold=0.0):
    """One-sided p-value that the mean of ``x`` exceeds ``threshold`` (scipy's t-test)."""
    from scipy.stats import ttest_1samp

    return ttest_1samp(np.asarray(x) - threshold, 0.0, alternative="greater").pvalue


def test_findings_are_decided_over_the_seeds(params, runs, results):
    """Each finding recomputed from the runs, one paired difference per replicate seed:
    effects, the seeds ahead, and the decisions (inconclusive with fewer seeds than the
    protocol needs, else by scipy's one-sided t-test, Holm over the budgets)."""
    findings = _csv(results, "findings.csv")
    budgets, n = params["budgets"], params["n_seeds"]
    assert len(findings) == len(params["judges"]) * (2 + len(budgets))
    assert set(claims.VERDICT_COLUMNS) <= set(findings.columns)
    acc = runs.set_index(["judge", "method", "budget", "seed"])["accuracy"].sort_index()
    mean = runs.groupby(["judge", "method", "budget"])["accuracy"].mean()
    margin = ch14.AT_LEAST_AS_ACCURATE_POINTS
    rows = findings.set_index("finding")
    status = {"holds": claims.REPRODUCED, "fails": claims.NOT_REPRODUCED}
    assert list(findings["status"]) == [
        status.get(d, claims.INCONCLUSIVE) for d in findings["decision"]
    ]
    assert (findings["n"] == n).all()
    for judge in params["judges"]:
        d = acc[judge, "RACER"] - acc[judge, "Random"]  # by budget and seed
        row = rows.loc[ch14.OVER_RANDOM.format(judge=judge)]
        for b in budgets:
            assert f"ahead in {int((d.loc[b] > 0).sum())} of {n} seeds" in row["observed"]
        p_random = max(_t_p(d.loc[b]) for b in budgets) if n >= MIN_SEEDS else None
        acer = (acc[judge, "RACER"] - acc[judge, "ACER"]).groupby("seed").mean()
        row_acer = rows.loc[ch14.OVER_ACER.format(judge=judge)]
        assert np.isclose(row_acer["effect"], acer.mean())
        checks = [(row, p_random), (row_acer, _t_p(acer, -margin) if n >= MIN_SEEDS else None)]
        for b in budgets:
            best = max(baselines.METHODS, key=lambda m: mean[judge, m, b])
            diff = acc[judge, "RACER", b] - acc[judge, best, b]
            row_best = rows.loc[ch14.OVER_BEST.format(judge=judge, budget=b)]
            assert f"best baseline {best} " in row_best["observed"]
            assert np.isclose(row_best["effect"], diff.mean())
            checks.append((row_best, _t_p(diff, -margin) if n >= MIN_SEEDS else None))
        for found, p in checks:
            if p is None:  # too few seeds: no test ran
                assert found["decision"] == "inconclusive" and "too few seeds" in found["note"]
            elif found is row:  # Holm over the budgets: the largest raw p at most the adjusted
                assert found["p"] >= p - 1e-12
            else:  # Student's t joined by the bootstrap: never below the t-test's own p
                assert found["p"] >= p - 1e-12 or (not np.isfinite(p) and found["p"] in (0, 1))
                assert (found["decision"] == "holds") == (found["p"] < ALPHA)


def test_the_reports_claim_reads_the_runs_paired_by_seed(params, results):
    """The reproduction report's claim (RACER vs Random, paired on split, judge, budget and
    seed) reads this run: one value per replicate seed."""
    (claim,) = ch14.CLAIMS
    assert claim.chapter == registry.LLMBAR_ROUTING
    outcome = claim.rule.evaluate(results)
    assert outcome.verdict.n == params["n_seeds"]
    assert outcome.provenance == "release"
    if params["n_seeds"] < MIN_SEEDS:
        assert outcome.verdict.decision == "inconclusive"


def test_the_figure_is_a_real_png(results):
    png = results / "llmbar_routing.png"
    assert png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------------------
# The shift split, in a tiny run of its own


def test_subset_split_tests_on_the_other_subsets(chapter, tmp_path, pairs):
    src = tmp_path / f"{STEM}.ipynb"
    jupytext.write(jupytext.read(ROOT / "notebooks" / f"{STEM}.md"), src)
    out = tmp_path / "results"
    train_subsets = ["natural", "neighbor", "gptinst"]
    execute_notebook(
        src,
        tmp_path / f"{STEM}.out.ipynb",
        parameters={
            "profile": "test",
            "results_dir": str(out),
            "judges": ["GPT-4"],
            "budgets": [5.0],
            "n_seeds": 2,
            "split_by": "subset",
            "train_subsets": train_subsets,
            "epochs": 3,
            "mf_epochs": 2,
            "mirt_epochs": 2,
            "seed": 7,
        },
    )
    splits = _csv(out, "llmbar_splits.csv")
    assert set(splits["split_by"]) == {"subset"}
    assert sorted(splits["seed"].unique()) == verdicts.replicate_seeds(7, 2)
    for s, part in splits.groupby("seed"):
        assert set(part.loc[part["split"] == "test", "subset"]) == {"gptout", "manual"}
        assert (part["split"] == "test").sum() == (~pairs["subset"].isin(train_subsets)).sum()
        assert dict(zip(part["id"], part["split"])) == _expected_split(
            pairs, s, "subset", None, train_subsets
        )
        for subset in train_subsets:
            cell = part[part["subset"] == subset]
            assert abs((cell["split"] == "valid").sum() - 0.25 * len(cell)) <= 1
    tests = splits[splits["split"] == "test"].groupby("seed")["id"].apply(set)
    assert tests.iloc[0] == tests.iloc[1], "the shift test set is the same for every seed"
    ends = _csv(out, "llmbar_endpoints.csv")
    inst = ends[ends["method"] == "All-Instruct"]["accuracy"]
    assert np.isclose(inst.iloc[0], inst.iloc[1])  # same test set, same endpoints
