"""The controls of chapter 16 (racer_lib.paper.chapters.simulator_sensitivity), run as the chapter
runs them: over several replicate seeds, their CSVs written as the chapter writes them and each
claim decided by its own rule on those CSVs. Each control must be able to fail: the null
simulator and the permuted embeddings on a router that sees each pair's answer through its
embedding (a leak), the planted signal on a router whose embedding is noise; and each passes on
an honest router. And with a reasoning mode that gains nothing, the paper's Fig. 2 findings
about where reasoning gains must fail. These test the code (the trainer, the CSVs, the rules,
the controls), not what the simulator was made to produce."""

import numpy as np
import pandas as pd
import pytest
import torch

from racer_lib.evaluation import verdicts
from racer_lib.paper import claims
from racer_lib.paper.chapters import reasoning_vs_instruct
from racer_lib.paper.chapters import simulator_sensitivity as ch
from racer_lib.records import choices, simulate
from racer_lib.records.schema import correct_matrix
from racer_lib.routing import train

#: Small linear routers on small sets: enough to learn a planted signal in a few seconds.
SETTINGS = train.TrainSettings(arch="linear", epochs=20, batch_size=256, lr=0.05, dual_step=0.05)
SIZES = ch.Sizes(scale=0.03, benchmark_scale=0.25, shift_scale=0.05, llama_budgets=(2.0, 3.0))
SEED, N = 7, verdicts.MIN_SEEDS  # the protocol's least number of seeds: every claim is tested


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def leaking(records, emb, rng):
    """A router that sees the answer: each pair's r1 - r0 appended to its embedding."""
    r = correct_matrix(records)
    return np.column_stack([emb, 3.0 * (r[:, 1] - r[:, 0])]).astype(np.float32)


def blind(records, emb, rng):
    """A router that sees nothing: its embedding replaced by noise."""
    return rng.standard_normal(emb.shape).astype(np.float32)


def permuted_then_leaking(records, emb, rng):
    return leaking(records, ch.EMBEDDINGS["permuted"](records, emb, rng), rng)


def run_control(name, folder, embedding=None, keys=ch.VERSUS_RANDOM):
    """The control ``name`` as the chapter runs it (its simulator and embeddings unless
    ``embedding`` replaces them), on the claims of ``keys`` it reads: its rows of
    ``controls.csv``."""
    control = ch.CONTROLS[name]
    keys = [k for k in control.keys if k in keys]
    found = ch.claim_verdicts(
        control.simulator, SEED, N, SIZES, SETTINGS, folder, embedding or control.embedding, keys
    )
    table = ch.controls_table(found.assign(point=name))
    assert list(table["key"]) == keys
    return table


@pytest.fixture(scope="module")
def null_run(tmp_path_factory):
    """The null simulator's control on an honest router, every claim it reads, and the folder
    its CSVs were written to."""
    folder = tmp_path_factory.mktemp("null")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    table = run_control("null simulator", folder, keys=ch.CONTROLS["null simulator"].keys)
    torch.set_num_threads(before)
    return table, folder


def test_the_null_simulator_control_passes_on_an_honest_router_and_catches_a_leak(
    null_run, tmp_path
):
    honest, _ = null_run
    assert set(honest["key"]) == set(ch.CONTROLS["null simulator"].keys)  # the ablation's too
    assert (honest["decision"] != verdicts.HOLDS).all() and honest["passes"].all(), honest
    leak = run_control("null simulator", tmp_path, leaking)
    assert (leak["decision"] == verdicts.HOLDS).all() and not leak["passes"].any(), leak


def test_the_permuted_embeddings_control_catches_a_leak(tmp_path):
    honest = run_control("permuted embeddings", tmp_path / "honest")
    assert honest["passes"].all(), honest
    leak = run_control("permuted embeddings", tmp_path / "leak", permuted_then_leaking)
    assert not leak["passes"].any(), leak


def test_the_planted_signal_is_detected_and_a_blind_router_fails_the_control(tmp_path):
    planted = run_control("planted signal", tmp_path / "honest")
    assert (planted["decision"] != verdicts.FAILS).all() and planted["passes"].all(), planted
    assert (planted["effect"] > 0).all()
    blinded = run_control("planted signal", tmp_path / "blind", blind)
    assert not blinded["passes"].any(), blinded
    summary = ch.control_summary(pd.concat([planted, blinded.assign(control="blind")]))
    assert list(summary["result"]) == ["passes", "fails"]


def test_a_control_reads_replicate_seeds_from_csvs_written_as_the_chapters_write_them(null_run):
    honest, tmp_path = null_run
    found = ch.decide(tmp_path, ch.CONTROLS["null simulator"].keys)
    assert list(honest["decision"]) == list(found["decision"])
    seeds = verdicts.replicate_seeds(SEED, N)
    runs = pd.read_csv(tmp_path / "frontier_runs.csv")
    assert list(runs.columns[:9]) == [
        "provenance", "judge", "set", "budget", "seed", "method", "accuracy", "cost",
        "reasoning_rate",
    ]  # fmt: skip
    assert sorted(runs["seed"].unique()) == seeds and set(runs["method"]) == {"RACER", "Random"}
    # every seed draws the records afresh: the fixed modes' points differ from seed to seed
    ends = pd.read_csv(tmp_path / "frontier_endpoints.csv")
    test = ends[(ends["set"] == "test") & (ends["method"] == "All-Reasoning")]
    assert len(test[["accuracy", "cost"]].drop_duplicates()) == N
    areas = pd.read_csv(tmp_path / "area_above_random.csv")
    assert len(areas) == N * len(set(runs["set"]))
    llama = pd.read_csv(tmp_path / "llama_runs.csv")
    assert {"racer_accuracy", "random_at_cost_accuracy"} <= set(llama.columns)
    assert sorted(llama["seed"].unique()) == seeds
    ablation = pd.read_csv(tmp_path / "ablation_runs.csv")
    assert set(ablation["scenario"]) == set(ch.SCENARIOS) and "violated" in ablation
    # the verdicts are the claims' own rules on these files, n = the replicate seeds
    assert (found["n"] == N).all()
    for key in ch.CONTROLS["null simulator"].keys:
        outcome = ch.sensitive_claims()[key].rule.evaluate(tmp_path)
        row = found.set_index("key").loc[key]
        assert outcome.verdict.decision == row["decision"]
        assert outcome.verdict.effect == pytest.approx(row["effect"])


def test_null_gain_fig2_findings_fail():
    recs, _ = simulate.simulate(
        "qwen3-4b",
        ["training_mix", *simulate.OOD_BENCHMARKS],
        dim=0,
        scale=0.2,
        simulator=choices.null_gain(),
    )
    findings = reasoning_vs_instruct.fig2_findings(recs, "simulated")
    gains = findings[findings["finding"].str.contains("math and coding")]
    assert len(gains) == 2  # where reasoning gains, and where it is most cost-effective
    assert (gains["decision"] == "fails").all(), gains.to_string()
    # The simulator was given these findings; on records where they fail they are not
    # reproduced (claims.finding_status: a given finding that does not hold).
    assert (gains["status"] == claims.NOT_REPRODUCED).all(), gains.to_string()
    default, _ = simulate.simulate(
        "qwen3-4b", ["training_mix", *simulate.OOD_BENCHMARKS], dim=0, scale=0.2
    )
    given = reasoning_vs_instruct.fig2_findings(default, "simulated")
    given = given[given["finding"].str.contains("math and coding")]
    assert (given["status"] != claims.REPRODUCED).all()  # given, so never "reproduced"
