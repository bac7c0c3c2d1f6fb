"""Chapter 11, self-routing (the paper's Table 9): the instruct mode asked whether it needs to
think, measured against All-Instruct, All-Reasoning and Random at the same reasoning fraction
(whose expected accuracy and cost lie on the chord between the two), with the paper's reading
checked and the table and figure of the chapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.rules import Claim, Finding
from racer_lib.evaluation.metrics import endpoints, policy_point, random_point
from racer_lib.judging import prompts
from racer_lib.paper import files, numbers, registry
from racer_lib.paper.claims import add_status
from racer_lib.paper.plots import legend_above, legend_in, relabel
from racer_lib.paper.rules import level, paper_list
from racer_lib.records.sets import MIX

BASIS_SELF_ROUTE = (
    "simulator input: the paper's share of 'yes' answers per judge (simulate.JUDGES.self_route)"
)

BASIS_FOLLOWS_SELF_ROUTE = (
    "follows from the calibrated share (simulate.JUDGES.self_route): the pairs declined move "
    "accuracy and cost by at most their share"
)
#: The CSVs the chapter writes that its claims read: the training mixture's table
#: (:func:`mixture_table`) and :func:`self_routing_findings`, with the keys of the findings
#: (column ``key``).
TABLE_CSV, FINDINGS_CSV = files.SELF_ROUTING_CSV, files.FINDINGS_CSV
KEY_REASONS, KEY_ACCURACY, KEY_COST = "reasons_always", "accuracy_alike", "cost_alike"


def self_routing_point(records: pd.DataFrame, reason) -> dict[str, float]:
    """Self-routing on one set next to the fixed modes and to Random at the same fraction.

    ``reason`` is the 0/1 decision per pair (:func:`racer_lib.records.schema.self_route_decisions`).
    Accuracies (%) of All-Instruct, All-Reasoning, self-routing and Random reasoning with
    self-routing's fraction (:func:`racer_lib.evaluation.metrics.random_point`, on the chord between
    the endpoints); their realized cost ratios; the differences the chapter reads; and both modes'
    accuracies on the pairs the judge declined (NaN when it declined none). ``unparseable_answers``
    counts the records whose ``self_route`` is ``unparseable``.
    """
    decide = np.asarray(reason)
    ends = endpoints(records)
    own = policy_point(records, decide)
    coin = random_point(records, own["reasoning_rate"])
    declined = records[decide == 0]
    return {
        "pairs": len(records),
        "unparseable_answers": int((records["self_route"] == "unparseable").sum()),
        "reasoning_fraction": 100 * own["reasoning_rate"],
        "acc_all_instruct": ends["All-Instruct"]["accuracy"],
        "acc_all_reasoning": ends["All-Reasoning"]["accuracy"],
        "acc_self_routing": own["accuracy"],
        "acc_random_same_fraction": coin["accuracy"],
        "cost_all_reasoning": ends["All-Reasoning"]["cost"],
        "cost_self_routing": own["cost"],
        "cost_random_same_fraction": coin["cost"],
        "self_routing_minus_all_reasoning": own["accuracy"] - ends["All-Reasoning"]["accuracy"],
        "self_routing_minus_random": own["accuracy"] - coin["accuracy"],
        "declined_pairs": len(declined),
        "declined_acc_instruct": (
            100 * declined["correct_instruct"].mean() if len(declined) else np.nan
        ),
        "declined_acc_reasoning": (
            100 * declined["correct_reasoning"].mean() if len(declined) else np.nan
        ),
    }


def self_routing_table(
    records: pd.DataFrame, sets: Sequence[str], judges: Sequence[str]
) -> pd.DataFrame:
    """:func:`self_routing_point` for every judge and set of ``records`` (columns ``judge``,
    ``set`` and ``reason``, the decision per pair), sorted by judge in the order of ``judges``,
    then by set in the order of ``sets``."""
    rows = [
        {"judge": judge, "set": name, **self_routing_point(recs, recs["reason"].to_numpy())}
        for (judge, name), recs in records.groupby(["judge", "set"], sort=False)
    ]
    table = pd.DataFrame(rows)
    table["set"] = pd.Categorical(table["set"], list(sets), ordered=True)
    table["judge"] = pd.Categorical(table["judge"], list(judges), ordered=True)
    table = table.sort_values(["judge", "set"]).reset_index(drop=True)
    table["set"], table["judge"] = table["set"].astype(str), table["judge"].astype(str)
    return table


def beside_paper(
    table: pd.DataFrame, values: dict, columns: Sequence[str], key: str = "judge"
) -> pd.DataFrame:
    """``table`` with the paper's ``columns`` appended: ``values[row[key]]`` holds one number
    per column (e.g. :data:`racer_lib.paper.numbers.SELF_ROUTING`); NaN for a key the paper
    lacks."""
    out = table.copy()
    missing = (np.nan,) * len(columns)
    for k, column in enumerate(columns):
        out[column] = [values.get(v, missing)[k] for v in out[key]]
    return out


#: Replies of the instruct mode to the self-routing question, one per way of reading them.
REPLIES = ("Yes", "no.", "NO, the answer is obvious.", "<think>Hmm.</think>\nyes", "yes or no",
           "I would rather not say", "It is simple, so no.")  # fmt: skip


def parse_examples(replies: Sequence[str] = REPLIES) -> pd.DataFrame:
    """How :func:`racer_lib.judging.prompts.parse_self_route` reads each of ``replies``."""
    return pd.DataFrame(
        {"reply": replies, "read as": [prompts.parse_self_route(r) for r in replies]}
    )


def answer_counts(records: pd.DataFrame) -> pd.DataFrame:
    """Per judge and set (rows), the pairs of each self-routing answer (columns)."""
    return records.pivot_table(index=["judge", "set"], columns="self_route", values="id",
                               aggfunc="count", fill_value=0, observed=True)  # fmt: skip


def mixture_table(by_set: pd.DataFrame) -> pd.DataFrame:
    """The training mixture's rows of a :func:`self_routing_table` beside the paper's Table 9
    (:func:`beside_paper` with :data:`racer_lib.paper.numbers.SELF_ROUTING`)."""
    mix = by_set[by_set["set"] == MIX].reset_index(drop=True)
    return beside_paper(mix, numbers.SELF_ROUTING, numbers.SELF_ROUTING_COLUMNS)


def held_out_view(by_set: pd.DataFrame) -> pd.DataFrame:
    """The held-out benchmarks' rows of a :func:`self_routing_table` per judge and set, with
    the page's labels (:data:`SELF_ROUTING_LABELS`)."""
    held_out = by_set[by_set["set"] != MIX].set_index(["judge", "set"])
    return relabel(held_out, SELF_ROUTING_LABELS)


#: The numbers the sentence under the table states, as ``(name, csv, column, agg, where)`` for
#: :meth:`racer_lib.book.chapter.Prose.value`: the pairs, then the range over the judges of the
#: reasoning share, the pairs declined and self-routing's margins over Random and over
#: All-Reasoning.
PROSE_READS: list[tuple[str, str, str, str, dict[str, Any]]] = [
    ("pairs", TABLE_CSV, "pairs", "max", {})
]
PROSE_READS += [
    (f"{column}_{agg}", TABLE_CSV, column, agg, {})
    for column in ("reasoning_fraction", "declined_pairs", "self_routing_minus_random",
                   "self_routing_minus_all_reasoning")
    for agg in ("min", "max")
]  # fmt: skip


def self_routing_findings(table: pd.DataFrame, provenance: str) -> pd.DataFrame:
    """The paper's reading of its self-routing table, checked on a :func:`self_routing_table`
    (one row per judge; columns ``finding``, ``detail``, the verdict's columns, ``status``,
    ``basis``): self-routing reasons on more than 99 % of pairs, its accuracy is within 0.5
    points of All-Reasoning and its cost within 5 % of All-Reasoning's. Each holds only if it
    holds for every judge (and there is one); ``detail`` gives each judge's value.

    Each is a check on one record draw (``holds``, no test). The share of "yes" answers is a
    parameter of :mod:`racer_lib.records.simulate` and the other two follow from it
    (:mod:`racer_lib.paper.given`), so on ``simulated`` records all three are ``by
    construction`` where they hold and ``not reproduced`` where they do not; on other records
    they read ``inconclusive`` (:func:`racer_lib.paper.claims.add_status`)."""

    def each(values, fmt):
        pairs = zip(table["judge"], values, strict=True)
        return "; ".join(f"{j} {fmt.format(v)}" for j, v in pairs)

    fraction = table["reasoning_fraction"]
    gap = table["acc_self_routing"] - table["acc_all_reasoning"]
    rel = table["cost_self_routing"] / table["cost_all_reasoning"] - 1
    rows = pd.DataFrame(
        [
            {
                "finding": "self-routing reasons on more than 99 % of pairs for every judge",
                "key": KEY_REASONS,
                "holds": bool(len(table) and (fraction > 99).all()),
                "detail": each(fraction, "{:.2f} %"),
                "basis": BASIS_SELF_ROUTE,
            },
            {
                "finding": "self-routing accuracy is within 0.5 points of All-Reasoning",
                "key": KEY_ACCURACY,
                "holds": bool(len(table) and (gap.abs() <= 0.5).all()),
                "detail": each(gap, "{:+.2f} pts"),
                "basis": BASIS_FOLLOWS_SELF_ROUTE,
            },
            {
                "finding": "self-routing cost is within 5 % of the All-Reasoning cost",
                "key": KEY_COST,
                "holds": bool(len(table) and (rel.abs() <= 0.05).all()),
                "detail": each(100 * rel, "{:+.2f} %"),
                "basis": BASIS_FOLLOWS_SELF_ROUTE,
            },
        ]
    )
    return add_status(rows, provenance, registry.SELF_ROUTING, FINDINGS_CSV)


def self_routing_panels(table) -> plt.Figure:
    """One panel per judge (rows of :func:`self_routing_table`): the
    two
    fixed modes and their chord, self-routing and Random at its reasoning fraction, and an
    inset enlarging the corner around All-Reasoning where the last two sit."""
    n = max(1, len(table))
    ncols = 1 if n == 1 else 2  # two panels a row fit the page at a readable size
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.5 * ncols, 3.6 * nrows), squeeze=False)
    fig.subplots_adjust(wspace=0.3, hspace=0.45)
    for ax, (_, row) in zip(axes.flat, table.iterrows(), strict=False):
        points = {
            "All-Instruct": (1.0, row["acc_all_instruct"], "s", "#2ca02c"),
            "All-Reasoning": (row["cost_all_reasoning"], row["acc_all_reasoning"], "^", "#d62728"),
            "Random, same fraction": (
                row["cost_random_same_fraction"],
                row["acc_random_same_fraction"],
                "x",
                "#7f7f7f",
            ),
            "Self-routing": (row["cost_self_routing"], row["acc_self_routing"], "o", "#1f77b4"),
        }
        inset = ax.inset_axes([0.42, 0.1, 0.5, 0.45])
        for target in (ax, inset):
            target.plot(
                [1.0, row["cost_all_reasoning"]],
                [row["acc_all_instruct"], row["acc_all_reasoning"]],
                color="#bbbbbb",
                lw=1,
                zorder=1,
            )
            for label, (x, y, marker, color) in points.items():
                style = (
                    {"s": 110, "facecolors": "none", "edgecolors": color, "linewidths": 1.6}
                    if label == "Self-routing"
                    else {"s": 45, "color": color}
                )
                target.scatter(x, y, marker=marker, zorder=3, label=label, **style)
        near = [points[k][:2] for k in ("All-Reasoning", "Random, same fraction", "Self-routing")]
        xs, ys = [p[0] for p in near], [p[1] for p in near]
        dx = max(0.02 * row["cost_all_reasoning"], max(xs) - min(xs))
        dy = max(0.3, max(ys) - min(ys))
        inset.set_xlim(min(xs) - dx, max(xs) + dx)
        inset.set_ylim(min(ys) - dy, max(ys) + dy)
        inset.tick_params(labelsize=9)
        inset.locator_params(nbins=3)
        inset.set_title("near All-Reasoning", fontsize=9)
        ax.set_xlim(0.5, row["cost_all_reasoning"] * 1.08)
        ax.set_ylim(row["acc_all_instruct"] - 3, row["acc_all_reasoning"] + 3)
        ax.set(
            xlabel="realized cost ratio",
            ylabel="accuracy (%)",
            title=f"{row['judge']}: reasons on {row['reasoning_fraction']:.2f} %",
        )
    if n < axes.size:  # an odd number of judges leaves a panel for the legend
        legend_in(axes.flat[-1], axes[0][0])
    else:
        legend_above(fig, axes[0][0], ncol=2 if n == 1 else 4)
    return fig


#: The rows of the self-routing table read against the paper's (its Table 9): a label, the
#: column of :func:`self_routing_table` and the paper's column ("" if
# none).
SELF_ROUTING_ROWS = (
    ("reasoning share (%)", "reasoning_fraction", "paper_reasoning_fraction"),
    ("acc. All-Instruct", "acc_all_instruct", "paper_acc_all_instruct"),
    ("acc. All-Reasoning", "acc_all_reasoning", "paper_acc_all_reasoning"),
    ("acc. self-routing", "acc_self_routing", "paper_acc_self_routing"),
    ("cost ratio, self-routing", "cost_self_routing", "paper_cost_ratio"),
    ("acc. Random, same share", "acc_random_same_fraction", ""),
    ("self-routing − Random", "self_routing_minus_random", ""),
)

#: Short labels of :func:`self_routing_table`'s columns for a page
# table.
SELF_ROUTING_LABELS = {
    "pairs": "pairs",
    "reasoning_fraction": "reasons (%)",
    "acc_all_instruct": ("accuracy (%)", "All-Instruct"),
    "acc_all_reasoning": ("accuracy (%)", "All-Reasoning"),
    "acc_self_routing": ("accuracy (%)", "self-routing"),
    "acc_random_same_fraction": ("accuracy (%)", "Random"),
    "cost_all_reasoning": ("cost ratio", "All-Reasoning"),
    "cost_self_routing": ("cost ratio", "self-routing"),
}


def self_routing_view(table):
    """The self-routing table (:func:`beside_paper` of
    :func:`self_routing_table`, one row per judge) read against the
    paper's
    Table 9, transposed to fit a page: one row per quantity of :data:`SELF_ROUTING_ROWS` and,
    per judge, this build's value next to the paper's (NaN where the paper has none)."""
    import pandas as pd

    rows = table.set_index("judge")
    columns = {}
    for judge in rows.index:
        columns[(judge, "build")] = [rows.at[judge, ours] for _, ours, _ in SELF_ROUTING_ROWS]
        columns[(judge, "paper")] = [
            rows.at[judge, theirs] if theirs else np.nan for _, _, theirs in SELF_ROUTING_ROWS
        ]
    return pd.DataFrame(columns, index=[label for label, _, _ in SELF_ROUTING_ROWS])


_TABLE9 = numbers.SELF_ROUTING
#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Table 9",
        "self-routing reasons on nearly every pair: "
        + paper_list(v[0] for v in _TABLE9.values())
        + " % (1.7B / 4B / 8B)",
        registry.SELF_ROUTING,
        Finding(KEY_REASONS),
    ),
    Claim(
        "Table 9",
        "self-routing's accuracy equals All-Reasoning's: "
        + paper_list(v[3] for v in _TABLE9.values())
        + " vs "
        + paper_list(v[2] for v in _TABLE9.values())
        + " %",
        registry.SELF_ROUTING,
        Finding(KEY_ACCURACY),
    ),
    *(
        Claim(
            "Table 9",
            f"{name} on the training mixture: "
            + paper_list(v[k] for v in _TABLE9.values())
            + (" %" if k < 4 else "")
            + " (1.7B / 4B / 8B)",
            registry.SELF_ROUTING,
            level(
                TABLE_CSV,
                column,
                tuple(({"judge": j, "set": MIX}, v[k]) for j, v in _TABLE9.items()),
                accuracy=k < 4,
            ),
        )
        for k, name, column in (
            (1, "All-Instruct's accuracy", "acc_all_instruct"),
            (2, "All-Reasoning's accuracy", "acc_all_reasoning"),
            (4, "cost ratio of reasoning", "cost_all_reasoning"),
        )
    ),
)
