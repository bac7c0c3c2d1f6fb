"""One decision rule per router (issue 43, item 2): the rule a router file states is what
`router info --records`, `router evaluate`, `records route`, `judge run --router` (its
routing step) and `RacerRouter.predict` apply, so they give the same decisions and report the
same realized cost on the same records."""

import json

import numpy as np
import pandas as pd
import pytest

from racer_lib import cli
from racer_lib.errors import ConfigError
from racer_lib.records import io as rio
from racer_lib.records import schema as rec
from racer_lib.routing import RacerRouter, routed
from racer_lib.routing.decision import DecisionRule
from racer_lib.routing.policy import Router

FAST = ["--arch", "linear", "--epochs", "25", "--lr", "0.05", "--dual-step", "0.05", "-q"]


@pytest.fixture(scope="module")
def routers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rule")
    path = folder / "mix.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--recipe", "training_mix"]
    assert cli.main([*argv, "--scale", "0.03", "--dim", "16", "--out", str(path)]) == 0
    out = {}
    for rule in ("argmax", "sampled"):
        out[rule] = folder / f"{rule}.pt"
        train = ["router", "train", str(path), "--budget", "1.6", "--out", str(out[rule])]
        assert cli.main([*train, *FAST, "--rule", rule, "--rule-seed", "5"]) == 0
    return path, out


@pytest.mark.parametrize("rule", ["argmax", "sampled"])
def test_every_command_applies_the_files_rule_and_reports_one_cost(routers, rule, capsys):
    path, files = routers
    router_path = files[rule]
    router = Router.load(router_path)
    assert DecisionRule.of(router) == DecisionRule(rule, 5)
    records, x = rio.load(path)
    ids = records["id"].to_numpy()
    capsys.readouterr()
    # the estimator
    est = RacerRouter.load(router_path)
    decisions = est.predict(x, ids)
    cost = est.cost(x, rec.token_matrix(records), ids)
    accuracy = 100 * est.score(x, rec.correct_matrix(records), ids=ids)
    # router info --records
    assert cli.main(["router", "info", str(router_path), "--records", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rule"] == {"name": rule, "seed": 5}
    assert info["routed"]["cost"] == pytest.approx(cost, abs=1e-12)
    assert info["routed"]["accuracy"] == pytest.approx(accuracy, abs=1e-9)
    # router evaluate
    assert cli.main(["router", "evaluate", str(path), "--router", str(router_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rule"] == {"name": rule, "seed": 5}
    assert report["methods"][0]["cost"] == pytest.approx(cost, abs=1e-12)
    assert report["methods"][0]["reasoning_rate"] == pytest.approx(decisions.mean())
    # records route: the same decisions, the same cost printed
    out = path.with_name(f"{rule}.routes.csv")
    assert cli.main(["records", "route", str(path), "--router", str(router_path), "--out",
                     str(out)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    np.testing.assert_array_equal(pd.read_csv(out)["decision"], decisions)
    assert (
        f"realized cost {cost:.3f} cost units" in printed
        and f"accuracy {accuracy:.2f} %" in printed
    )
    # judge run --router's routing step, with --decision left at its default
    chosen = routed.run_rule(router, "expected", 0)
    plan = routed.routing(records, router, x, chosen.judging_name, chosen.seed)
    np.testing.assert_array_equal(plan.routes["decision"], decisions)
    if rule == "sampled":  # a draw, not the more probable mode, and seeded by id
        p = router.p_reasoning(x)
        assert not np.array_equal(decisions, (p > 0.5).astype(int))
        shuffled = np.random.default_rng(0).permutation(len(ids))
        np.testing.assert_array_equal(est.predict(x[shuffled], ids[shuffled]), decisions[shuffled])


def test_one_router_one_rule(routers, capsys):
    path, files = routers
    argmax = Router.load(files["argmax"])
    with pytest.raises(ConfigError, match="states the rule argmax"):
        routed.run_rule(argmax, "sampled", 3)
    # a file that states no rule (the book's trainer) routes by argmax, or by --decision
    bare = Router(argmax.layers, argmax.arch, argmax.in_dim, argmax.embedder,
                  argmax.tokens_per_unit, argmax.budget)  # fmt: skip
    assert DecisionRule.of(bare) == DecisionRule("argmax", 0)
    assert routed.run_rule(bare, "sampled", 3) == DecisionRule("sampled", 3)
    assert cli.main(["records", "route", str(path), "--router", str(files["argmax"]),
                     "--seed", "3"]) == 2  # fmt: skip
    assert "the rule its file states" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["argmax", "sampled"])
def test_a_rules_scores_above_its_threshold_are_its_decisions(name):
    """What a pacer shifts (scores and the rule's threshold) decides as the rule does."""
    rule = DecisionRule(name, 7)
    p = np.random.default_rng(0).random(200)
    ids = [f"pair-{i}" for i in range(200)]
    scores, threshold = rule.scores(ids, p)
    assert threshold == rule.threshold
    np.testing.assert_array_equal((scores > rule.threshold).astype(int), rule.decide(ids, p))
