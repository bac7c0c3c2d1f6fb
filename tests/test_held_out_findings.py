"""The two findings ``racer router evaluate`` decides on a practitioner's held-out pairs
(``racer_lib.evaluation.metrics.held_out_report``): a planted gain over Random is shown, a
router without signal is not credited with one, and the budget finding follows the cost."""

import numpy as np
import pandas as pd
import pytest

from racer_lib.evaluation import verdicts
from racer_lib.evaluation.metrics import held_out_report
from racer_lib.records.schema import CostUnit

GAIN, OVER = 1.925, 0.05  # the book's SESOIs (racer_lib.paper.effects), points and a share


def _records(n: int, seed: int) -> pd.DataFrame:
    """``n`` pairs: reasoning right on 80 %, instruct on 65 %, independently; reasoning costs
    four to six times instruct's tokens."""
    rng = np.random.default_rng(seed)
    tokens = rng.uniform(80, 120, n)
    return pd.DataFrame({
        "correct_instruct": rng.random(n) < 0.65,
        "correct_reasoning": rng.random(n) < 0.80,
        "tokens_instruct": tokens,
        "tokens_reasoning": tokens * rng.uniform(4, 6, n),
    })  # fmt: skip


def _report(records: pd.DataFrame, decisions: np.ndarray, budget: float) -> dict:
    unit = CostUnit(float(records["tokens_instruct"].mean()))
    return held_out_report(records, decisions, unit, budget, gain_sesoi=GAIN, overspend=OVER)


def test_a_planted_gain_is_shown_and_a_router_without_signal_is_not_credited():
    records = _records(4000, 0)
    helps = records["correct_reasoning"] & ~records["correct_instruct"]
    planted = _report(records, helps.to_numpy(int), budget=2.0)["findings"][0]
    assert planted["decision"] == verdicts.HOLDS and planted["lo"] > GAIN
    blind = (np.random.default_rng(1).random(len(records)) < helps.mean()).astype(int)
    null = _report(records, blind, budget=2.0)["findings"][0]
    assert null["decision"] == verdicts.FAILS and null["hi"] < GAIN
    # on 60 pairs the same blind router is neither: its interval spans the SESOI
    few = _report(records.head(60), blind[:60], 2.0)["findings"][0]
    assert few["decision"] == verdicts.INCONCLUSIVE and few["lo"] < GAIN < few["hi"]


@pytest.mark.parametrize("share, budget, decision", [
    (0.0, 2.0, verdicts.HOLDS),  # All-Instruct: one unit against a budget of two
    (1.0, 2.0, verdicts.FAILS),  # All-Reasoning: about five units
])  # fmt: skip
def test_the_budget_finding_follows_the_realized_cost(share, budget, decision):
    records = _records(2000, 2)
    decisions = (np.random.default_rng(3).random(len(records)) < share).astype(int)
    report = _report(records, decisions, budget)
    found = report["findings"][1]
    assert found["decision"] == decision
    cost = report["methods"][0]["cost"]
    assert found["effect"] == pytest.approx(cost / budget - 1)
    assert "at most 5% over the budget" in found["finding"]
