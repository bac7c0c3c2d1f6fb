"""A baseline beside every router (issue 43, item 6): `racer router train` also fits a
logistic regression on the same embeddings, its threshold set on the validation split to meet
the budget; `evaluate` shows both; `racer router sweep` prints both frontiers on held-out pairs;
`budget_scorer` makes GridSearchCV respect the budget."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from racer_lib import cli
from racer_lib.records import io as rio
from racer_lib.records import schema as rec
from racer_lib.routing import LogisticRouter, RacerRouter, budget_scorer
from racer_lib.routing.logistic import NAME, baseline_path

FAST = ["--arch", "linear", "--epochs", "25", "--lr", "0.05", "--dual-step", "0.05", "-q"]


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    path = tmp_path_factory.mktemp("baseline") / "mix.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--recipe", "training_mix"]
    assert cli.main([*argv, "--scale", "0.03", "--dim", "16", "--out", str(path)]) == 0
    return path


def test_train_fits_the_baseline_and_evaluate_shows_both(mix, capsys):
    router = mix.with_name("r.pt")
    assert (
        cli.main(["router", "train", str(mix), "--budget", "3", "--out", str(router), *FAST]) == 0
    )
    out = capsys.readouterr().out
    assert f"baseline beside it, {NAME}" in out and f"wrote {baseline_path(router)}" in out
    base = LogisticRouter.load(baseline_path(router))
    assert base.valid_cost_ <= 3.0 and 0 < base.valid_rate_ < 1  # matched on validation
    argv = ["router", "evaluate", str(mix), "--router", str(router), "--split", "test", "--json"]
    assert cli.main(argv) == 0
    methods = {m["method"]: m for m in json.loads(capsys.readouterr().out)["methods"]}
    records, x = rio.load(mix)
    test = (records["split"] == "test").to_numpy()
    d = base.predict(x[test])
    unit = rec.CostUnit(base.tokens_per_unit_)
    cost = unit.cost(records[test])[np.arange(test.sum()), d].mean()
    assert methods[NAME]["cost"] == pytest.approx(cost)
    assert methods[NAME]["reasoning_rate"] == pytest.approx(d.mean())


def test_the_baseline_recovers_a_planted_signal_and_invents_none():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1200, 4))
    helps = x[:, 0] > 0.5  # reasoning is right where instruct is wrong exactly there
    r = np.column_stack([~helps, np.ones(1200, bool)]).astype(float)
    t = np.column_stack([np.full(1200, 10.0), np.full(1200, 40.0)])
    base = LogisticRouter(budget=2.0).fit(
        x[:800], r[:800], t[:800], x[800:1000], r[800:1000], t[800:1000]
    )
    d = base.predict(x[1000:])
    assert d.mean() <= 0.40 and (d[helps[1000:]] == 1).mean() > 0.8  # spends on the helped pairs
    assert np.argmax(np.abs(base.coef_)) == 0
    null = np.column_stack([rng.random(1200) < 0.7, rng.random(1200) < 0.8]).astype(float)
    flat = LogisticRouter(budget=2.0).fit(
        x[:800], null[:800], t[:800], x[800:1000], null[800:1000], t[800:1000]
    )
    assert max(np.abs(flat.coef_)) < 0.3  # no feature carries a signal that is not there


def test_sweep_prints_both_frontiers_and_plots(mix, capsys, tmp_path):
    plot = tmp_path / "sweep.png"
    argv = ["router", "sweep", str(mix), "--budgets", "1.5,4", "--plot", str(plot), *FAST]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    lines = [
        line.split() for line in out.splitlines() if line.strip().startswith(("1.500", "4.000"))
    ]
    assert sorted((row[0], row[1]) for row in lines) == [
        ("1.500", "RACER"),
        ("1.500", "logistic"),
        ("4.000", "RACER"),
        ("4.000", "logistic"),
    ]
    assert plot.stat().st_size > 1000 and f"wrote {plot}" in out


def test_budget_scorer_makes_grid_search_respect_the_budget(mix):
    records, x = rio.load(mix)
    keep = (records["split"] != "test").to_numpy()
    x, r, t = x[keep], rec.correct_matrix(records)[keep], rec.token_matrix(records)[keep]
    base = RacerRouter(arch="linear", epochs=25, lr=0.05, dual_step=0.05)
    grid = {"budget": [1.5, 6.0]}
    by_accuracy = GridSearchCV(base, grid, cv=2).fit(x, r, tokens=t)
    assert by_accuracy.best_params_["budget"] == 6.0  # accuracy alone takes the largest
    scorer = budget_scorer(x, t, budget=2.0)
    kept = GridSearchCV(base, grid, cv=2, scoring=scorer).fit(x, r, tokens=t)
    assert kept.best_params_["budget"] == 1.5
    assert kept.best_estimator_.cost(x, t) <= 2.0


def test_sweep_holds_out_another_file_and_split_carries_the_embeddings(mix, capsys, tmp_path):
    from racer_lib.routing.decision import over_budget

    # records split keeps the pairs' embeddings beside the new file
    resplit = tmp_path / "resplit.parquet"
    argv = ["records", "split", str(mix), "--out", str(resplit), "--seed", "3"]
    assert cli.main(argv) == 0
    records, x = rio.load(resplit)
    _, x_before = rio.load(mix)
    np.testing.assert_array_equal(x, x_before)
    # a second draw of the judge's records as the held-out file
    other = tmp_path / "other.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--recipe", "training_mix"]
    assert (
        cli.main([*argv, "--scale", "0.03", "--dim", "16", "--seed", "1", "--out", str(other)]) == 0
    )
    capsys.readouterr()
    argv = ["router", "sweep", str(resplit), "--held-out", str(other), "--budgets", "3", *FAST]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"{len(rio.read_records(other)):,} held-out pairs ({other})" in out
    line = over_budget(5.0, 4.0)
    assert "exceeds the budget C = 4 by 25.0 %" in line and "--pace dual" in line


def test_export_env_sets_what_shell_cells_read(monkeypatch):
    import os

    monkeypatch.setenv("GONE", "x")
    env = cli.export_env(OUT="/tmp/o", TRAINING={"epochs": 10, "dual_step": 1e-4},
                         TRAIN={"subset": ["a", "b"]}, GONE=None)  # fmt: skip
    assert env["TRAINING"] == "--epochs 10 --dual-step 0.0001"
    assert env["TRAIN"] == "--subset a --subset b" and os.environ["OUT"] == "/tmp/o"
    assert (
        "GONE" not in os.environ
        and os.environ["PATH"].split(os.pathsep)[0] == env["PATH"].split(os.pathsep)[0]
    )


def test_export_env_writes_a_path_inside_the_working_folder_relative(tmp_path, monkeypatch):
    """A shell cell's output shows no machine's absolute path (make book-check's ``path``)."""
    monkeypatch.chdir(tmp_path)
    env = cli.export_env(OUT=tmp_path / "results" / "17", ELSEWHERE=Path("/opt/x"))
    assert env["OUT"] == os.path.join("results", "17") and env["ELSEWHERE"] == "/opt/x"
    assert env["OMP_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "1"
