"""Chapter 10 (advanced baselines) as run by the smoke profile, checked against recomputation.

Each replicate seed re-draws the records: the RouterBench-KNN router is deterministic given them,
so its thresholds and evaluation points are refitted here on each seed's simulated splits and
must match the chapter's CSVs exactly; the table, the curve metrics and the finding are
recomputed from the chapter's per-run CSV. RACER's routers are chapter 07's, loaded from the
router store: every profile keeps the two chapters' records and training settings alike, and the
smoke build loads every one of them.
"""

from pathlib import Path

import jupytext
import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import printed

from racer_lib.book import profiles
from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation import verdicts
from racer_lib.paper import claims, effects, experiments
from racer_lib.records.sets import judge_set
from racer_lib.routing import baselines, train

ROOT = Path(__file__).resolve().parents[1]
STEM = "10_advanced_baselines"
METHODS = [*baselines.METHODS, "RACER"]
PAPER_4B = {
    "RouterBench-KNN": (84.1, 2.5),
    "RouteLLM-MF": (84.7, 3.4),
    "M-IRT": (84.3, 2.7),
    "RACER": (85.8, 3.4),
}

pytestmark = pytest.mark.slow

#: The parameters that decide RACER's records and training: 10 must use 07's to load its routers.
SHARED = (
    "seed", "scale", "split_shares", "dim", "arch", "epochs", "lr", "dual_step", "tau_r",
    "records_dir",
)  # fmt: skip


def _code_cells(stem=STEM):
    nb = jupytext.read(ROOT / "notebooks" / f"{stem}.md")
    return [c for c in nb.cells if c.cell_type == "code"]


def _defaults(stem=STEM):
    """The notebook's parameter defaults."""
    cell = next(c for c in _code_cells(stem) if "parameters" in c.metadata.get("tags", []))
    space = {}
    exec(cell.source, space)
    return {k: v for k, v in space.items() if not k.startswith("__")}


def _parameters(profile="smoke"):
    """The notebook's parameter defaults, overridden by the profile's entry."""
    params = _defaults()
    given = yaml.safe_load((ROOT / "profiles" / f"{profile}.yaml").read_text())["notebooks"][STEM]
    params.update(given)
    return params


def _seeds(params):
    return verdicts.replicate_seeds(params["seed"], params["n_seeds"])


@pytest.mark.parametrize("name", ["smoke", "sim", "paper-sim", "paper"])
def test_every_profile_lets_10_load_the_routers_of_07(name):
    """Same records and training settings per (judge, seed), budgets and seeds among 07's."""
    profile = profiles.load_profile(name, ROOT)
    mine, theirs = (
        {**_defaults(stem), **profile.notebooks.get(stem, {}), **profile.set_all}
        for stem in (STEM, "07_budget_frontier")
    )
    assert {k: mine[k] for k in SHARED} == {k: theirs[k] for k in SHARED}, name
    assert mine.get("trainer", {}) == theirs.get("trainer", {}), name
    assert set(mine["budgets"]) <= set(theirs["budgets"]), name
    assert set(mine["judges"]) <= set(theirs["judges"]), name
    assert mine["n_seeds"] <= theirs["n_seeds"], name


@pytest.fixture(scope="module")
def params():
    return _parameters()


@pytest.fixture(scope="module")
def results(smoke):
    result, _ = smoke
    return Path(result.results_dirs[STEM])


@pytest.fixture(scope="module")
def runs(results):
    return pd.read_csv(results / "baselines_runs.csv")


@pytest.fixture(scope="module")
def data(params):
    """Per judge and replicate seed: the simulated splits and evaluation sets the chapter used."""
    out = {}
    for judge in params["judges"]:
        for seed in _seeds(params):
            records, emb = judge_set(
                judge, "training_mix", seed=seed, dim=params["dim"], scale=params["scale"],
                split_shares=params["split_shares"],
            )  # fmt: skip
            unit, split = train.splits(records, emb, ("train", "valid"))
            sets = experiments.evaluation_sets(
                judge,
                records,
                emb,
                ("test",),
                params["benchmarks"],
                seed=seed,
                dim=params["dim"],
                scale=params["benchmark_scale"],
            )
            out[judge, seed] = (split, sets)
    return out


def test_every_output_is_written_with_provenance_first(results):
    for name in (
        "baselines_runs.csv",
        "budget_matching.csv",
        "advanced_baselines_table.csv",
        "routing_metrics.csv",
        "findings.csv",
    ):
        table = pd.read_csv(results / name)
        assert table.columns[0] == "provenance", name
        assert set(table["provenance"]) == {"simulated"}, name
        assert len(table) > 0, name
    assert (results / "advanced_baselines.png").is_file()


def test_one_run_per_judge_set_method_budget_and_seed(runs, data, params):
    sets = ["test", *params["benchmarks"]]
    seeds = _seeds(params)
    keys = runs[["judge", "set", "method", "budget", "seed"]]
    assert not keys.duplicated().any()
    assert len(runs) == (
        len(params["judges"]) * len(sets) * len(METHODS) * len(params["budgets"]) * len(seeds)
    )
    assert set(runs["judge"]) == set(params["judges"])
    assert set(runs["set"]) == set(sets)
    assert set(runs["method"]) == set(METHODS)
    assert sorted(set(runs["budget"])) == sorted(params["budgets"])
    assert sorted(set(runs["seed"])) == seeds
    assert runs["accuracy"].between(0, 100).all()
    assert runs["reasoning_rate"].between(0, 1).all()
    assert (runs["cost"] > 0).all()
    base = runs[runs["method"] != "RACER"]
    assert base[["valid_rate", "valid_cost"]].notna().all().all()
    # baselines route deterministically: their reasoning rate is a whole number of pairs
    for (judge, name, seed), g in base.groupby(["judge", "set", "seed"]):
        n = len(data[judge, seed][1][name][0])
        calls = g["reasoning_rate"].to_numpy() * n
        assert calls == pytest.approx(np.round(calls), abs=1e-6)


def test_budget_matching_holds_and_knn_thresholds_recompute(results, runs, data, params):
    matching = pd.read_csv(results / "budget_matching.csv")
    seeds = params["n_seeds"]
    assert (
        len(matching)
        == len(params["judges"]) * len(baselines.METHODS) * len(params["budgets"]) * seeds
    )
    assert set(matching["method"]) == set(baselines.METHODS)
    assert matching["within_budget"].astype(bool).all()
    assert (matching["valid_cost"] <= matching["budget"] + 1e-12).all()
    for (judge, seed), (split, sets) in data.items():
        tr, va = split["train"], split["valid"]
        knn = baselines.KNNRouter(k=params["knn_k"]).fit(tr.x.numpy(), tr.r.numpy(), tr.c.numpy())
        valid_scores = knn.score(va.x.numpy())
        for budget in params["budgets"]:
            th = baselines.match_budget(valid_scores, va.c.numpy(), budget)
            rows = matching[
                (matching["judge"] == judge)
                & (matching["method"] == "RouterBench-KNN")
                & (matching["budget"] == budget)
                & (matching["seed"] == seed)
            ]
            assert len(rows) == 1
            assert rows["valid_cost"].to_numpy() == pytest.approx(th.valid_cost)
            assert rows["valid_rate"].to_numpy() == pytest.approx(th.rate)
            # the recomputed validation cost: mean cost of the routed decisions
            d = th.route(valid_scores)
            c = va.c.numpy()
            assert th.valid_cost == pytest.approx(
                np.mean(np.where(d == 1, c[:, 1], c[:, 0])), rel=1e-5
            )
            # and the same threshold applied to every evaluation set gives the runs' points
            for name, (recs, emb) in sets.items():
                point = evaluate.policy_point(recs, th.route(knn.score(emb)))
                got = runs[
                    (runs["judge"] == judge)
                    & (runs["set"] == name)
                    & (runs["method"] == "RouterBench-KNN")
                    & (runs["budget"] == budget)
                    & (runs["seed"] == seed)
                ]
                assert len(got) == 1
                for q in ("accuracy", "cost", "reasoning_rate"):
                    assert got[q].to_numpy() == pytest.approx(point[q]), (judge, name, q)


def test_table_is_the_ood_mean_of_the_runs(results, runs, params):
    table = pd.read_csv(results / "advanced_baselines_table.csv")
    assert len(table) == len(params["judges"]) * len(METHODS)
    assert not table[["judge", "method"]].duplicated().any()
    assert set(table["budget"]) == {params["table_budget"]}
    at = runs[(runs["budget"] == params["table_budget"]) & runs["set"].isin(params["benchmarks"])]
    for _, row in table.iterrows():
        sub = at[(at["judge"] == row["judge"]) & (at["method"] == row["method"])]
        assert set(sub["set"]) == set(params["benchmarks"])
        per_bench = sub.groupby("set")[["accuracy", "cost"]].mean()
        per_seed = sub.groupby("seed")[["accuracy", "cost"]].mean()
        for q in ("accuracy", "cost"):
            assert row[q] == pytest.approx(per_bench[q].mean())
            assert row[f"{q}_sd"] == pytest.approx(per_seed[q].std(), nan_ok=True)
        assert row["seeds"] == params["n_seeds"]
        paper = PAPER_4B.get(row["method"]) if row["judge"] == "qwen3-4b" else None
        if paper and params["table_budget"] == 4.0:
            assert (row["paper_accuracy"], row["paper_cost"]) == pytest.approx(paper)


def test_routing_metrics_are_sane_and_recompute(results, runs, data, params):
    metrics = pd.read_csv(results / "routing_metrics.csv")
    sets = ["test", *params["benchmarks"]]
    assert len(metrics) == len(params["judges"]) * len(sets) * len(METHODS) * params["n_seeds"]
    assert np.isfinite(metrics["apgr"]).all()
    assert np.isfinite(metrics["auc"]).all()
    assert metrics["cpt"].between(0, 1).all()
    for (judge, seed), (_, eval_sets) in data.items():
        for name, (recs, _) in eval_sets.items():
            ends = evaluate.endpoints(recs)
            lo, hi = ends["All-Instruct"], ends["All-Reasoning"]
            here = runs[(runs["judge"] == judge) & (runs["set"] == name) & (runs["seed"] == seed)]
            for method, pts in here.groupby("method"):
                row = metrics[
                    (metrics["judge"] == judge)
                    & (metrics["set"] == name)
                    & (metrics["method"] == method)
                    & (metrics["seed"] == seed)
                ]
                assert len(row) == 1
                row = row.iloc[0]
                # AUC is a mean accuracy over the cost span: within the curve's accuracy range
                accs = [lo["accuracy"], hi["accuracy"], *pts["accuracy"]]
                assert min(accs) - 1e-9 <= row["auc"] <= max(accs) + 1e-9
                # APGR by hand: trapezoid of the gap recovered against the reasoning share
                curve = pd.concat([pd.DataFrame([lo, hi]), pts[["reasoning_rate", "accuracy"]]])
                by_rate = curve.groupby("reasoning_rate")["accuracy"].mean()
                pgr = (by_rate - lo["accuracy"]) / (hi["accuracy"] - lo["accuracy"])
                x, y = by_rate.index.to_numpy(), pgr.to_numpy()
                apgr = float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2))
                assert row["apgr"] == pytest.approx(apgr, abs=1e-9)
                assert row["cpt"] <= x[np.flatnonzero(y >= 0.5)[0]] + 1e-12


def test_the_finding_is_decided_over_the_seeds_from_the_runs(results, runs, params):
    """ONE finding: every (judge, baseline) a member, per seed RACER's accuracy minus the
    baseline's, each the mean over the benchmarks at the table's budget; a one-sided t-test per
    member, Holm over the members. Recomputed here from the runs."""
    findings = pd.read_csv(results / "findings.csv", keep_default_na=False, na_values=[""])
    assert len(findings) == 1
    row = findings.iloc[0]
    assert row["finding"].startswith(
        f"RACER is the most accurate method at C = {params['table_budget']:g}"
    )
    assert "holds" not in findings.columns and "calibrated" not in findings.columns
    at = runs[(runs["budget"] == params["table_budget"]) & runs["set"].isin(params["benchmarks"])]
    ood = at.groupby(["judge", "method", "seed"])["accuracy"].mean()
    members = {}
    for judge in params["judges"]:
        for method in baselines.METHODS:
            d = ood[judge, "RACER"] - ood[judge, method]
            members[f"{judge}, {method}"] = verdicts.directional(
                d.to_numpy(), 1, sesoi=effects.ROUTER_ACCURACY.sesoi
            )
    expected = verdicts.every(members)
    assert row["decision"] == expected.decision and row["n"] == params["n_seeds"]
    assert row["effect"] == pytest.approx(expected.effect)
    assert row["test"] == expected.test
    # a trained router's result is no input of the simulator: the status reads the decision
    want = {"holds": claims.REPRODUCED, "fails": claims.NOT_REPRODUCED}
    assert row["status"] == want.get(expected.decision, claims.INCONCLUSIVE)
    shown = pd.read_csv(results / "most_accurate_members.csv")
    assert list(shown["member"]) == list(members)
    assert shown["effect"].to_numpy() == pytest.approx([v.effect for v in members.values()])


def test_racer_routers_are_loaded_from_07s_store(smoke, params):
    """The smoke profile keeps 10's records and settings 07's: 10 trains no RACER router."""
    text = printed(smoke[0], STEM)
    n = len(params["budgets"]) * params["n_seeds"]
    for judge in params["judges"]:
        assert f"{judge}: {n} RACER routers ({n} loaded from the store)" in text


def test_table_budget_outside_budgets_is_refused(tmp_path, params):
    cells = _code_cells()
    space = {}
    exec(cells[0].source, space)
    space.update(params, results_dir=str(tmp_path / "out"), table_budget=4.5, torch_threads=0)
    with pytest.raises(ValueError, match="table_budget"):
        exec(cells[1].source, space)


def test_figure_is_in_the_built_chapter(smoke, results):
    result, _ = smoke
    png = results / "advanced_baselines.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000
    chapter = (Path(result.html_index).parent / "notebooks" / f"{STEM}.html").read_text()
    assert "<img" in chapter
    assert "simulated" in chapter.lower()
    assert "paper accuracy" in chapter
