"""A degenerate router is named (issue 43, item 3): `racer router train` says in one line when
its router sends (nearly) every validation pair to one mode, with what to try, and says nothing
when it routes; a budget no routing can reach (1e308) trains cleanly at the dearest cost."""

import warnings

import pytest

from racer_lib import cli
from racer_lib.routing.decision import degenerate
from racer_lib.routing.policy import Router

FAST = ["--arch", "linear", "--epochs", "25", "--lr", "0.05", "--dual-step", "0.05", "-q"]


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    path = tmp_path_factory.mktemp("degenerate") / "mix.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--recipe", "training_mix"]
    assert cli.main([*argv, "--scale", "0.03", "--dim", "16", "--out", str(path)]) == 0
    return path


def _train(path, budget: str, capsys) -> str:
    capsys.readouterr()
    out = path.with_name(f"r{budget}.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow, no warning at all
        assert cli.main(["router", "train", str(path), "--budget", budget, "--out", str(out),
                         *FAST]) == 0  # fmt: skip
    return capsys.readouterr().out


def test_it_fires_on_a_router_that_never_reasons(mix, capsys):
    out = _train(mix, "1.05", capsys)
    warning = [line for line in out.splitlines() if line.startswith("warning: degenerate")]
    assert len(warning) == 1
    assert "reasons on 0.0% of the validation pairs, All-Instruct in effect" in warning[0]


def test_it_stays_silent_on_a_router_that_routes(mix, capsys):
    out = _train(mix, "3", capsys)
    assert "degenerate router" not in out and "reasoning on 4" in out


def test_an_unreachable_budget_trains_at_the_dearest_cost(mix, capsys):
    out = _train(mix, "1e308", capsys)
    assert "the constraint is inactive; trained and saved at C = " in out
    budget = Router.load(mix.with_name("r1e308.pt")).budget
    assert 1 < budget < 100 and f"C = {budget:.4g}" in out


ENDS = {
    "All-Instruct": {"accuracy": 80.0, "cost": 1.0},
    "All-Reasoning": {"accuracy": 90.0, "cost": 5.0},
}


@pytest.mark.parametrize(
    ("rate", "budget", "says"),
    [
        (0.0, 3.0, "All-Instruct in effect"),
        (0.01, 3.0, "try a larger learning rate"),
        (0.995, 6.0, "no routing is needed at this budget"),
        (1.0, 3.0, "try a larger --dual-step"),
        (0.02, 3.0, None),
        (0.98, 3.0, None),
    ],
)
def test_the_rule_and_its_advice(rate, budget, says):
    note = degenerate(rate, budget, ENDS)
    assert (note is None) if says is None else (says in note)
