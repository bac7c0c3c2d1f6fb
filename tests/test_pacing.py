"""`racer_lib.routing.BudgetPacer` (issue 43, item 4): online dual descent on a cost price
keeps the realized mean cost within the budget on a stream whose reasoning cost drifts upward
half-way, where the router alone overspends; a resumed stream decides as an uninterrupted
one; the cap never lets the cumulative cost past C t + slack."""

import json

import numpy as np
import pandas as pd
import pytest

from racer_lib import cli
from racer_lib.routing import BudgetPacer, PacerState

BUDGET = 3.0


def drifting_stream(seed: int, n: int = 500):
    """Scores uniform on [0, 1] (the argmax rule reasons on half the pairs); instruct costs
    about 1; reasoning costs about 4 on the first half and 8 on the second (gamma noise)."""
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=n)
    instruct = rng.gamma(4, 0.25, n)
    reasoning = np.where(np.arange(n) < n // 2, rng.gamma(4, 1.0, n), rng.gamma(4, 2.0, n))
    return scores, np.column_stack([instruct, reasoning])


@pytest.mark.parametrize("seed", range(5))
def test_paced_cost_keeps_the_budget_where_the_router_alone_overspends(seed):
    scores, costs = drifting_stream(seed)
    rows = np.arange(len(scores))
    alone = (scores > 0.5).astype(int)
    assert costs[rows, alone].mean() > BUDGET * 1.01  # the drift makes the router overspend
    pacer = BudgetPacer(BUDGET, threshold=0.5)
    paced = pacer.replay(scores, costs)
    assert pacer.mean_cost() <= BUDGET * 1.01
    assert pacer.mean_cost() == pytest.approx(costs[rows, paced["decision"]].mean())
    # the price only removes reasoning: never a pair the router alone would not reason on
    assert (paced["decision"] <= alone).all() and (paced["mu"] >= 0).all()
    # and it does not starve the stream: most of the budget is spent
    assert pacer.mean_cost() > 0.85 * BUDGET


def test_a_resumed_stream_decides_as_an_uninterrupted_one():
    scores, costs = drifting_stream(7)
    whole = BudgetPacer(BUDGET, threshold=0.5).replay(scores, costs)
    first = BudgetPacer(BUDGET, threshold=0.5)
    head = first.replay(scores[:180], costs[:180])
    saved = json.loads(json.dumps(first.state.to_dict()))  # as the state file holds it
    second = BudgetPacer(BUDGET, threshold=0.5, state=PacerState.from_dict(saved))
    tail = second.replay(scores[180:], costs[180:])
    for key in ("decision", "mu", "spent"):
        np.testing.assert_array_equal(np.concatenate([head[key], tail[key]]), whole[key])


@pytest.mark.parametrize("seed", range(5))
def test_the_cap_never_lets_the_cumulative_cost_past_c_t_plus_slack(seed):
    scores, costs = drifting_stream(seed)
    costs[:, 0] = np.minimum(costs[:, 0], BUDGET)  # the instruct mode alone is within budget
    for slack in (0.0, 5.0):
        pacer = BudgetPacer(BUDGET, threshold=0.5, mode="cap", slack=slack,
                            cap_cost=float(costs[:, 1].max()), eta=0.5)  # fmt: skip
        spent = pacer.replay(scores, costs)["spent"]
        assert (spent <= BUDGET * np.arange(1, len(spent) + 1) + slack + 1e-9).all()
    # the router alone does go past it: the cap does work
    spent = np.cumsum(costs[np.arange(len(scores)), (scores > 0.5).astype(int)])
    assert (spent > BUDGET * np.arange(1, len(spent) + 1)).any()


def test_records_route_paces_saves_its_state_and_resumes(tmp_path, capsys):
    path = tmp_path / "mix.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--recipe", "training_mix"]
    assert cli.main([*argv, "--scale", "0.03", "--dim", "16", "--out", str(path)]) == 0
    router = tmp_path / "r.pt"
    fast = ["--arch", "linear", "--epochs", "25", "--lr", "0.05", "--dual-step", "0.05", "-q"]
    assert cli.main(["router", "train", str(path), "--budget", "3", "--out", str(router),
                     *fast]) == 0  # fmt: skip
    route = ["records", "route", str(path), "--router", str(router), "--pace", "dual"]
    whole, part = tmp_path / "whole.csv", tmp_path / "part.csv"
    capsys.readouterr()
    assert cli.main([*route, "--out", str(whole)]) == 0
    out = capsys.readouterr().out
    assert "mean cost" in out and "(budget 3)" in out and "price mu" in out
    assert cli.main([*route, "--out", str(part), "--limit", "400"]) == 0
    assert "resume with --resume" in capsys.readouterr().out
    assert len(pd.read_csv(part)) == 400
    state = json.loads((tmp_path / "part.pacer.json").read_text())["state"]
    assert state["t"] == 400 and state["mu"] >= 0
    assert cli.main([*route, "--out", str(part), "--resume", "--eta", "0.5"]) == 2
    assert "resume with the same router and options" in capsys.readouterr().err
    assert cli.main([*route, "--out", str(part), "--resume"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(part), pd.read_csv(whole))
    assert (tmp_path / "part.pacer.json").read_text() == (tmp_path / "whole.pacer.json").read_text()


def test_the_cli_default_step_is_the_pacers():
    from racer_lib.cli import common
    from racer_lib.judging import RunSpec

    assert common.DEFAULT_ETA == BudgetPacer.eta == RunSpec.eta
