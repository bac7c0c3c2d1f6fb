"""Policy evaluation on hand-made records: Random at matched cost and RouteLLM's metrics."""

import numpy as np
import pandas as pd
import pytest

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import claims
from racer_lib.paper.chapters import llmbar_judges as ch13
from racer_lib.paper.chapters import reasoning_vs_instruct as ch04
from racer_lib.paper.chapters import self_routing as ch11
from racer_lib.records import schema as rec
from racer_lib.records.summary import mode_summary


@pytest.fixture
def four_pairs():
    """Instruct right on pairs 0-1, reasoning on 0-2; reasoning costs three times the tokens."""
    return pd.DataFrame(
        {
            "correct_instruct": [True, True, False, False],
            "correct_reasoning": [True, True, True, False],
            "tokens_instruct": [10, 10, 10, 10],
            "tokens_reasoning": [30, 30, 30, 30],
        }
    )


def test_random_at_cost_matches_the_cost_and_lies_on_the_chord(four_pairs):
    point = evaluate.random_at_cost(four_pairs, 2.0)
    assert point["cost"] == pytest.approx(2.0) and point["reasoning_rate"] == pytest.approx(0.5)
    assert point["accuracy"] == pytest.approx(62.5)
    assert evaluate.random_at_cost(four_pairs, 9.0)["reasoning_rate"] == 1.0  # clipped
    assert evaluate.random_at_cost(four_pairs, 0.5)["reasoning_rate"] == 0.0


def test_random_scores_half_on_apgr_and_the_midpoint_on_auc(four_pairs):
    points = pd.DataFrame([evaluate.random_point(four_pairs, q) for q in (0.2, 0.5, 0.7)])
    m = evaluate.routing_metrics(points, four_pairs)
    assert m["auc"] == pytest.approx(62.5)
    assert m["apgr"] == pytest.approx(0.5)
    assert m["cpt"] == pytest.approx(0.5)


def test_a_router_that_reasons_only_where_it_helps(four_pairs):
    oracle = pd.DataFrame([evaluate.policy_point(four_pairs, [0, 0, 1, 0])])
    assert oracle.iloc[0]["cost"] == pytest.approx(1.5)
    m = evaluate.routing_metrics(oracle, four_pairs)
    # accuracy 50 -> 75 over cost 1 -> 1.5, then flat at 75 to cost 3; mean over [1, 3]
    assert m["auc"] == pytest.approx((0.5 * 62.5 + 1.5 * 75) / 2)
    assert m["apgr"] == pytest.approx(0.25 * 0.5 + 0.75)
    assert m["cpt"] == pytest.approx(0.125)


def test_seeds_at_one_rate_are_averaged_and_a_zero_gap_gives_nan(four_pairs):
    pts = pd.DataFrame({"reasoning_rate": [0.5, 0.5], "accuracy": [60.0, 70.0], "cost": [2.0, 2.0]})
    assert evaluate.routing_metrics(pts, four_pairs)["apgr"] == pytest.approx(
        0.5 * (0.5 * 0.6) + 0.5 * (0.6 + 1) / 2
    )
    flat = four_pairs.assign(correct_reasoning=four_pairs["correct_instruct"])
    m = evaluate.routing_metrics(pts.assign(accuracy=50.0), flat)
    assert np.isnan(m["apgr"]) and np.isnan(m["cpt"]) and m["auc"] == pytest.approx(50.0)


# ----------------------------------------------------- cost in the training unit (issue 16)


@pytest.fixture
def train_and_shifted():
    """A training set whose instruct answers have 10 and 30 tokens (one unit = 20 tokens) and a
    shifted set whose instruct answers are twice as long; the reasoning answers are the same."""
    train = pd.DataFrame(
        {
            "correct_instruct": [True, False],
            "correct_reasoning": [True, True],
            "tokens_instruct": [10, 30],
            "tokens_reasoning": [40, 80],
        }
    )
    return train, train.assign(tokens_instruct=[20, 60])


def test_policy_point_in_the_training_unit_sees_a_longer_instruct_answer(train_and_shifted):
    train, shifted = train_and_shifted
    unit = rec.CostUnit.from_records(train)
    assert unit.tokens_per_unit == 20
    assert list(evaluate.policy_point(train, 0.0)) == ["accuracy", "cost", "reasoning_rate"]
    at_home = evaluate.policy_point(train, 0.0, unit)
    assert list(at_home) == ["accuracy", "cost", "train_cost", "reasoning_rate"]
    assert at_home["cost"] == at_home["train_cost"] == 1.0
    # All-Instruct after the shift: 1.0 of the set's own instruct tokens, 2.0 training units.
    ends = evaluate.endpoints(shifted, unit)
    assert ends["All-Instruct"]["cost"] == 1.0
    assert ends["All-Instruct"]["train_cost"] == pytest.approx(2.0)
    # All-Reasoning: 120 / 80 tokens on its own, a mean 60 tokens = 3 training units.
    assert ends["All-Reasoning"]["cost"] == pytest.approx(1.5)
    assert ends["All-Reasoning"]["train_cost"] == pytest.approx(3.0)
    # A per-pair policy: mean of 0.75 * 20 + 0.25 * 40 and 0.5 * 60 + 0.5 * 80 = 47.5 tokens.
    point = evaluate.policy_point(shifted, [0.25, 0.5], unit)
    assert point["train_cost"] == pytest.approx(47.5 / 20)
    assert point["cost"] == pytest.approx(47.5 / 40)
    assert point["accuracy"] == pytest.approx(100 * (1 + 0.5) / 2)
    assert evaluate.random_point(shifted, 0.5, unit)["train_cost"] == pytest.approx(2.5)


def test_over_seeds_judges_violations_in_the_training_unit(train_and_shifted):
    train, shifted = train_and_shifted
    unit = rec.CostUnit.from_records(train)
    # Two methods, two seeds each, at budget C = 2.1 training units, on the shifted set.
    policies = {"ACER": ([0.2, 0.2], [0.0, 0.4]), "RACER": ([0.0, 0.0], [0.0, 0.1])}
    runs = pd.DataFrame(
        [
            {"method": m, "seed": s, "budget": 2.1, **evaluate.policy_point(shifted, p, unit)}
            for m, seeds in policies.items()
            for s, p in enumerate(seeds)
        ]
    )
    assert (runs["cost"] < 1.3).all()  # every run is within budget in the set's own unit
    summary = evaluate.over_seeds(runs, ["method"]).set_index("method")
    assert list(summary.columns) == [
        "accuracy_mean",
        "accuracy_sd",
        "cost_mean",
        "cost_sd",
        "train_cost_mean",
        "train_cost_sd",
        "reasoning_rate",
        "violation_rate",
        "seeds",
        "cost_unit",
    ]
    want = runs.assign(over=runs["train_cost"] > 2.1).groupby("method")["over"].mean()
    assert summary["violation_rate"].to_dict() == want.to_dict() == {"ACER": 1.0, "RACER": 0.0}
    assert set(summary["cost_unit"]) == {"training unit"}
    assert summary.loc["ACER", "train_cost_mean"] == pytest.approx(
        runs.loc[runs["method"] == "ACER", "train_cost"].mean()
    )
    # The set's own unit, asked for or without a training-unit cost: no run violates.
    own = evaluate.over_seeds(runs, ["method"], cost_col="cost")
    assert (own["violation_rate"] == 0).all() and set(own["cost_unit"]) == {
        "set's own All-Instruct"
    }
    plain = evaluate.over_seeds(runs.drop(columns="train_cost"), ["method"])
    assert "train_cost_mean" not in plain and (plain["violation_rate"] == 0).all()
    assert set(plain["cost_unit"]) == {"set's own All-Instruct"}
    # A run without a training-unit cost cannot pass unnoticed.
    with pytest.raises(ValueError, match="1 of 4 runs have no 'train_cost'"):
        evaluate.over_seeds(runs.assign(train_cost=[np.nan, 1, 1, 1]), ["method"])


# ---------------------------------------------------------------------- Fig. 2 and its reading


def _records(
    correct_instruct, correct_reasoning, tokens_instruct=10, tokens_reasoning=30, **columns
):
    """Paired records of hand-made outcomes (verdicts follow correctness, label 1 = A)."""
    r0, r1 = np.asarray(correct_instruct, bool), np.asarray(correct_reasoning, bool)
    n = len(r0)
    return pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(n)],
            "label": 1,
            "verdict_instruct": np.where(r0, "A", "B"),
            "verdict_reasoning": np.where(r1, "A", "B"),
            "correct_instruct": r0,
            "correct_reasoning": r1,
            "tokens_instruct": np.broadcast_to(tokens_instruct, n),
            "tokens_reasoning": np.broadcast_to(tokens_reasoning, n),
            **columns,
        }
    )


def test_with_mean_tokens_appends_each_groups_mean():
    recs = _records(
        [1, 0, 1],
        [1, 1, 0],
        tokens_instruct=[2, 4, 10],
        tokens_reasoning=[20, 40, 90],
        judge=["a", "a", "b"],
    )
    out = evaluate.with_mean_tokens(mode_summary(recs, ["judge"]), recs, ["judge"])
    assert list(out.columns[-2:]) == ["mean_tokens_instruct", "mean_tokens_reasoning"]
    assert list(out["mean_tokens_instruct"]) == [3.0, 10.0]
    assert list(out["mean_tokens_reasoning"]) == [30.0, 90.0]
    assert list(out["n"]) == [2, 1]


def test_agreement_table_gives_shares_and_the_pairs_one_mode_gets_right():
    # judge a: both right, only reasoning, only reasoning, both wrong
    recs = _records([1, 0, 0, 0], [1, 1, 1, 0], judge="a")
    summary = mode_summary(recs, ["judge"])
    summary["headroom"] = evaluate.headroom(summary)
    row = ch13.agreement_table(summary).iloc[0]
    assert (row["both_right"], row["only_reasoning"], row["only_instruct"], row["both_wrong"]) == (
        1,
        2,
        0,
        1,
    )
    assert row["share_only_reasoning"] == pytest.approx(0.5)
    assert row["share_one_mode_right"] == pytest.approx(0.5)
    assert row["oracle_accuracy"] == pytest.approx(75.0)
    assert row["headroom"] == pytest.approx(0.0)  # reasoning alone is the oracle here
    assert sum(row[f"share_{c}"] for c in evaluate.AGREEMENT_CELLS) == pytest.approx(1.0)


def test_fig2_findings_check_the_domains_and_the_headroom_by_size():
    # qwen3-1.7b: reasoning gains 100 points on math, none on safety (holds);
    # qwen3-4b: the other way round (does not hold); the 8b has no safety pairs (not checked)
    small = pd.concat(
        [
            _records([0, 0], [1, 1], judge="qwen3-1.7b", domain="math"),
            _records([1, 0], [1, 0], judge="qwen3-1.7b", domain="safety"),
        ]
    )
    mid = pd.concat(
        [
            _records([1, 1], [1, 1], judge="qwen3-4b", domain="math"),
            _records([0, 1], [1, 1], judge="qwen3-4b", domain="safety"),
        ]
    )
    large = _records([1, 1], [1, 1], judge="qwen3-8b", domain="coding")
    recs = pd.concat([small, mid, large], ignore_index=True)
    # each check reads one draw: on simulated records a check of the simulator, decided
    checks = ch04.fig2_findings(recs, "simulated")
    columns = ["finding", "key", "judge", "observed", *claims.VERDICT_COLUMNS, "status", "basis"]
    assert list(checks.columns) == columns
    assert (checks["test"] == claims.NO_TEST).all()
    domain = checks[checks["finding"].str.startswith("reasoning gains")]
    decided = dict(zip(domain["judge"], domain["decision"], strict=True))
    assert decided == {"qwen3-1.7b": "holds", "qwen3-4b": "fails"}
    status = dict(zip(domain["judge"], domain["status"], strict=True))
    assert status == {"qwen3-1.7b": claims.BY_CONSTRUCTION, "qwen3-4b": claims.NOT_REPRODUCED}
    assert "min gain math/coding 100.0 pts" in domain["observed"].iloc[0]
    # headroom: 1.7b 0 points (reasoning alone is the oracle), 4b 0, 8b 0: not shrinking
    size = checks.iloc[-1]
    assert size["judge"] == "qwen3-1.7b > qwen3-4b > qwen3-8b"
    assert size["observed"] == "0.0 > 0.0 > 0.0" and size["decision"] == "fails"
    # on real records one draw with no test decides nothing: every check is inconclusive
    real = ch04.fig2_findings(recs.assign(source="release:hand-made"), "release")
    assert (real["status"] == claims.INCONCLUSIVE).all()
    assert real["note"].str.startswith("no test ran").all()
    assert list(real["observed"]) == list(checks["observed"])


def test_fig2_findings_on_simulated_records_are_by_construction():
    """The per-domain gains and the judges' rho are inputs of racer_lib.records.simulate: on
    simulated
    records both findings are a check of the simulator: by construction where they hold, not
    reproduced where they do not (the simulator did not contain them)."""
    recs = pd.concat(
        [
            _records([0, 0], [1, 1], judge="qwen3-1.7b", domain="math"),
            _records([1, 0], [1, 0], judge="qwen3-1.7b", domain="safety"),
            _records([1, 1], [1, 1], judge="qwen3-4b", domain="math"),
            _records([0, 1], [1, 1], judge="qwen3-4b", domain="safety"),
        ],
        ignore_index=True,
    ).assign(source="simulated:hand-made")
    checks = ch04.fig2_findings(recs, rec.provenance(recs))
    ordering = ~checks["finding"].str.startswith("most cost-effective")
    assert sorted(checks.loc[ordering, "decision"]) == ["fails", "fails", "holds"]  # both ...
    given = [
        claims.BY_CONSTRUCTION if d == "holds" else claims.NOT_REPRODUCED
        for d in checks["decision"]
    ]
    assert list(checks["status"]) == given  # ... and neither is evidence of the paper
    assert checks["basis"].str.startswith("simulator input").all()


def test_fig2_findings_headroom_shrinks_with_size():
    # instruct and reasoning each right on a different pair: headroom 50, then 25, then 0
    recs = pd.concat(
        [
            _records([1, 0], [0, 1], judge="qwen3-1.7b", domain="chat"),
            _records([1, 0, 1, 0], [0, 1, 1, 0], judge="qwen3-4b", domain="chat"),
            _records([1, 0], [1, 0], judge="qwen3-8b", domain="chat"),
        ]
    )
    checks = ch04.fig2_findings(recs, "simulated")
    assert len(checks) == 1  # no math or safety pairs: only the size check
    assert checks.iloc[0]["observed"] == "50.0 > 25.0 > 0.0"
    assert checks.iloc[0]["decision"] == "holds"
    assert checks.iloc[0]["status"] == claims.BY_CONSTRUCTION
    assert ch04.fig2_findings(recs, "generated").iloc[0]["status"] == claims.INCONCLUSIVE
    one = ch04.fig2_findings(recs[recs["judge"] == "qwen3-4b"], "generated")
    assert one.empty and "status" in one.columns  # one judge: nothing checked


def _judge_records(judge, cells, copies=20):
    """``judge``'s records: per subset, (instruct, reasoning) outcomes, each pair ``copies``
    times (so that the exact tests decide while the shares stay those of the pattern)."""
    parts = [
        _records(np.tile(ins, copies), np.tile(rea, copies), judge=judge, subset=subset)
        for subset, (ins, rea) in cells.items()
    ]
    return pd.concat(parts, ignore_index=True)


def test_fig2_reading_states_what_the_tables_show():
    """The chapter's input: :func:`delta_tables` of the records (per judge and per judge and
    subset, with the pairs and discordant counts the tests read) and their
    :func:`agreement_table`."""
    x = _judge_records(  # s1: +25 points, s2: -33.3; overall -10, one mode right on 30 %
        "x", {"s1": ([1, 1, 0, 0], [1, 1, 1, 0]), "s2": ([1, 1, 1, 1, 0, 0], [1, 0, 0, 1, 0, 0])}
    )
    y = _judge_records(  # s1: +50, s2: +33.3; overall +40, one mode right on 40 %
        "y", {"s1": ([0, 0, 0, 1], [1, 1, 0, 1]), "s2": ([1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0])}
    )
    by_subset, by_judge = ch13.delta_tables(pd.concat([x, y], ignore_index=True))
    agreement = ch13.agreement_table(by_judge)
    reading = ch13.fig2_reading(by_judge, by_subset, agreement, "release")
    columns = ["finding", "key", "observed", *claims.VERDICT_COLUMNS, "p_other", "status", "basis"]
    assert list(reading.columns) == columns  # decided by a verdict: no "holds"
    assert list(reading["finding"]) == [ch13.LOWERS, ch13.CELL_LE0, ch13.MINORITY, ch13.IMPROVES]
    assert list(reading["observed"]) == [
        "1 of 2 judges have a lower accuracy with CoT on these pairs: x -10.0",
        "1 of 4 cells; the lowest is x on s2 (-33.3 points)",
        "share of pairs with exactly one mode right: from 30.0 % (x) to 40.0 % (y)",
        "ΔAccuracy (CoT − Vanilla) from -10.0 to +40.0 points over 2 judges (mean +15.0)",
    ]
    # x is shown to lose overall and on s2; both judges' one-mode share is shown below half;
    # "every judge gains" fails on x
    assert list(reading["decision"]) == ["holds", "holds", "holds", "fails"]
    assert list(reading["status"]) == [claims.REPRODUCED] * 3 + [claims.NOT_REPRODUCED]
    assert reading["n"].tolist() == [200, 80, 200, 200]  # the fewest pairs a member tested
    # the simulator is given the first three (endpoints, gains, rho): by construction there
    sim = ch13.fig2_reading(by_judge, by_subset, agreement, "simulated")
    assert list(sim["status"]) == [claims.BY_CONSTRUCTION] * 3 + [claims.NOT_REPRODUCED]
    no_loss = [t.assign(delta_accuracy=1.0) for t in (by_judge, by_subset)]
    gains = ch13.fig2_reading(*no_loss, agreement, "release")
    assert gains["observed"][0] == "0 of 2 judges have a lower accuracy with CoT on these pairs"


def _two_orders():
    """One judge, four pairs in two subsets, judged in both orders (label 1 = A everywhere)."""
    original = _records([1, 1, 0, 0], [1, 0, 1, 0], judge="j", subset=["s", "s", "t", "t"])
    original.loc[3, "verdict_reasoning"] = "unparseable"
    swapped = _records([1, 0, 0, 0], [1, 0, 1, 1], judge="j", subset=["s", "s", "t", "t"])
    swapped.loc[3, "verdict_instruct"] = "unparseable"
    swapped.loc[[1, 2, 3], "verdict_reasoning"] = ["B", "A", "A"]
    return original, swapped


def test_llmbar_statistics_mismatches_list_every_cell_that_differs():
    original, swapped = _two_orders()
    stats = {
        ("j", "instruct"): {
            "s": {"correct_False": [2, 2], "correct_True": [1, 2]},
            "t": {"correct_False": [0, 2], "correct_True": [0, 2]},
        },
        ("j", "reasoning"): {
            "s": {"correct_False": [1, 2], "correct_True": [1, 2]},
            "t": {"correct_False": [1, 2], "correct_True": [2, 2]},
        },
    }
    by_order = {"original": original, "swapped": swapped}
    assert ch13.llmbar_statistics_mismatches(by_order, stats, ["s", "t"]) == []
    stats[("j", "reasoning")]["t"]["correct_True"] = [1, 2]
    assert ch13.llmbar_statistics_mismatches(by_order, stats, ["s", "t"]) == [
        ("j", "reasoning", "swapped", "t", (2, 2), [1, 2])
    ]


def test_position_bias_counts_consistent_verdicts_and_first_positions():
    original, swapped = _two_orders()
    table = ch13.position_bias(
        original, swapped.iloc[::-1], ["j"], {"instruct": "Vanilla", "reasoning": "CoT"}
    )
    vanilla, cot = table.iloc[0], table.iloc[1]
    assert (vanilla["prompt"], cot["prompt"]) == ("Vanilla", "CoT")
    # instruct: original A, A, B, B; swapped A, B, B, unparseable -> same on pairs 0 and 2
    assert vanilla["consistent"] == 2 and vanilla["consistency"] == pytest.approx(50.0)
    assert vanilla["acc_original"] == 50.0 and vanilla["acc_swapped"] == 25.0
    assert vanilla["acc_swapped_minus_original"] == pytest.approx(-25.0)
    assert vanilla["right_in_both_orders"] == 1 and vanilla["both_unparseable"] == 0
    assert vanilla["first_output_picked_original"] == 50.0  # A on pairs 0, 1
    assert vanilla["first_output_picked_swapped"] == 50.0  # B on pairs 1, 2
    # reasoning: original A, B, A, unparseable; swapped A, B, A, A
    assert cot["consistent"] == 3 and cot["both_unparseable"] == 0
    both = swapped.copy()
    both.loc[3, "verdict_reasoning"] = "unparseable"
    again = ch13.position_bias(original, both, ["j"], {"reasoning": "CoT"}).iloc[0]
    assert again["consistent"] == 4 and again["both_unparseable"] == 1  # as LLMBar's "equal"


def test_position_bias_reading_names_the_judges():
    table = pd.DataFrame(
        {
            "judge": ["x", "x", "y", "y"],
            "prompt": ["V", "C", "V", "C"],
            "mode": ["instruct", "reasoning"] * 2,
            "consistency": [80.0, 70.0, 60.0, 65.0],
            "first_output_picked_original": [50.0, 51.0, 90.0, 60.0],
            "first_output_picked_swapped": [50.0, 49.0, 70.0, 40.0],
        }
    )
    (row,) = ch13.position_bias_reading(table).to_dict("records")
    assert row == {
        "judges": 2,
        "less_consistent": 1,
        "less_consistent_judges": "x",
        "lead_judge": "y",
        "lead_prompt": "V",
        "lead_first_original": 90.0,
        "lead_first_swapped": 70.0,
    }
    table["consistency"] = [80.0, 90.0, 60.0, 65.0]
    assert ch13.position_bias_reading(table)["less_consistent_judges"].item() == "none"


# ---------------------------------------------------------------------- self-routing


def _self_routing_by_hand(recs, unparseable):
    """Self-routing recomputed from the raw columns (not from the module's helpers)."""
    route = recs["self_route"].astype(str).to_numpy()
    reason = (route == "yes") | ((route == "unparseable") & (unparseable == "reasoning"))
    r0 = recs["correct_instruct"].to_numpy(bool)
    r1 = recs["correct_reasoning"].to_numpy(bool)
    t0 = recs["tokens_instruct"].to_numpy(float)
    t1 = recs["tokens_reasoning"].to_numpy(float)
    q = reason.mean()
    a0, a1, c1 = 100 * r0.mean(), 100 * r1.mean(), t1.sum() / t0.sum()
    acc = 100 * np.where(reason, r1, r0).mean()
    return {
        "pairs": len(recs),
        "reasoning_fraction": 100 * q,
        "acc_all_instruct": a0,
        "acc_all_reasoning": a1,
        "cost_all_reasoning": c1,
        "acc_self_routing": acc,
        "cost_self_routing": np.where(reason, t1, t0).sum() / t0.sum(),
        "acc_random_same_fraction": a0 + q * (a1 - a0),
        "cost_random_same_fraction": 1 + q * (c1 - 1),
        "self_routing_minus_all_reasoning": acc - a1,
        "self_routing_minus_random": acc - (a0 + q * (a1 - a0)),
        "declined_pairs": int((~reason).sum()),
        "declined_acc_instruct": 100 * r0[~reason].mean(),
        "declined_acc_reasoning": 100 * r1[~reason].mean(),
        "unparseable_answers": int((route == "unparseable").sum()),
    }


@pytest.mark.parametrize("unparseable", ["reasoning", "instruct"])
def test_self_routing_point_recomputes_from_the_answers(unparseable):
    from racer_lib.records import schema as rec
    from racer_lib.records import simulate

    recs, _ = simulate.simulate("qwen3-4b", "judgebench", seed=1, dim=0, scale=0.5)
    recs["self_route"] = ["unparseable"] * 15 + ["no"] * 45 + ["yes"] * (len(recs) - 60)
    point = ch11.self_routing_point(recs, rec.self_route_decisions(recs, unparseable))
    expected = _self_routing_by_hand(recs, unparseable)
    assert set(point) == set(expected)
    for key, value in expected.items():
        assert point[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert point["declined_pairs"] == (45 if unparseable == "reasoning" else 60)


def test_self_routing_point_without_declined_pairs_and_the_table_order():
    recs = _records([1, 0, 0], [1, 1, 0], self_route="yes")
    point = ch11.self_routing_point(recs, np.ones(3, dtype=int))
    assert point["declined_pairs"] == 0 and np.isnan(point["declined_acc_instruct"])
    assert point["acc_self_routing"] == pytest.approx(point["acc_all_reasoning"])
    assert point["self_routing_minus_random"] == pytest.approx(0.0)
    parts = [recs.assign(judge=j, set=s) for j in ("b", "a") for s in ("bench", "mix")]
    table = ch11.self_routing_table(pd.concat(parts).assign(reason=1), ["mix", "bench"], ["a", "b"])
    rows = list(zip(table["judge"], table["set"], strict=True))
    assert rows == [("a", "mix"), ("a", "bench"), ("b", "mix"), ("b", "bench")]
    assert list(table.columns[:3]) == ["judge", "set", "pairs"]


def test_beside_paper_appends_the_papers_columns():
    table = pd.DataFrame({"judge": ["qwen3-4b", "other"], "x": [1, 2]})
    out = ch11.beside_paper(table, {"qwen3-4b": (1.5, 2.5)}, ["p1", "p2"])
    assert list(out.columns) == ["judge", "x", "p1", "p2"]
    assert list(out["p2"][:1]) == [2.5] and out["p1"].isna().tolist() == [False, True]
    assert list(table.columns) == ["judge", "x"]  # the input is left as it was


def test_self_routing_findings_hold_only_for_every_judge():
    table = pd.DataFrame(
        {
            "judge": ["a", "b"],
            "reasoning_fraction": [99.5, 99.9],
            "acc_self_routing": [80.0, 70.2],
            "acc_all_reasoning": [80.3, 70.0],
            "cost_self_routing": [5.0, 10.0],
            "cost_all_reasoning": [5.1, 10.0],
        }
    )
    # one draw, no test: a check of the simulator on simulated records (the share is given)
    sim = ch11.self_routing_findings(table, "simulated")
    assert list(sim["decision"]) == ["holds"] * 3
    assert list(sim["status"]) == [claims.BY_CONSTRUCTION] * 3
    assert (sim["test"] == claims.NO_TEST).all()
    assert sim["detail"][0] == "a 99.50 %; b 99.90 %"
    assert sim["detail"][1] == "a -0.30 pts; b +0.20 pts"
    # ... and on other records it decides nothing
    findings = ch11.self_routing_findings(table, "generated")
    assert list(findings["status"]) == [claims.INCONCLUSIVE] * 3
    worse = table.assign(
        reasoning_fraction=[99.5, 98.0], acc_self_routing=[80.0, 69.0], cost_self_routing=[5.0, 9.0]
    )
    worse_sim = ch11.self_routing_findings(worse, "simulated")
    assert list(worse_sim["decision"]) == ["fails"] * 3
    # given to the simulator, yet not contained in its records
    assert list(worse_sim["status"]) == [claims.NOT_REPRODUCED] * 3
    assert list(ch11.self_routing_findings(worse, "generated")["status"]) == (
        [claims.INCONCLUSIVE] * 3
    )
    empty = ch11.self_routing_findings(table.iloc[:0], "simulated")
    assert (empty["decision"] == "fails").all()  # no judge: nothing holds


def test_chapter_13_delta_tables_and_cot_effect_count_the_judges_cot_helps_and_hurts():
    # judge a: CoT helps on s (+50 points), hurts on t (-50); judge b: no change anywhere
    recs = pd.concat(
        [
            _records([0, 1, 1, 1], [1, 1, 0, 1], judge="a", subset=["s", "s", "t", "t"]),
            _records([1, 0, 1, 0], [1, 0, 1, 0], judge="b", subset=["s", "s", "t", "t"]),
        ],
        ignore_index=True,
    )
    by_subset, by_judge = ch13.delta_tables(recs)
    assert list(by_subset["delta_accuracy"]) == [50.0, -50.0, 0.0, 0.0]
    assert list(by_judge["headroom"]) == [25.0, 0.0]
    assert list(by_judge["mean_tokens_reasoning"]) == [30.0, 30.0]
    effect = ch13.cot_effect(by_subset, by_judge).set_index("subset")
    assert list(effect["level"]) == ["subset", "subset", "judge"]
    assert effect.loc["s", ["judges", "judges_helped", "judges_hurt"]].tolist() == [2, 1, 0]
    assert effect.loc["t", ["judges_hurt", "judges_not_helped", "min_delta"]].tolist() == [
        1,
        2,
        -50.0,
    ]
    assert effect.loc["all", "judges_not_helped"] == 2  # pooled, both judges gain nothing
    lengths = ch13.answer_lengths(recs)
    assert lengths.loc["a", "instruct_median"] == 10 and lengths.loc["b", "reasoning_mean"] == 30
