"""The simulator: calibration to the paper, determinism, memory, and the paper's patterns."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from racer_lib.evaluation import metrics as evaluate
from racer_lib.records import simulate
from racer_lib.records.schema import validate_records
from racer_lib.records.summary import mode_summary


@pytest.fixture(scope="module")
def report():
    return simulate.check(seed=0)


def test_aggregates_match_paper_targets(report):
    # Self-routing table (Qwen3: three aggregates and the share of "yes"), Llama-family table,
    # dataset-statistics table.
    assert len(report) == 3 * len(simulate.JUDGES) + 3 + 3
    share = report[report["quantity"] == "self-routing reasoning share (%)"]
    assert share.set_index("judge")["paper"].to_dict() == {
        "qwen3-1.7b": 99.91,
        "qwen3-4b": 99.51,
        "qwen3-8b": 99.88,
    }
    bad = report[~report["ok"]]
    assert bad.empty, bad.to_string()
    acc = report[report["quantity"].str.contains("accuracy")]
    assert (abs(acc["simulated"] - acc["paper"]) <= 1.5).all()
    ratio = report[report["quantity"] == "cost ratio"]
    assert (abs(ratio["simulated"] / ratio["paper"] - 1) <= 0.10).all()
    sky = ratio.set_index("set").loc[["magpie_ultra", "wildguardmix", "offsetbias"], "paper"]
    assert sky.tolist() == [11.2, 3.4, 4.7]


def test_aggregates_hold_for_other_seeds():
    for seed in (1, 2):
        rep = simulate.check(seed=seed)
        assert rep["ok"].all(), rep[~rep["ok"]].to_string()


def test_reasoning_gains_most_on_math_and_coding():
    for judge in simulate.JUDGES:
        # Exactly, from the model's parameters, benchmark by benchmark ...
        exp = simulate.cell_expectations(judge)
        exp = exp[exp["dataset"].isin(simulate.OOD_BENCHMARKS)]
        exp["gain"] = exp["acc_reasoning"] - exp["acc_instruct"]
        for _, bench in exp.groupby("dataset"):
            gain = bench.set_index("domain")["gain"]
            verify = gain[gain.index.isin(["math", "coding"])]
            surface = gain[gain.index.isin(["safety", "knowledge"])]
            assert verify.min() > surface.max(), (judge, gain)
        # ... and on the drawn records, pooled by domain.
        records, _ = simulate.simulate(judge, list(simulate.OOD_BENCHMARKS), dim=0)
        gain = mode_summary(records, ["domain"]).set_index("domain")["delta_accuracy"]
        assert gain[["math", "coding"]].min() > gain[["safety", "knowledge"]].max(), judge


def test_headroom_shrinks_with_model_size():
    room = []
    for judge in ["qwen3-1.7b", "qwen3-4b", "qwen3-8b"]:
        records, _ = simulate.simulate(judge, "training_mix", dim=0)
        room.append(evaluate.headroom(mode_summary(records)).iloc[0])
    assert room[0] > room[1] > room[2] > 0


def test_agreement_cells_match_their_expectation():
    records, _ = simulate.simulate("qwen3-8b", "rewardbench", dim=0, scale=4)
    got = mode_summary(records, ["domain"]).set_index("domain")
    exp = simulate.cell_expectations("qwen3-8b").query("dataset == 'rewardbench'")
    for _, row in exp.iterrows():
        n = got.loc[row["domain"], "n"]
        for cell in evaluate.AGREEMENT_CELLS:
            share = got.loc[row["domain"], cell] / n
            assert abs(share - row[cell]) < 4 * np.sqrt(row[cell] * (1 - row[cell]) / n) + 1e-3


def test_deterministic_and_independent_of_chunking():
    a, ea = simulate.simulate("qwen3-4b", "wildguardmix", seed=5, dim=16)
    b, eb = simulate.simulate("qwen3-4b", "wildguardmix", seed=5, dim=16)
    pd.testing.assert_frame_equal(a, b)
    np.testing.assert_array_equal(ea, eb)
    # A smaller draw is a prefix of the larger one: same pairs, same verdicts, same vectors.
    c, ec = simulate.simulate("qwen3-4b", "wildguardmix", seed=5, dim=16, scale=0.3)
    pd.testing.assert_frame_equal(c, a.iloc[: len(c)].reset_index(drop=True))
    np.testing.assert_array_equal(ec, ea[: len(c)])
    d, _ = simulate.simulate("qwen3-4b", "wildguardmix", seed=6, dim=16)
    assert not np.array_equal(d["correct_instruct"], a["correct_instruct"])


def test_pairs_are_shared_across_judges():
    a, ea = simulate.simulate("qwen3-1.7b", "judgebench", dim=8)
    b, eb = simulate.simulate("qwen3-8b", "judgebench", dim=8)
    assert (a["id"] == b["id"]).all() and (a["label"] == b["label"]).all()
    np.testing.assert_array_equal(ea, eb)  # the embedding depends on the pair, not the judge
    assert not (a["correct_reasoning"] == b["correct_reasoning"]).all()


def test_records_are_valid_and_well_formed():
    records, emb = simulate.simulate(
        "llama-3.1-8b", ["training_mix", "judgebench"], dim=12, scale=0.05
    )
    validate_records(records)
    assert emb.shape == (len(records), 12) and emb.dtype == np.float32
    assert set(records["split"]) == {"train", "valid", "test", "ood"}
    assert (records["thinking_tokens_reasoning"] <= records["tokens_reasoning"]).all()
    assert (records["thinking_tokens_instruct"] == 0).all()
    assert records["source"].str.startswith("simulated:").all()
    assert (records["verdict_reasoning"] == "unparseable").any()
    assert not records.loc[records["verdict_reasoning"] == "unparseable", "correct_reasoning"].any()


def test_embedding_carries_domain_and_part_of_the_latent_signal():
    """A linear probe recovers the domain well and reasoning's advantage only partly."""
    records, emb = simulate.simulate("qwen3-4b", "training_mix", dim=32, scale=0.25)
    x = np.column_stack([emb, np.ones(len(emb))])
    gain = records["correct_reasoning"].astype(float) - records["correct_instruct"].astype(float)
    beta, *_ = np.linalg.lstsq(x, gain, rcond=None)
    r2 = 1 - np.var(gain - x @ beta) / np.var(gain)
    assert 0.01 < r2 < 0.5  # something to learn, far from everything
    math = (records["domain"] == "math").to_numpy(float)
    beta, *_ = np.linalg.lstsq(x, math, rcond=None)
    assert np.mean((x @ beta > 0.5) == (math > 0.5)) > 0.99


def test_unknown_names_are_errors():
    with pytest.raises(ValueError, match="unknown judge 'gpt-5'; simulated judges are qwen3-1.7b"):
        simulate.simulate("gpt-5")
    with pytest.raises(ValueError, match="unknown recipe 'mmlu'; recipes are training_mix"):
        simulate.simulate("qwen3-4b", "mmlu")


def test_paper_scale_streams_in_bounded_memory():
    """40,000 pairs x 7,680 dims (1.2 GB of float32) pass through in chunks."""
    tracemalloc.start()
    n, total = 0, 0.0
    for records, emb in simulate.iter_simulate("qwen3-4b", "training_mix", dim=7680):
        assert emb.shape == (len(records), 7680) and emb.dtype == np.float32
        n += len(records)
        total += float(emb[:, 0].sum())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert n == 40000
    assert np.isfinite(total)
    assert peak < 400 * 2**20, f"peak {peak / 2**20:.0f} MiB"  # a few chunks, not 1.2 GB


def test_self_route_share_and_its_lean_towards_pairs_where_reasoning_helps():
    records, _ = simulate.simulate("qwen3-1.7b", "training_mix", seed=0, dim=0)
    yes = (records["self_route"] == "yes").to_numpy()
    assert 100 * yes.mean() == pytest.approx(simulate.JUDGES["qwen3-1.7b"].self_route, abs=0.15)
    assert set(records["self_route"].unique()) == {"yes", "no"}
    helps = (~records["correct_instruct"] & records["correct_reasoning"]).to_numpy()
    assert yes[helps].mean() > yes[~helps].mean()  # the answer leans on the latent v
    llama, _ = simulate.simulate("llama-3.1-8b", "judgebench", seed=0, dim=0)
    assert llama["self_route"].isna().all()  # the paper reports no share for this pair
