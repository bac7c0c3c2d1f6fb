"""Chapter 13, real judges: the paper's Fig. 2 on LLMBar's released evaluators.

LLMBar (Zeng et al., ICLR 2024) released six evaluators' judgments of its 419 pairs with a
Vanilla prompt (here the instruct mode) and a CoT prompt (the reasoning mode). This module
holds what the chapter alone computes and draws from them: the records of both orders, the
ΔAccuracy and cost ratio of §2 per judge and subset (Fig. 2, upper panel:
:func:`judge_delta_accuracy`), CoT's effect over the judges (:func:`cot_effect`), the agreement
of the two modes and the oracle's headroom (Fig. 2, lower panel: :func:`agreement_table`,
:func:`agreement_and_headroom`), the check against LLMBar's own ``statistics.json``
(:func:`llmbar_statistics_mismatches`), the position bias of the two orders
(:func:`position_bias`) and Fig. 2's reading checked on them (:func:`fig2_reading`).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from racer_lib.evaluation.metrics import (
    AGREEMENT_CELLS,
    BASIS_DOMAIN_GAINS,
    agreement_shares,
    headroom,
    with_mean_tokens,
)
from racer_lib.paper import plots
from racer_lib.paper.claims import add_status
from racer_lib.records import llmbar
from racer_lib.records.schema import UNPARSEABLE, mode_columns
from racer_lib.records.summary import mode_summary


def records_by_order(judges: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Each order of :data:`racer_lib.records.llmbar.LLMBAR_ORDERS` (``original``,
    ``swapped``) mapped to the ``judges``' records in it, tokens counted with one shared
    tokenizer (:func:`racer_lib.records.llmbar.load_tokenizer`)."""
    tokenizer = llmbar.load_tokenizer()
    return {
        o: pd.concat(
            [llmbar.llmbar_records(j, o, tokenizer=tokenizer) for j in judges],
            ignore_index=True,
        )
        for o in llmbar.LLMBAR_ORDERS
    }


def answer_lengths(records: pd.DataFrame) -> pd.DataFrame:
    """Per judge: the median and mean completion tokens of both modes' answers."""
    return records.groupby("judge", sort=False).agg(
        instruct_median=("tokens_instruct", "median"),
        instruct_mean=("tokens_instruct", "mean"),
        reasoning_median=("tokens_reasoning", "median"),
        reasoning_mean=("tokens_reasoning", "mean"),
    )


def delta_tables(records: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The §2 quantities of Fig. 2 (``delta_accuracy = Acc(M_R) - Acc(M_noR)``, the cost
    ratio, the agreement cells) with both modes' mean tokens: per (judge, subset), and per
    judge with its oracle ``headroom``."""
    by = ["judge", "subset"]
    by_subset = with_mean_tokens(mode_summary(records, by), records, by)
    by_judge = with_mean_tokens(mode_summary(records, ["judge"]), records, ["judge"])
    by_judge["headroom"] = headroom(by_judge)
    return by_subset, by_judge


def cot_effect(by_subset: pd.DataFrame, by_judge: pd.DataFrame) -> pd.DataFrame:
    """CoT's effect over the judges, per subset (``level`` subset) and pooled per judge
    (``level`` judge, subset ``all``): the judges, how many CoT helps (ΔAccuracy > 0), hurts
    (< 0) or does not help (<= 0), and the mean, min and max ΔAccuracy and cost ratio."""
    both = pd.concat(
        [by_subset.assign(level="subset"), by_judge.assign(level="judge", subset="all")]
    )
    return (
        both.groupby(["level", "subset"], sort=False)
        .agg(
            judges=("delta_accuracy", "size"),
            judges_helped=("delta_accuracy", lambda d: int((d > 0).sum())),
            judges_hurt=("delta_accuracy", lambda d: int((d < 0).sum())),
            judges_not_helped=("delta_accuracy", lambda d: int((d <= 0).sum())),
            mean_delta=("delta_accuracy", "mean"),
            min_delta=("delta_accuracy", "min"),
            max_delta=("delta_accuracy", "max"),
            min_cost_ratio=("cost_ratio", "min"),
            max_cost_ratio=("cost_ratio", "max"),
        )
        .reset_index()
    )


def agreement_table(summary: pd.DataFrame, by: Sequence[str] = ("judge",)) -> pd.DataFrame:
    """The agreement of the two modes per group of a
    :func:`racer_lib.records.summary.mode_summary` table that carries a ``headroom`` column:
    the four cells (pair counts) and their shares (``share_<cell>``,
    :func:`racer_lib.evaluation.metrics.agreement_shares`), the share of pairs on which exactly
    one mode is right (``share_one_mode_right``, the only pairs a router can gain on), both
    accuracies, the oracle's and the headroom (the lower panel of Fig. 2)."""
    out = summary[
        [*by, "n", *AGREEMENT_CELLS, "acc_instruct", "acc_reasoning", "oracle_accuracy", "headroom"]
    ].copy()
    shares = agreement_shares(out)
    for cell in AGREEMENT_CELLS:
        out[f"share_{cell}"] = shares[cell]
    out["share_one_mode_right"] = out["share_only_reasoning"] + out["share_only_instruct"]
    return out


BASIS_ENDPOINTS = (
    "simulator input: the paper's All-Instruct and All-Reasoning accuracies (simulate.JUDGES), "
    "reasoning ahead for every judge"
)
BASIS_AGREEMENT = "simulator input: rho and KAPPA set how often the two modes agree"


def fig2_reading(
    by_judge: pd.DataFrame, by_subset: pd.DataFrame, agreement: pd.DataFrame, provenance: str
) -> pd.DataFrame:
    """Fig. 2's message, that reasoning is not universally helpful, as three statements checked
    on a judge-level and a (judge, subset)-level
    :func:`racer_lib.records.summary.mode_summary` and the judges' :func:`agreement_table`
    (columns ``finding``, ``holds``, ``status``, ``detail``, ``basis``; each is a calibrated
    input of :mod:`racer_lib.records.simulate`, so evidence only on records that are not
    ``simulated``):

    * reasoning lowers accuracy for at least one judge overall;
    * at least one (judge, subset) cell has ΔAccuracy <= 0;
    * for every judge the pairs where exactly one mode is right are a minority (< 50 %).
    """
    worse = by_judge[by_judge["delta_accuracy"] < 0]
    cells_le0 = by_subset[by_subset["delta_accuracy"] <= 0]
    worst = by_subset.loc[by_subset["delta_accuracy"].idxmin()]
    one_right = agreement.set_index("judge")["share_one_mode_right"]
    rows = pd.DataFrame(
        [
            {
                "finding": "reasoning lowers accuracy for at least one judge overall",
                "holds": bool(len(worse) > 0),
                "detail": (
                    f"{len(worse)} of {len(by_judge)} judges lose accuracy with CoT: "
                    + ", ".join(f"{r.judge} {r.delta_accuracy:+.1f}" for r in worse.itertuples())
                    if len(worse)
                    else "CoT is at least as accurate for every judge"
                ),
                "calibrated": True,
                "basis": BASIS_ENDPOINTS,
            },
            {
                "finding": "at least one (judge, subset) cell has ΔAccuracy <= 0",
                "holds": bool(len(cells_le0) > 0),
                "detail": (
                    f"{len(cells_le0)} of {len(by_subset)} cells; the lowest is "
                    f"{worst['judge']} on {worst['subset']} "
                    f"({worst['delta_accuracy']:+.1f} points)"
                ),
                "calibrated": True,
                "basis": BASIS_DOMAIN_GAINS,
            },
            {
                "finding": (
                    "for every judge the pairs where exactly one mode is right are a minority"
                ),
                "holds": bool((one_right < 0.5).all()),
                "detail": (
                    f"share of pairs with exactly one mode right: from "
                    f"{100 * one_right.min():.1f} % ({one_right.idxmin()}) to "
                    f"{100 * one_right.max():.1f} % ({one_right.idxmax()})"
                ),
                "calibrated": True,
                "basis": BASIS_AGREEMENT,
            },
        ]
    )
    return add_status(rows, provenance)


#: The count of LLMBar's ``statistics.json`` that a judge's correct verdicts in each order
#: equal: ``correct_False`` for the instance's order (``swap = False``), ``correct_True`` for
#: the swapped one.
LLMBAR_STATISTIC = {"original": "correct_False", "swapped": "correct_True"}


def llmbar_statistics_mismatches(
    by_order: dict[str, pd.DataFrame],
    statistics: dict[tuple[str, str], dict],
    subsets: Sequence[str],
) -> list[tuple]:
    """Where records disagree with LLMBar's own counts; an empty list when they all agree.

    ``by_order`` maps each order (``original``, ``swapped``) to judge records;
    ``statistics`` maps ``(judge, mode)`` to that judge's parsed ``statistics.json``
    (:func:`racer_lib.records.llmbar.llmbar_statistics`: per subset, per statistic, ``(count,
    total)``).
    For every judge, mode, order and subset, the records' ``(correct count, pairs)`` must equal
    the statistic of :data:`LLMBAR_STATISTIC`; each mismatch is ``(judge, mode, order, subset,
    ours, theirs)``.
    """
    mismatches = []
    for (judge, mode), stats in statistics.items():
        for order, frame in by_order.items():
            mine = frame[frame["judge"] == judge]
            for subset in subsets:
                cell = mine[mine["subset"] == subset]
                ours = (int(cell[mode_columns(mode)["correct"]].sum()), len(cell))
                theirs = stats[subset][LLMBAR_STATISTIC[order]]
                if ours != tuple(theirs):
                    mismatches.append((judge, mode, order, subset, ours, theirs))
    return mismatches


def position_bias(
    original: pd.DataFrame, swapped: pd.DataFrame, judges: Sequence[str], prompts: dict[str, str]
) -> pd.DataFrame:
    """How much each judge's verdict depends on the position of the two outputs, per mode.

    ``original`` and ``swapped`` are the same pairs judged with the outputs in the instance's
    order and swapped (verdicts mapped back to the instance's order); ``prompts`` maps each
    mode to its prompt's name (e.g. :data:`racer_lib.records.llmbar.LLMBAR_MODES`). Per judge and
    mode: the accuracy in each order and their difference, ``consistent`` (pairs with the same
    verdict in both orders; two unparseable answers count as the same, as in LLMBar's ``equal``
    statistic) and
    ``consistency`` (%), ``both_unparseable``, ``right_in_both_orders``, and the share (%) of
    pairs on which the output shown first was picked in each order (A in the original order,
    B in the swapped one).
    """
    rows = []
    for judge in judges:
        a = original[original["judge"] == judge].set_index("id")
        b = swapped[swapped["judge"] == judge].set_index("id").loc[a.index]
        for mode, prompt in prompts.items():
            columns = mode_columns(mode)
            va, vb = a[columns["verdict"]].astype(str), b[columns["verdict"]].astype(str)
            ra, rb = a[columns["correct"]].astype(bool), b[columns["correct"]].astype(bool)
            rows.append(
                {
                    "judge": judge,
                    "mode": mode,
                    "prompt": prompt,
                    "n": len(a),
                    "acc_original": 100 * ra.mean(),
                    "acc_swapped": 100 * rb.mean(),
                    "acc_swapped_minus_original": 100 * (rb.mean() - ra.mean()),
                    "consistent": int((va == vb).sum()),
                    "consistency": 100 * (va == vb).mean(),
                    "both_unparseable": int(((va == UNPARSEABLE) & (vb == UNPARSEABLE)).sum()),
                    "right_in_both_orders": int((ra & rb).sum()),
                    "first_output_picked_original": 100 * (va == "A").mean(),
                    "first_output_picked_swapped": 100 * (vb == "B").mean(),
                }
            )
    return pd.DataFrame(rows)


def position_bias_reading(position: pd.DataFrame) -> pd.DataFrame:
    """A :func:`position_bias` table read in one row: of how many ``judges`` the reasoning
    verdicts are less consistent across the two orders than the instruct ones
    (``less_consistent``, named in ``less_consistent_judges``, "none" for none), and which judge
    and prompt prefer the first position most (``lead_judge``, ``lead_prompt``, with its
    ``lead_first_original`` and ``lead_first_swapped`` shares in percent)."""
    wide = position.pivot(index="judge", columns="mode", values="consistency").loc[
        list(dict.fromkeys(position["judge"]))
    ]
    less = wide.index[wide["reasoning"] < wide["instruct"]]
    lead = position.loc[position["first_output_picked_original"].idxmax()]
    row = {
        "judges": len(wide),
        "less_consistent": len(less),
        "less_consistent_judges": ", ".join(less) or "none",
        "lead_judge": lead["judge"],
        "lead_prompt": lead["prompt"],
        "lead_first_original": lead["first_output_picked_original"],
        "lead_first_swapped": lead["first_output_picked_swapped"],
    }
    return pd.DataFrame([row])


def agreement_and_headroom(
    agreement, labels: dict[str, str] | None = None, pairs: str = "pairs"
) -> plt.Figure:
    """Fig. 2's lower panel for one set of pairs, with the headroom beside it: per judge (the
    rows of an :func:`agreement_table` indexed by judge), the agreement cells as labelled
    stacked bars, and the points an oracle adds over the better mode. ``pairs`` names the
    pairs on the y axis (e.g. "the 419 pairs")."""
    fig, (ax, ax_room) = plt.subplots(
        1, 2, figsize=(9.2, 3.9), gridspec_kw={"width_ratios": [2.2, 1]}
    )
    plots.agreement_bars(ax, agreement, labels, prefix="share_", annotate_from=6)
    ax.set(ylim=(0, 100), ylabel=f"share of {pairs} (%)", title="agreement of the two modes")
    ax.tick_params(axis="x", rotation=20)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4, frameon=False)
    room = agreement["headroom"].to_numpy()[::-1]
    ax_room.barh([str(j) for j in agreement.index[::-1]], room, color="#4878d0")
    for y, v in enumerate(room):
        ax_room.text(v + 0.15, y, f"{v:.1f}", va="center", fontsize=9)
    ax_room.set(
        xlabel="points over the better mode",
        title="headroom (oracle)",
        xlim=(0, agreement["headroom"].max() * 1.25),
    )
    fig.tight_layout()
    return fig


#: LLMBar's five subsets (:data:`racer_lib.records.llmbar.LLMBAR_SUBSETS`), one colour each,
#: and its six judges (:data:`racer_lib.records.llmbar.LLMBAR_JUDGES`), one marker each.
LLMBAR_SUBSET_COLORS = dict(
    zip(
        ("natural", "neighbor", "gptinst", "gptout", "manual"),
        [sns.color_palette("colorblind", 10)[i] for i in (0, 1, 2, 5, 4)],
        strict=True,
    )
)


LLMBAR_JUDGE_MARKERS = dict(
    zip(
        ("GPT-4", "ChatGPT", "ChatGPT-0301", "LLaMA2", "PaLM2", "Falcon"),
        ("o", "s", "D", "^", "v", "P"),
        strict=True,
    )
)


#: Where a point's name may go, in order of preference: offset (points), alignment.
LABEL_SIDES = (
    (9, 2, "left", "bottom"),
    (-9, 2, "right", "bottom"),
    (7, -7, "left", "top"),
    (7, 7, "left", "bottom"),
    (-7, -7, "right", "top"),
    (-7, 7, "right", "bottom"),
    (0, 9, "center", "bottom"),
    (0, -9, "center", "top"),
)


def marker_box(ax: plt.Axes, points):
    """The display box of a one-point scatter ``points`` (a square of the marker's size)."""
    from matplotlib.transforms import Bbox

    x, y = ax.transData.transform(points.get_offsets()[0])
    half = np.sqrt(points.get_sizes()[0]) / 2 * ax.figure.dpi / 72
    return Bbox.from_extents(x - half, y - half, x + half, y + half)


def place_labels(
    ax: plt.Axes, xys, texts, keep_clear, avoid=(), sides=LABEL_SIDES, **style
) -> list:
    """Name each point ``xys[i]`` with ``texts[i]`` on the first of ``sides`` where the name
    overlaps no box of ``keep_clear`` nor of ``avoid`` nor an earlier name; else on the first
    side that overlaps no box of ``keep_clear`` nor an earlier name; else on the first side.
    Boxes are in display units (e.g. :func:`marker_box`); the axis limits must be final.
    Returns the annotations."""
    ax.figure.canvas.draw()  # fixes the axis limits, so the boxes below are final
    renderer = ax.figure.canvas.get_renderer()
    strict, placed = list(keep_clear), []
    for xy, label in zip(xys, texts, strict=True):
        boxes = {}
        for side in sides:
            dx, dy, ha, va = side
            text = ax.annotate(
                label, xy, xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, **style
            )
            boxes[side] = text.get_window_extent(renderer)
            text.remove()
        clear = [s for s in sides if not any(boxes[s].overlaps(b) for b in [*strict, *avoid])]
        fair = [s for s in sides if not any(boxes[s].overlaps(b) for b in strict)]
        side = (clear or fair or list(sides))[0]
        dx, dy, ha, va = side
        placed.append(
            ax.annotate(
                label, xy, xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, **style
            )
        )
        strict.append(boxes[side])
    return placed


#: Short labels of the LLMBar chapters' tables for the page (:func:`relabel`): a record
#: (:func:`racer_lib.records.llmbar.llmbar_records`), the CoT effect per subset, the modes per
# judge
#: (:func:`racer_lib.records.summary.mode_summary`), their agreement and the position bias.
LLMBAR_RECORD_LABELS = {
    "judge": "judge",
    "id": "id",
    "subset": "subset",
    "label": "label",
    "verdict_instruct": ("Vanilla", "verdict"),
    "correct_instruct": ("Vanilla", "right"),
    "tokens_instruct": ("Vanilla", "tokens"),
    "verdict_reasoning": ("CoT", "verdict"),
    "correct_reasoning": ("CoT", "right"),
    "tokens_reasoning": ("CoT", "tokens"),
}


COT_EFFECT_LABELS = {
    "judges": ("judges", "all"),
    "judges_helped": ("judges", "helped"),
    "judges_hurt": ("judges", "hurt"),
    "judges_not_helped": ("judges", "not helped"),
    "mean_delta": ("ΔAccuracy (points)", "mean"),
    "min_delta": ("ΔAccuracy (points)", "min"),
    "max_delta": ("ΔAccuracy (points)", "max"),
    "min_cost_ratio": ("cost ratio", "min"),
    "max_cost_ratio": ("cost ratio", "max"),
}


POSITION_LABELS = {
    "acc_original": ("accuracy (%)", "original"),
    "acc_swapped": ("accuracy (%)", "swapped"),
    "acc_swapped_minus_original": ("accuracy (%)", "Δ"),
    "consistency": "consistency (%)",
    "right_in_both_orders": "right in both",
    "both_unparseable": "both unparseable",
    "first_output_picked_original": ("first output picked (%)", "original"),
    "first_output_picked_swapped": ("first output picked (%)", "swapped"),
}


def judge_delta_accuracy(by_subset, by_judge, judges, subsets, title: str = "") -> plt.Figure:
    """Fig. 2's upper panel for LLMBar's judges: each (judge, subset) row of ``by_subset`` a
    small point at its cost ratio and ΔAccuracy, coloured by subset with the judge's marker;
    each judge's overall row of ``by_judge`` a large outlined point, named where the name
    hides no other point (:func:`place_labels`)."""
    fig, ax = plt.subplots(figsize=(7.6, 4.6))
    cell_points = [
        ax.scatter(
            row["cost_ratio"],
            row["delta_accuracy"],
            s=42,
            alpha=0.85,
            color=LLMBAR_SUBSET_COLORS[row["subset"]],
            marker=LLMBAR_JUDGE_MARKERS.get(row["judge"], "o"),
            edgecolor="white",
            linewidth=0.4,
            zorder=3,
        )
        for _, row in by_subset.iterrows()
    ]
    overall_points = [
        ax.scatter(
            row["cost_ratio"],
            row["delta_accuracy"],
            s=150,
            color=(0.87, 0.87, 0.87, 0.8),
            marker=LLMBAR_JUDGE_MARKERS.get(row["judge"], "o"),
            edgecolor="black",
            linewidth=1.4,
            zorder=4,
        )
        for _, row in by_judge.iterrows()
    ]
    ax.axhline(0, color="black", lw=0.8, zorder=2)
    ax.set(
        xlabel="cost ratio (CoT / Vanilla completion tokens, MiniLM WordPiece)",
        ylabel="ΔAccuracy, CoT − Vanilla (points)",
        title=title,
    )
    ax.set_xlim(0, by_subset["cost_ratio"].max() * 1.12)
    place_labels(
        ax,
        list(zip(by_judge["cost_ratio"], by_judge["delta_accuracy"], strict=True)),
        by_judge["judge"],
        keep_clear=[marker_box(ax, p) for p in overall_points],
        avoid=[marker_box(ax, p) for p in cell_points],
        fontsize=9,
        weight="bold",
        zorder=5,
    )
    _judge_legends(ax, judges, subsets)
    return fig


def _judge_legends(ax: plt.Axes, judges, subsets) -> None:
    """The two legends of :func:`judge_delta_accuracy`, right of the axes: the subsets
    (colours) above, the judges (markers) and the judges' overall point below."""
    subset_handles = [
        plt.Line2D([], [], ls="", marker="o", color=LLMBAR_SUBSET_COLORS[s], label=s)
        for s in subsets
    ]
    judge_handles = [
        plt.Line2D([], [], ls="", marker=LLMBAR_JUDGE_MARKERS.get(j, "o"), color="grey", label=j)
        for j in judges
    ]
    judge_handles.append(
        plt.Line2D(
            [],
            [],
            ls="",
            marker="o",
            markersize=10,
            color="#dddddd",
            markeredgecolor="black",
            markeredgewidth=1.4,
            label="judge overall",
        )
    )
    first = ax.legend(
        handles=subset_handles,
        title="subset",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    ax.add_artist(first)
    ax.legend(
        handles=judge_handles,
        title="judge",
        loc="lower left",
        bbox_to_anchor=(1.01, 0.0),
        frameon=False,
    )
