"""Paced route-then-judge (racer_lib.routing.routed, `racer judge run --router R --pace`): the
budget kept online while the judge runs. A round of one pair decides as BudgetPacer.replay does
on both modes' costs; a round shares its price; the cap holds; an interrupted run (an exception,
or SIGKILL of the CLI) resumes to the uninterrupted run's decisions and prices; a changed file
is named."""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from test_judging import ROOT, STUB, FlakyBackend, make_pairs, vllm_stub  # noqa: F401, F811
from test_judging_routed import _command, _write_inputs, kill_after_parts

from racer_lib import cli, judging
from racer_lib.errors import ConfigError
from racer_lib.routing import routed
from racer_lib.routing.decision import DecisionRule
from racer_lib.routing.pacing import BudgetPacer
from racer_lib.routing.policy import Router, init_layers

DIM, TOKENS_PER_UNIT, BUDGET, N = 6, 20.0, 4.0, 60


class PricedBackend(FlakyBackend):
    """test_judging's fake judge, with reasoning five times as long as instruct: an unpaced
    router that reasons on most pairs overspends ``BUDGET``; every instruct judgment costs
    less than ``BUDGET`` (at most 59 tokens, 2.95 units), as the cap's guarantee assumes."""

    def generate(self, conversations, sampling, *, seeds, chat_template_kwargs=None):
        out = super().generate(
            conversations, sampling, seeds=seeds, chat_template_kwargs=chat_template_kwargs
        )
        long = 5 if (chat_template_kwargs or {}).get("enable_thinking") else 1
        return [dataclasses.replace(g, n_tokens=g.n_tokens * long) for g in out]


def _setup(n=N):
    router = Router(init_layers(0, DIM, "linear"), "linear", DIM, "toy", TOKENS_PER_UNIT, BUDGET)
    pairs = make_pairs(n)
    x = (3 * np.random.default_rng(0).normal(size=(n, DIM))).astype(np.float32)
    return router, pairs, routed.routing(pairs, router, x, "expected", 0)


def _run(out, backend, batch_size=1, **pace):
    router, pairs, plan = _setup()
    run = judging.RunSpec.of_judge(
        judging.JudgeSpec("hybrid", "fake"), out, batch_size=batch_size, router="r.pt", **pace
    )
    backends = {"instruct": backend, "reasoning": backend}
    return routed.execute_paced(run, pairs, plan, DecisionRule(), router, backends=backends)


def _both_modes_costs(tmp_path):
    """Each pair's cost in each mode (instruct, reasoning), from a run judging both."""
    _, pairs, _ = _setup()
    run = judging.RunSpec.of_judge(judging.JudgeSpec("hybrid", "fake"), tmp_path / "both")
    judging.run_judging(pairs, PricedBackend(), run, progress=False)
    full = judging.merge(tmp_path / "both", pairs)
    return full[["tokens_instruct", "tokens_reasoning"]].to_numpy() / TOKENS_PER_UNIT


def _routes(out):
    return pd.read_csv(judging.shard_dir(out, (0, 1)) / "routes.csv", dtype={"id": str})


def test_a_round_of_one_pair_decides_as_the_pacer_replayed_on_both_modes_costs(tmp_path):
    router, _, plan = _setup()
    costs = _both_modes_costs(tmp_path)
    unpaced = costs[np.arange(N), plan.routes["decision"]].mean()
    assert unpaced > 1.2 * BUDGET  # the router alone overspends
    shard, pacer = _run(tmp_path / "paced", PricedBackend(), pace="dual", eta=0.5)
    expected = BudgetPacer(BUDGET, eta=0.5).replay(plan.routes["p_reasoning"], costs)
    routes = _routes(tmp_path / "paced")
    np.testing.assert_array_equal(routes["decision"], expected["decision"])
    np.testing.assert_allclose(routes["mu"], expected["mu"])
    assert routes["round"].tolist() == list(range(N))
    assert pacer.state.spent == pytest.approx(expected["spent"][-1])
    assert (shard.n_pairs, shard.n_items, shard.n_judged) == (N, N, N)
    assert pacer.mean_cost() < unpaced  # the price held the spend down
    assert 0 < routes["decision"].sum() < plan.routes["decision"].sum()
    saved = json.loads((shard.folder / routed.PACER_NAME).read_text())
    assert saved["state"] == pacer.state.to_dict() and saved["settings"] == pacer.settings()


def test_a_round_shares_its_price_and_the_cap_holds_pair_by_pair(tmp_path):
    _, pairs, plan = _setup()
    # the fake's dearest reasoning judgment: 59 tokens, five times, in units of 20
    cap = dict(pace="cap", eta=0.5, cap_cost=59 * 5 / TOKENS_PER_UNIT)
    shard, pacer = _run(tmp_path / "cap", PricedBackend(), batch_size=7, **cap)
    routes = _routes(tmp_path / "cap")
    assert (routes.groupby("round")["mu"].nunique() == 1).all()
    assert routes.groupby("round").size().tolist() == [7] * (N // 7) + [N % 7]
    parts, _ = judging.store.read_parts(shard.folder)
    cost = routed.routed_table(routes, parts, pairs, TOKENS_PER_UNIT)["cost"].to_numpy()
    t = np.arange(1, N + 1)
    assert (np.cumsum(cost) <= BUDGET * t + 1e-9).all()  # C t + slack, slack 0
    assert routes["decision"].sum() > 0
    # dual alone, same rounds: the cap is what keeps every prefix within C t
    _, _ = _run(tmp_path / "dual", PricedBackend(), batch_size=7, pace="dual", eta=0.5)
    dual = _routes(tmp_path / "dual")
    dual_cost = routed.routed_table(dual, parts_of(tmp_path / "dual"), pairs, TOKENS_PER_UNIT)
    assert (np.cumsum(dual_cost["cost"]) > BUDGET * t).any()


def test_the_cap_cost_defaults_to_the_most_a_reasoning_judgment_can_generate():
    router, _, _ = _setup()
    for both, retry, judged in ((False, False, 1), (True, False, 2), (True, True, 4)):
        run = judging.RunSpec.of_judge(
            judging.JudgeSpec("hybrid", "fake", both_orders=both, retry=retry),
            "out",
            router="r.pt",
            pace="cap",
            max_tokens=1000,
        )
        assert routed.run_pacer(run, router, 0.5).cap_cost == 1000 * judged / TOKENS_PER_UNIT
    run = dataclasses.replace(run, cap_cost=3.0)
    assert routed.run_pacer(run, router, 0.5).cap_cost == 3.0
    assert routed.run_pacer(dataclasses.replace(run, pace="dual"), router, 0.5).cap_cost is None


def parts_of(out):
    return judging.store.read_parts(judging.shard_dir(out, (0, 1)))[0]


def test_an_interrupted_paced_run_resumes_to_the_uninterrupted_one(tmp_path):
    _run(tmp_path / "full", PricedBackend(), batch_size=4, pace="dual", eta=0.5)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "cut", PricedBackend(fail_after=9), batch_size=4, pace="dual", eta=0.5)
    cut = _routes(tmp_path / "cut")
    assert 0 < len(cut) < N
    shard, _ = _run(tmp_path / "cut", PricedBackend(), batch_size=4, pace="dual", eta=0.5)
    assert 0 < shard.n_done_before < N and shard.n_done_before + shard.n_judged == N
    pd.testing.assert_frame_equal(_routes(tmp_path / "cut"), _routes(tmp_path / "full"))
    key = ["pair_id", "task", "order"]
    got, want = parts_of(tmp_path / "cut"), parts_of(tmp_path / "full")
    assert not got.duplicated(key).any() and len(got) == N
    pd.testing.assert_frame_equal(
        got[judging.PART_COLUMNS].sort_values(key).reset_index(drop=True),
        want[judging.PART_COLUMNS].sort_values(key).reset_index(drop=True),
    )
    state = [json.loads((judging.shard_dir(tmp_path / o, (0, 1)) / routed.PACER_NAME).read_text())
             for o in ("cut", "full")]  # fmt: skip
    assert state[0] == state[1]


def test_a_changed_routes_file_or_other_settings_are_refused(tmp_path):
    out = tmp_path / "run"
    _run(out, PricedBackend(), batch_size=5, pace="dual", eta=0.5)
    path = judging.shard_dir(out, (0, 1)) / "routes.csv"
    routes = _routes(out)
    with pytest.raises(judging.JudgingError, match="other settings.*pace"):
        _run(out, PricedBackend(), batch_size=5, pace="dual", eta=0.1)
    changed = routes.assign(mu=np.where(routes["round"] == 3, routes["mu"] + 0.25, routes["mu"]))
    changed.to_csv(path, index=False)
    with pytest.raises(judging.JudgingError, match=r"routes.csv: round 3 was saved at price"):
        _run(out, PricedBackend(), batch_size=5, pace="dual", eta=0.5)
    routes.drop(columns=["mu", "round"]).to_csv(path, index=False)
    with pytest.raises(judging.JudgingError, match="not the decisions of a paced run"):
        _run(out, PricedBackend(), batch_size=5, pace="dual", eta=0.5)
    with pytest.raises(ConfigError, match="--pace dual keeps a router's budget: give --router"):
        judging.RunSpec("p.jsonl", "m", "x", pace="dual")
    with pytest.raises(ConfigError, match="unknown pacing"):
        judging.RunSpec("p.jsonl", "m", "x", router="r.pt", pace="fast")


def test_cli_paced_run_prints_the_running_cost(vllm_stub, tmp_path, capsys):  # noqa: F811
    _write_inputs(tmp_path)
    argv = _command(tmp_path, tmp_path / "run", "--pace", "cap", "--batch-size", "3")
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "pair 8: mean cost" in out and "(budget 1.5), price mu" in out
    assert "paced (cap, step 0.005): price mu" in out and "after 8 pairs" in out
    table = routed.read_routed(tmp_path / "run")
    routes = _routes(tmp_path / "run")
    assert table["decision"].tolist() == routes["decision"].tolist()
    assert routes["round"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2]
    assert cli.main(argv) == 0  # done: nothing judged again
    assert "8 already there, 0 judged now" in capsys.readouterr().out


def test_a_killed_paced_cli_run_resumes_without_losses_or_duplicates(tmp_path):
    """SIGKILL `python -m racer_lib judge run --router ... --pace dual` (vLLM stand-in, slowed
    down) between rounds; the resumed run's decisions, prices and parts are an uninterrupted
    run's."""
    _write_inputs(tmp_path)
    extra = ("--pace", "dual", "--eta", "0.5", "--batch-size", "1")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUB), str(ROOT)])}

    def command(out):
        return [sys.executable, "-m", "racer_lib", *_command(tmp_path, tmp_path / out, *extra)]

    folder = judging.shard_dir(tmp_path / "cut", (0, 1))
    assert 3 <= kill_after_parts(command("cut"), env, folder, 3) < 8
    for out in ("cut", "full"):
        done = subprocess.run(command(out), env=env, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    pd.testing.assert_frame_equal(_routes(tmp_path / "cut"), _routes(tmp_path / "full"))
    parts = parts_of(tmp_path / "cut")
    assert len(parts) == 8 and not parts.duplicated(["pair_id"]).any()
    pd.testing.assert_frame_equal(
        routed.read_routed(tmp_path / "cut"), routed.read_routed(tmp_path / "full")
    )


def _part_row(pid: str, tokens: int) -> dict:
    row = dict.fromkeys(judging.store.PART_COLUMNS)
    return row | {"pair_id": pid, "task": "instruct", "order": "ab", "model": "m", "seed": 0,
                  "enable_thinking": False, "n_tokens": tokens, "retried": False}  # fmt: skip


def test_a_shards_parts_are_parsed_once_while_they_stay_the_same(tmp_path, monkeypatch):
    """A paced run reads its shard's parts after every round: a part already read is not
    parsed again, a new one is appended, and a part removed or rewritten reads the folder
    afresh, so what read_parts returns is always what the files hold."""
    store, parsed = judging.store, []
    real = pd.read_parquet
    monkeypatch.setattr(pd, "read_parquet", lambda f, *a, **k: parsed.append(f.name) or real(f))
    first = store.write_part(tmp_path, [_part_row("p0", 3)])
    store.write_part(tmp_path, [_part_row("p1", 4)])
    assert list(store.read_parts(tmp_path)[0]["pair_id"]) == ["p0", "p1"]
    third = store.write_part(tmp_path, [_part_row("p2", 5)])
    frame, files = store.read_parts(tmp_path)
    assert list(frame["pair_id"]) == ["p0", "p1", "p2"] and files[-1] == third
    assert parsed == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert list(frame["part"]) == [f.name for f in files]
    third.unlink()  # removed: the folder is read afresh
    assert list(store.read_parts(tmp_path)[0]["pair_id"]) == ["p0", "p1"]
    rewritten = _part_row("q0", 9) | {"text": "a longer answer"}  # another size too
    pd.DataFrame([rewritten]).to_parquet(first)  # rewritten in place: the same inode
    frame, _ = store.read_parts(tmp_path)
    assert list(frame["pair_id"]) == ["q0", "p1"] and list(frame["n_tokens"]) == [9, 4]
