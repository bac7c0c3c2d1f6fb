"""The figures of chapters 04, 05, 11 and 13 drawn from small hand-made tables."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import plots  # noqa: E402
from racer_lib.paper.chapters import dro_theory as ch05
from racer_lib.paper.chapters import llmbar_judges as ch13
from racer_lib.paper.chapters import reasoning_vs_instruct as ch04
from racer_lib.paper.chapters import self_routing as ch11
from racer_lib.records import llmbar


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _shares(judges=("a", "b"), dataset="d"):
    """Agreement shares of two judges: a 40/30/20/10 %, b 10/20/30/40 %."""
    rows = [
        dict(zip(evaluate.AGREEMENT_CELLS, s, strict=True))
        for s in ((0.4, 0.3, 0.2, 0.1), (0.1, 0.2, 0.3, 0.4))
    ]
    return pd.DataFrame(rows).assign(judge=list(judges), dataset=dataset)


def test_agreement_bars_stack_the_four_cells():
    fig, ax = plt.subplots()
    shares = _shares().set_index("judge")
    plots.agreement_bars(ax, shares, labels={"both_right": "both right!"}, annotate_from=25)
    bars = ax.patches
    assert len(bars) == 8  # four cells for each of two judges, cell by cell
    heights = [round(b.get_height(), 9) for b in bars]
    assert heights == [40, 10, 30, 20, 20, 30, 10, 40]
    assert [round(b.get_y(), 9) for b in bars[2:4]] == [40, 10]  # stacked on the first cell
    assert [b.get_facecolor() for b in bars[::2]] == [
        matplotlib.colors.to_rgba(c) for c in plots.AGREEMENT_COLORS.values()
    ]
    assert sorted(t.get_text() for t in ax.texts) == ["30", "30", "40", "40"]  # >= 25 %
    assert ax.get_legend_handles_labels()[1] == [
        "both right!",
        "only reasoning",
        "only instruct",
        "both wrong",
    ]


def test_agreement_panels_one_per_benchmark():
    shares = pd.concat([_shares(dataset="x"), _shares(dataset="y")], ignore_index=True)
    fig = ch04.agreement_panels(shares, ["x", "y"])
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["x", "y"]
    assert all(len(ax.patches) == 8 for ax in axes) and axes[0].get_ylim() == (0, 100)


def test_agreement_and_headroom_reads_the_share_columns():
    table = _shares().set_index("judge")
    table = table.rename(columns={c: f"share_{c}" for c in evaluate.AGREEMENT_CELLS})
    table["headroom"] = [2.0, 8.0]
    fig = ch13.agreement_and_headroom(table, pairs="the 10 pairs")
    bars, room = fig.axes
    assert len(bars.patches) == 8 and bars.get_ylabel() == "share of the 10 pairs (%)"
    assert [round(p.get_width(), 9) for p in room.patches] == [8.0, 2.0]  # first judge on top
    assert [t.get_text() for t in room.texts] == ["8.0", "2.0"]


def test_delta_accuracy_panels_draw_each_domain_of_each_judge():
    by_domain = pd.DataFrame(
        {
            "judge": ["qwen3-4b", "qwen3-8b", "qwen3-4b"],
            "dataset": ["x", "x", "y"],
            "domain": ["math", "math", "chat"],
            "cost_ratio": [2.0, 3.0, 4.0],
            "delta_accuracy": [5.0, 1.0, -2.0],
        }
    )
    fig = ch04.delta_accuracy_panels(by_domain, ["x", "y"])
    x, y = fig.axes
    assert len(x.collections) == 2 and len(y.collections) == 1
    np.testing.assert_allclose(y.collections[0].get_offsets(), [[4.0, -2.0]])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["math", "chat", "qwen3-4b", "qwen3-8b"]


def test_marker_box_is_a_square_of_the_marker_size_around_the_point():
    fig, ax = plt.subplots()
    ax.set(xlim=(0, 10), ylim=(0, 10))
    points = ax.scatter([5], [5], s=100)
    box = ch13.marker_box(ax, points)
    centre = ax.transData.transform((5, 5))
    np.testing.assert_allclose([box.x0 + box.width / 2, box.y0 + box.height / 2], centre)
    assert box.width == pytest.approx(10 * fig.dpi / 72)  # sqrt(s) points wide


def test_place_labels_moves_a_name_off_a_kept_clear_box():
    fig, ax = plt.subplots()
    ax.set(xlim=(0, 10), ylim=(0, 10))
    (free,) = ch13.place_labels(ax, [(5, 5)], ["P"], keep_clear=[])
    assert free.get_ha() == "left" and free.xyann == (9, 2)  # the first side
    right = free.get_window_extent(fig.canvas.get_renderer())
    free.remove()
    (moved,) = ch13.place_labels(ax, [(5, 5)], ["P"], keep_clear=[right])
    assert moved.xyann == (-9, 2) and moved.get_ha() == "right"  # the second side
    # a box to avoid only is given up when no side is clear of it
    everywhere = right.expanded(50, 50)
    (last,) = ch13.place_labels(ax, [(5, 5)], ["P"], keep_clear=[], avoid=[everywhere])
    assert last.xyann == (9, 2)


def test_judge_delta_accuracy_names_every_judge_once():
    by_subset = pd.DataFrame(
        {
            "judge": ["GPT-4", "GPT-4", "Falcon"],
            "subset": ["natural", "manual", "natural"],
            "cost_ratio": [10.0, 12.0, 30.0],
            "delta_accuracy": [-3.0, 4.0, 1.0],
        }
    )
    by_judge = pd.DataFrame(
        {"judge": ["GPT-4", "Falcon"], "cost_ratio": [11.0, 30.0], "delta_accuracy": [0.5, 1.0]}
    )
    fig = ch13.judge_delta_accuracy(
        by_subset, by_judge, ["GPT-4", "Falcon"], ["natural", "manual"], title="t"
    )
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["Falcon", "GPT-4"]
    assert len(ax.collections) == 5 and ax.get_title() == "t"
    assert ax.get_xlim() == pytest.approx((0, 30 * 1.12))


def test_llmbar_styles_cover_the_release():
    assert list(ch13.LLMBAR_SUBSET_COLORS) == list(llmbar.LLMBAR_SUBSETS)
    assert list(ch13.LLMBAR_JUDGE_MARKERS) == list(llmbar.LLMBAR_JUDGES)


def test_batch_gap_and_convergence_figures():
    gaps = pd.DataFrame(
        [
            {
                "kind": k,
                "tau": t,
                "batch_size": b,
                "gap": 0.1,
                "batch_delta_mean": 0.2,
                "exact_delta": 0.3,
            }
            for k in ("reward", "cost")
            for t in (0.1, 1.0)
            for b in (4, 16)
        ]
    )
    fig = ch05.batch_gap_figure(gaps)
    assert [len(ax.lines) for ax in fig.axes] == [3, 3, 3]  # two batch sizes and a rule
    conv = pd.DataFrame(
        [
            {
                "beta": b,
                "instance": i,
                "t": t,
                "lambda_error": 0.5**t,
                "bound_lambda": 0.9**t,
                "policy_kl": 0.25**t,
                "bound_kl": 0.81**t,
            }
            for b in (0.5, 1.0)
            for i in (0, 1)
            for t in range(5)
        ]
    )
    fig = ch05.convergence_figure(conv)
    assert [len(ax.lines) for ax in fig.axes] == [4, 4]  # instance 0 only, error and bound
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), 0.5 ** np.arange(5))


def test_self_routing_panels_one_per_judge():
    table = pd.DataFrame(
        {
            "judge": ["a", "b"],
            "acc_all_instruct": [70.0, 80.0],
            "acc_all_reasoning": [78.0, 86.0],
            "cost_all_reasoning": [19.0, 6.0],
            "acc_random_same_fraction": [77.9, 85.9],
            "cost_random_same_fraction": [18.9, 5.9],
            "acc_self_routing": [78.1, 86.0],
            "cost_self_routing": [18.95, 6.0],
            "reasoning_fraction": [99.9, 99.5],
        }
    )
    fig = ch11.self_routing_panels(table)
    panels = [ax for ax in fig.axes if ax.get_title().endswith("%")]
    assert [ax.get_title() for ax in panels] == ["a: reasons on 99.90 %", "b: reasons on 99.50 %"]
    assert all(len(ax.collections) == 4 for ax in panels)  # two modes, Random, self-routing
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "All-Instruct",
        "All-Reasoning",
        "Random, same fraction",
        "Self-routing",
    ]


def test_self_routing_view_puts_each_judges_value_beside_the_papers():
    table = pd.DataFrame(
        {"judge": ["a", "b"], "paper_cost_ratio": [19.07, np.nan]}
        | {ours: [1.0 + k, 2.0 + k] for k, (_, ours, _) in enumerate(ch11.SELF_ROUTING_ROWS)}
        | {
            theirs: [50.0 + k, 60.0 + k]
            for k, (_, _, theirs) in enumerate(ch11.SELF_ROUTING_ROWS)
            if theirs and theirs != "paper_cost_ratio"
        }
    )
    view = ch11.self_routing_view(table)
    assert list(view.columns) == [("a", "build"), ("a", "paper"), ("b", "build"), ("b", "paper")]
    assert list(view.index) == [label for label, _, _ in ch11.SELF_ROUTING_ROWS]
    assert view.loc["acc. All-Instruct", ("b", "build")] == 3.0
    assert view.loc["acc. All-Instruct", ("b", "paper")] == 61.0
    assert view.loc["cost ratio, self-routing", ("a", "paper")] == 19.07
    assert np.isnan(view.loc["self-routing − Random", ("a", "paper")])  # the paper has none


def test_relabel_selects_renames_and_groups_columns():
    frame = pd.DataFrame({"x": [1], "y": [2.0], "z": [3.0]})
    assert list(plots.relabel(frame, {"z": "Z", "x": "X"}).columns) == ["Z", "X"]
    grouped = plots.relabel(frame, {"x": "X", "y": ("g", "Y"), "z": ("g", "Z")})
    assert list(grouped.columns) == [("", "X"), ("g", "Y"), ("g", "Z")]
    assert grouped[("g", "Z")].tolist() == [3.0]


# ----------------------------------------------------------------------------------------
# One uncertainty (issue 42): figures draw the 95 % t-interval over seeds the claims use


def test_figures_draw_the_t_interval_the_claims_are_decided_on():
    """Fig. 4's bars and Fig. 5's band are half the 95 % t-interval over the seeds (the
    interval of verdicts.directional), not one sd (bars) or the range (band)."""
    from racer_lib.evaluation import verdicts
    from racer_lib.paper.chapters import training_dynamics as ch06

    x = np.array([70.0, 71.0, 73.0, 74.0, 72.0, 70.5, 71.5, 72.5, 73.5, 71.0])
    decided = verdicts.directional(x)
    half = (decided.hi - decided.lo) / 2
    summary = pd.DataFrame({"method": ["RACER"], "budget": [2.0], "accuracy_mean": [x.mean()],
                            "accuracy_sd": [x.std(ddof=1)], "cost_mean": [2.0],
                            "cost_sd": [0.1], "seeds": [x.size]})  # fmt: skip
    assert plots.seed_interval(summary, "accuracy")[0] == pytest.approx(half)
    assert half > 2 * x.std(ddof=1) / np.sqrt(x.size)  # wider than a standard error
    fig, ax = plt.subplots()
    plots.method_curves(ax, summary, ["RACER"])
    (bars,) = [c for c in ax.collections if len(c.get_segments()) == 1 and
               c.get_segments()[0][0][0] == c.get_segments()[0][1][0]]  # fmt: skip
    (low, high) = bars.get_segments()[0]
    assert high[1] - low[1] == pytest.approx(2 * half)
    history = pd.DataFrame({"budget": 2.0, "seed": np.arange(10), "epoch": 1,
                            "train_reward": x / 100, "train_cost": 2.0, "lambda": 0.0})  # fmt: skip
    history = pd.concat([history, history.assign(epoch=2)])
    band = ch06.training_curves(history).axes[0].collections[0].get_paths()[0].vertices[:, 1]
    assert band.max() - band.min() == pytest.approx(2 * half / 100)
    assert plots.seed_interval(summary.assign(seeds=1), "accuracy")[0] == 0  # one seed: none
