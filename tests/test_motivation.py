"""Fig. 1 and the OOD benchmarks' domain table (chapter 03) from small hand-made tables."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from racer_lib.book import chapter
from racer_lib.errors import MissingFileError  # noqa: E402
from racer_lib.paper import claims
from racer_lib.paper.chapters import motivation_and_benchmarks as ch03


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _by_domain():
    """Chapter 04's per-domain table for two judges on two benchmarks."""
    rows = []
    for judge, bump in (("a", 0.0), ("b", 5.0)):
        for dataset, domain, n, acc0, acc1, ratio in (
            ("x", "math", 30, 50.0, 80.0, 8.0),
            ("x", "chat", 70, 90.0, 91.0, 3.0),
            ("y", "coding", 10, 60.0, 70.0, 6.0),
            ("y", "safety", 30, 80.0, 78.0, 2.0),
        ):
            rows.append(
                dict(
                    provenance="simulated",
                    judge=judge,
                    dataset=dataset,
                    domain=domain,
                    n=n,
                    acc_instruct=acc0 + bump,
                    acc_reasoning=acc1,
                    cost_ratio=ratio,
                )
            )
    return pd.DataFrame(rows)


PAPER = {("x", "math"): (3, 30.0), ("x", "chat"): (7, 70.0), ("y", "coding"): (1, 20.0)}


def test_domain_distribution_counts_shares_and_statuses():
    table = ch03.domain_distribution(_by_domain(), "a", PAPER, "simulated", tolerance=1.0)
    assert list(table["pairs"]) == [30, 70, 10, 30]
    assert table["share"].to_numpy() == pytest.approx([30, 70, 25, 75])
    assert table.groupby("benchmark")["share"].sum().to_numpy() == pytest.approx([100, 100])
    # y/coding is 25 % here against the paper's 20 %; y/safety is not in the paper's table:
    # a check of the simulator on one draw (no test), given by its domain counts
    assert list(table["decision"]) == ["holds", "holds", "fails", "fails"]
    assert (table["test"] == claims.NO_TEST).all()
    assert table["finding"].iloc[0] == "x math: share within 1 points of the paper's"
    assert np.isnan(table["paper_count"].iloc[3])
    assert list(table["status"]) == [claims.BY_CONSTRUCTION] * 2 + [claims.NOT_REPRODUCED] * 2
    assert "calibrated" not in table.columns and "holds" not in table.columns
    # on other records one draw decides nothing
    real = ch03.domain_distribution(_by_domain(), "a", PAPER, "generated", tolerance=1.0)
    assert set(real["status"]) == {claims.INCONCLUSIVE}
    wide = ch03.domain_distribution(_by_domain(), "a", PAPER, "simulated", tolerance=6.0)
    assert wide["decision"].iloc[2] == "holds"


def test_domain_distribution_refuses_an_absent_judge():
    with pytest.raises(ValueError, match="no rows of judge 'c'"):
        ch03.domain_distribution(_by_domain(), "c", PAPER, "simulated")


def test_mode_tradeoff_and_gain_by_group():
    tradeoff = ch03.mode_tradeoff(_by_domain(), "b")
    assert set(tradeoff["judge"]) == {"b"} and len(tradeoff) == 4
    assert list(tradeoff["group"]) == ["verification", "other", "verification", "other"]
    assert (tradeoff["cost_instruct"] == 1.0).all()
    assert list(tradeoff["cost_reasoning"]) == [8.0, 3.0, 6.0, 2.0]
    groups = ch03.gain_by_group(tradeoff).set_index("group")
    # pooled over pairs: math 30 pairs 55 -> 80, coding 10 pairs 65 -> 70
    assert groups.loc["verification", "pairs"] == 40
    assert groups.loc["verification", "acc_instruct"] == pytest.approx((30 * 55 + 10 * 65) / 40)
    assert groups.loc["verification", "acc_reasoning"] == pytest.approx((30 * 80 + 10 * 70) / 40)
    assert groups.loc["other", "delta_accuracy"] == pytest.approx((70 * -4 + 30 * -7) / 100)
    assert groups.loc["other", ["cost_ratio_min", "cost_ratio_max"]].tolist() == [2.0, 3.0]


def _runs():
    rows = []
    for scenario in ("(a) s", "(b) s"):
        for method, variant, tau, valid, shifted in (
            ("ACER", "ACER", np.nan, 1.8, 2.4),
            ("RACER-R τ=1", "RACER-R", 1.0, 1.9, 2.5),
            ("RACER-C τ=1", "RACER-C", 1.0, 1.3, 1.8),
        ):
            for seed in (0, 1):
                rows.append(
                    dict(
                        provenance="simulated",
                        scenario=scenario,
                        train_subset="t",
                        test_subset="o",
                        method=method,
                        variant=variant,
                        tau=tau,
                        seed=seed,
                        budget=2.0,
                        valid_cost=valid,
                        cost=shifted + 0.3 * seed * (variant == "RACER-C"),
                    )
                )
    return pd.DataFrame(rows)


def test_shift_costs_keeps_acer_and_racer_c_of_one_scenario():
    costs = ch03.shift_costs(_runs(), "(b) s")
    assert set(costs["variant"]) == {"ACER", "RACER-C"} and len(costs) == 4
    assert set(costs["scenario"]) == {"(b) s"}
    assert list(costs["shift_violated"]) == [True, True, False, True]  # 1.8, 2.1 for RACER-C
    assert not costs["valid_violated"].any()
    with pytest.raises(ValueError, match="no ACER or RACER-C runs"):
        ch03.shift_costs(_runs(), "(c)")


def _costs(racer_c, acer, seeds=12):
    """Fig. 1(b)'s table over ``seeds`` replicate seeds at budget 2: RACER-C at two
    temperatures around cost ``racer_c``, ACER at ``acer`` (small per-seed noise)."""
    rng = np.random.default_rng(1)
    rows = []
    for s in range(seeds):
        for method, variant, tau, cost in (
            ("ACER", "ACER", np.nan, acer),
            ("RACER-C τ=0.1", "RACER-C", 0.1, racer_c - 0.05),
            ("RACER-C τ=1", "RACER-C", 1.0, racer_c + 0.05),
        ):
            shifted = cost + rng.normal(0, 0.03)
            rows.append(
                dict(
                    scenario="(b) s",
                    train_subset="t",
                    test_subset="o",
                    method=method,
                    variant=variant,
                    tau=tau,
                    seed=100 + s,
                    budget=2.0,
                    valid_cost=1.5,
                    cost=shifted,
                )
            )
    return ch03.shift_costs(pd.DataFrame(rows), "(b) s")


@pytest.mark.parametrize(
    ("racer_c", "acer", "decision"),
    [
        (1.8, 2.4, "holds"),  # planted: RACER-C 10 % under the budget, ACER 20 % over
        (2.5, 2.4, "fails"),  # RACER-C deliberately over budget
        (1.8, 1.9, "fails"),  # within budget, but so is the standard router
        (2.1, 2.4, "inconclusive"),  # RACER-C at the margin (5 % over)
    ],
)
def test_fig1b_is_a_conjunction_over_seeds(racer_c, acer, decision):
    groups = ch03.gain_by_group(ch03.mode_tradeoff(_by_domain(), "a"))
    found = ch03.fig1_findings(groups, _costs(racer_c, acer), "simulated")
    assert len(found) == 2 and found["finding"].iloc[1] == ch03.WITHIN
    b = found.iloc[1]
    assert b["decision"] == decision and b["n"] == 12
    status = {"holds": claims.REPRODUCED, "fails": claims.NOT_REPRODUCED}
    assert b["status"] == status.get(decision, claims.INCONCLUSIVE)
    assert "RACER-C within budget" in b["note"] and "ACER over budget" in b["note"]
    assert b["basis"].startswith("emerges")
    # the per-seed values the tests read: each router's mean cost over the budget, minus one
    per_seed = ch03.over_budget(_costs(racer_c, acer), "RACER-C")
    assert len(per_seed) == 12 and per_seed.mean() == pytest.approx(racer_c / 2 - 1, abs=0.02)


def test_fig1_findings_statuses():
    groups = ch03.gain_by_group(ch03.mode_tradeoff(_by_domain(), "a"))
    costs = ch03.shift_costs(_runs(), "(b) s")  # two seeds: too few to decide (b)
    found = ch03.fig1_findings(groups, costs, "simulated")
    assert list(found["decision"]) == ["holds", "inconclusive"]
    assert list(found["status"]) == [claims.BY_CONSTRUCTION, claims.INCONCLUSIVE]
    assert "too few seeds" in found["note"].iloc[1]
    assert found["test"].iloc[0] == claims.NO_TEST
    assert found["basis"].iloc[0].startswith("simulator input")
    assert "RACER-C 1 of 2" in found["observed"].iloc[1]  # runs over budget, described
    flat = groups.assign(delta_accuracy=0.0)  # no larger gain on math and coding
    assert ch03.fig1_findings(flat, None, "simulated")["status"].tolist() == [claims.NOT_REPRODUCED]
    assert len(ch03.fig1_findings(groups, None, "simulated")) == 1


def test_motivation_figure_draws_both_panels():
    tradeoff = ch03.mode_tradeoff(_by_domain(), "a")
    costs = ch03.shift_costs(_runs(), "(b) s")
    fig = ch03.motivation_figure(tradeoff, costs)
    a, b = fig.axes
    arrows = [(t.xyann, t.xy) for t in a.texts]  # one per (benchmark, domain): instruct -> CoT
    assert arrows == [((1.0, 50.0), (8.0, 80.0)), ((1.0, 90.0), (3.0, 91.0))] + [
        ((1.0, 60.0), (6.0, 70.0)),
        ((1.0, 80.0), (2.0, 78.0)),
    ]
    assert a.get_xscale() == "log"
    lines = {line.get_label(): line for line in b.get_lines()}
    assert lines["ACER"].get_ydata().tolist() == pytest.approx([1.8, 2.4])
    assert lines["RACER-C τ=1"].get_ydata().tolist() == pytest.approx([1.3, 1.95])
    assert list(lines["budget C = 2"].get_ydata()) == [2.0, 2.0]
    assert len(ch03.motivation_figure(tradeoff).axes) == 1


def test_read_result_says_which_chapter_to_run(tmp_path):
    out = tmp_path / "13_x"
    out.mkdir()
    (tmp_path / "02_y").mkdir()
    pd.DataFrame({"a": [1]}).to_csv(tmp_path / "02_y" / "t.csv", index=False)
    assert chapter.read_result(out, "../02_y", "t.csv")["a"].tolist() == [1]
    with pytest.raises(MissingFileError, match="run the chapter 06_z first"):
        chapter.read_result(out, "../06_z", "t.csv")
