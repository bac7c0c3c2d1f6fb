"""Route-then-judge (racer_lib.routing.routed, `racer judge run --router`): one generation per
pair in the mode the router picks, the realized cost of that mode's tokens, seeded decisions,
and a SIGKILLed routed run resumed, on the fake and stand-in backends of test_judging."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from test_judging import ROOT, STUB, FlakyBackend, make_pairs, vllm_stub  # noqa: F401, F811

from racer_lib import cli, judging
from racer_lib.errors import ConfigError
from racer_lib.records import io as rio
from racer_lib.records import schema as rec
from racer_lib.routing import routed
from racer_lib.routing.policy import Router, init_layers

DIM, TOKENS_PER_UNIT, BUDGET = 6, 20.0, 1.5


def toy_router(seed=0, embedder="toy-embedder"):
    """An untrained linear router (its weights from ``seed``): the judging mechanics only."""
    layers = init_layers(seed, DIM, "linear")
    return Router(layers, "linear", DIM, embedder, TOKENS_PER_UNIT, BUDGET)


def toy_embeddings(n, seed=0):
    return (3 * np.random.default_rng(seed).normal(size=(n, DIM))).astype(np.float32)


class CountingBackend(FlakyBackend):
    """The fake judge of test_judging, recording each conversation's seed."""

    def __init__(self):
        super().__init__()
        self.seeds = []

    def generate(self, conversations, sampling, *, seeds, chat_template_kwargs=None):
        self.seeds += list(seeds)
        return super().generate(
            conversations, sampling, seeds=seeds, chat_template_kwargs=chat_template_kwargs
        )


def test_each_pair_is_judged_once_in_the_chosen_mode(tmp_path):
    pairs, spec, seed = make_pairs(12), judging.JudgeSpec("hybrid", "fake"), 5
    router, x = toy_router(), toy_embeddings(12)
    plan = routed.routing(pairs, router, x, "expected", seed)
    decision = plan.routes["decision"].to_numpy()
    np.testing.assert_array_equal(decision, router.p_reasoning(x) > 0.5)
    assert 0 < decision.sum() < len(pairs)  # both modes are chosen for some pairs
    backends = {"instruct": CountingBackend(), "reasoning": CountingBackend()}
    res = judging.run_judging(
        pairs,
        backends,
        judging.RunSpec.of_judge(spec, tmp_path / "routed", seed=seed, batch_size=5),
        progress=False,
        routing=plan,
    )
    assert (res.n_items, res.n_judged) == (12, 12)
    for a, mode in enumerate(rec.MODES):  # exactly one generation per pair, in its mode
        chosen = pairs["id"][decision == a]
        expected = sorted(judging.item_seed(seed, p, mode) for p in chosen)
        assert sorted(backends[mode].seeds) == expected
    pinned = pd.read_csv(res.folder / "routes.csv", dtype={"id": str})
    pd.testing.assert_frame_equal(pinned, plan.routes)

    # the routed judgments are the both-mode run's in the chosen mode (one seed per item), so
    # the realized cost is the chosen mode's tokens and the accuracy its correctness
    judging.run_judging(
        pairs,
        FlakyBackend(),
        judging.RunSpec.of_judge(spec, tmp_path / "full", seed=seed),
        progress=False,
    )
    full = judging.merge(tmp_path / "full", pairs)
    parts, _ = judging.store.read_parts(res.folder)
    table = routed.routed_table(plan.routes, parts, pairs, TOKENS_PER_UNIT)
    tokens = np.where(decision == 1, full["tokens_reasoning"], full["tokens_instruct"])
    correct = np.where(decision == 1, full["correct_reasoning"], full["correct_instruct"])
    np.testing.assert_array_equal(table["tokens"], tokens)
    np.testing.assert_array_equal(table["correct"], correct)
    np.testing.assert_allclose(table["cost"], tokens / TOKENS_PER_UNIT)
    row = routed.routed_summary(table, router.budget).iloc[0]
    assert row["cost"] == pytest.approx(tokens.mean() / TOKENS_PER_UNIT)
    assert row["accuracy"] == pytest.approx(100 * correct.mean())
    assert row["within_budget"] == (row["cost"] <= BUDGET)

    with pytest.raises(judging.JudgingError, match="route-then-judge run judges one mode"):
        judging.merge(tmp_path / "routed", pairs)  # no records: one mode per pair

    # resuming with another router or decision rule is refused; a mode not chosen is an error
    other = routed.routing(pairs, toy_router(1), x, "expected", seed)
    for bad in (other, routed.routing(pairs, router, x, "sampled", seed)):
        with pytest.raises(judging.JudgingError, match="other settings.*route"):
            judging.run_judging(
                pairs,
                FlakyBackend(),
                judging.RunSpec.of_judge(spec, tmp_path / "routed", seed=seed),
                progress=False,
                routing=bad,
            )
    with pytest.raises(judging.JudgingError, match="other settings.*route"):  # nor unrouted
        judging.run_judging(
            pairs,
            FlakyBackend(),
            judging.RunSpec.of_judge(spec, tmp_path / "routed", seed=seed),
            progress=False,
        )
    flipped = routed.Routing(plan.routes.assign(decision=1 - decision), plan.config)
    (res.folder / "routes.csv").unlink()
    with pytest.raises(judging.JudgingError, match="mode the router did not choose"):
        judging.run_judging(
            pairs,
            FlakyBackend(),
            judging.RunSpec.of_judge(spec, tmp_path / "routed", seed=seed),
            progress=False,
            routing=flipped,
        )


def test_sampled_decisions_are_seeded_per_pair():
    ids = [f"q{i:03d}" for i in range(400)]
    p = np.linspace(0.05, 0.95, len(ids))
    first = routed.decide(ids, p, "sampled", 7)
    np.testing.assert_array_equal(first, routed.decide(ids, p, "sampled", 7))
    assert not np.array_equal(first, routed.decide(ids, p, "sampled", 8))
    # a pair's draw does not depend on the other pairs (shards, row order)
    np.testing.assert_array_equal(first[::-1], routed.decide(ids[::-1], p[::-1], "sampled", 7))
    np.testing.assert_array_equal(first[:3], routed.decide(ids[:3], p[:3], "sampled", 7))
    assert abs(first.mean() - p.mean()) < 0.08  # Bernoulli(p) draws
    assert first[p < 0.2].mean() < first[p > 0.8].mean()
    np.testing.assert_array_equal(routed.decide(ids, p, "expected", 0), p > 0.5)
    with pytest.raises(ConfigError, match="unknown decision"):
        routed.decide(ids, p, "greedy", 0)
    with pytest.raises(ConfigError, match="unknown decision"):
        judging.RunSpec("d", "m", "out", decision="greedy")


def test_pair_embeddings_from_a_file_or_the_encoder(tmp_path):
    from test_embed import StandIn

    pairs = make_pairs(5)
    router = toy_router(embedder="stand-in")
    encoder = StandIn(dim=DIM // 3)
    x = routed.pair_embeddings(pairs, router, encoder=encoder, cache_dir=tmp_path / "cache")
    texts = {*pairs["prompt"], *pairs["response_a"], *pairs["response_b"]}
    assert x.shape == (5, DIM) and encoder.n_encoded == len(texts)  # each text once
    np.testing.assert_array_equal(
        x[1, DIM // 3 :],
        np.concatenate([encoder.vector(t, 2) for t in pairs.loc[1, ["response_a", "response_b"]]]),
    )
    more = make_pairs(7)  # a file may hold more pairs, in another order
    path = rio.write_embeddings(
        tmp_path / "e.parquet", [(more["id"][::-1].tolist(), toy_embeddings(7))], "stand-in"
    )
    got = routed.pair_embeddings(pairs, router, path)
    np.testing.assert_array_equal(got, toy_embeddings(7)[::-1][:5])
    with pytest.raises(rec.RecordsError, match="no embedding for this id"):
        routed.pair_embeddings(make_pairs(9), router, path)
    with pytest.raises(
        rec.RacerError,
        match="come from 'stand-in', but this router was trained on embeddings from 'other'",
    ):
        routed.pair_embeddings(pairs, toy_router(embedder="other"), path)


def _write_inputs(folder, n=8, embedder="toy-embedder"):
    pairs = make_pairs(n)
    pairs.to_json(folder / "pairs.jsonl", orient="records", lines=True)
    rio.write_embeddings(
        rio.embeddings_path(folder / "pairs.jsonl"),
        [(pairs["id"].tolist(), toy_embeddings(n))],
        embedder=embedder,
    )
    return pairs, toy_router().save(folder / "router.pt")


def _command(folder, out, *extra):
    return [
        "judge",
        "run",
        "--dataset",
        str(folder / "pairs.jsonl"),
        "--model",
        "Qwen/Qwen3-4B",
        "--backend",
        "vllm",
        "--router",
        str(folder / "router.pt"),
        "--out",
        str(out),
        "-q",
        *extra,
    ]


def test_cli_routed_run_reports_accuracy_and_cost(vllm_stub, tmp_path, capsys):  # noqa: F811
    pairs, _ = _write_inputs(tmp_path)
    argv = _command(tmp_path, tmp_path / "run", "--decision", "sampled", "--seed", "3")
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    table = routed.read_routed(tmp_path / "run")
    assert len(vllm_stub.CALLS) == len(pairs)  # one generation per pair
    calls = {
        c["params"].seed: c["chat_template_kwargs"]["enable_thinking"] for c in vllm_stub.CALLS
    }
    assert calls == {  # each pair's item, thinking on exactly where reasoning was chosen
        judging.item_seed(3, r.id, r.mode): r.mode == "reasoning" for r in table.itertuples()
    }
    s = routed.routed_summary(table, BUDGET).iloc[0]
    assert "8 pairs, 8 items (0 already there, 8 judged now" in out
    assert (
        f"routed (sampled decision, seed 3): 8 pairs, reasoning on {s['reasoning_rate']:.1%}" in out
    )
    assert f"accuracy {s['accuracy']:.2f} %, realized cost {s['cost']:.3f} router cost" in out
    assert f"budget C = {BUDGET:g}" in out and "judge merge" not in out
    assert cli.main(argv) == 0  # done: nothing judged again, the same table
    assert "8 already there, 0 judged now" in capsys.readouterr().out
    pd.testing.assert_frame_equal(routed.read_routed(tmp_path / "run"), table)
    # a router of another embedder, or a file that is no router, is refused in one line
    toy_router(embedder="other").save(tmp_path / "router.pt")
    assert cli.main(_command(tmp_path, tmp_path / "other")) == 2
    assert "embeddings come from 'toy-embedder'" in capsys.readouterr().err
    (tmp_path / "router.pt").write_text("junk")
    assert cli.main(_command(tmp_path, tmp_path / "other")) == 2
    assert "router.pt: not a racer router file" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="self-route"):
        spec = judging.RunSpec("p.jsonl", "m", "x", router="r.pt", self_route=True)
        routed.execute_routed(spec)
    with pytest.raises(ConfigError, match="executed by racer_lib.routing.routed.execute_routed"):
        judging.execute(judging.RunSpec("p.jsonl", "m", "x", router="r.pt"))


def kill_after_parts(command, env, folder, parts):
    """Start ``command`` (the vLLM stand-in slowed down), SIGKILL it once ``folder`` holds
    ``parts`` part files; returns the part files left."""
    proc = subprocess.Popen(
        command,
        env={**env, "VLLM_STUB_DELAY": "0.4"},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 90
    while len(list(folder.glob("part-*.parquet"))) < parts and time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return len(list(folder.glob("part-*.parquet")))


def test_a_killed_routed_cli_run_resumes_without_losses_or_duplicates(tmp_path):
    """SIGKILL `python -m racer_lib judge run --router ...` (vLLM stand-in, slowed down) once
    some parts exist; the resumed run judges each pair once, as an uninterrupted run does."""
    pairs, _ = _write_inputs(tmp_path)
    extra = ("--decision", "sampled", "--seed", "9", "--batch-size", "1")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUB), str(ROOT)])}

    def command(out):
        return [sys.executable, "-m", "racer_lib", *_command(tmp_path, tmp_path / out, *extra)]

    folder = judging.shard_dir(tmp_path / "cut", (0, 1))
    n_before = kill_after_parts(command("cut"), env, folder, 2)
    assert 2 <= n_before < 8 and (folder / "routes.csv").exists()
    assert not (folder / "routed.csv").exists()  # killed before the end
    for out in ("cut", "full"):
        done = subprocess.run(command(out), env=env, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        if out == "cut":
            assert f"8 items ({n_before} already there, {8 - n_before} judged" in done.stdout
    parts, config, _ = judging.read_shards(tmp_path / "cut")
    assert config["route"]["decision"] == "sampled"
    assert len(parts) == 8 and sorted(parts["pair_id"]) == sorted(pairs["id"])  # none lost
    assert not parts.duplicated(["pair_id"]).any()  # none duplicated, one mode per pair
    assert not list(folder.glob(".part-*"))
    full, _, _ = judging.read_shards(tmp_path / "full")
    key = ["pair_id", "task", "order"]
    pd.testing.assert_frame_equal(
        parts[judging.PART_COLUMNS].sort_values(key).reset_index(drop=True),
        full[judging.PART_COLUMNS].sort_values(key).reset_index(drop=True),
    )
    cut_table, full_table = (
        routed.read_routed(tmp_path / "cut"),
        routed.read_routed(tmp_path / "full"),
    )
    pd.testing.assert_frame_equal(cut_table, full_table)
    modes = dict(zip(parts["pair_id"], parts["task"], strict=True))
    assert [modes[i] for i in cut_table["id"]] == cut_table["mode"].tolist()
