"""Chapter 13, real judges: the paper's Fig. 2 on LLMBar's released evaluators.

LLMBar (Zeng et al., ICLR 2024) released six evaluators' judgments of its 419 pairs with a
Vanilla prompt (here the instruct mode) and a CoT prompt (the reasoning mode). This module
holds what the chapter alone computes and draws from them: the records of both orders, the
ΔAccuracy and cost ratio of §2 per judge and subset (Fig. 2, upper panel:
:func:`judge_delta_accuracy`), CoT's effect over the judges (:func:`cot_effect`), the agreement
of the two modes and the oracle's headroom (Fig. 2, lower panel: :func:`agreement_table`,
:func:`agreement_and_headroom`), the check against LLMBar's own ``statistics.json``
(:func:`llmbar_statistics_mismatches`), the position bias of the two orders
(:func:`position_bias`) and the findings (:func:`fig2_reading`).

**The pairs are the unit of the findings' tests**, not seeds: no router is trained here and
nothing is drawn at random; a finding is about a judge's accuracy on a fixed set of pairs (the
release), which varies only with the pairs that set happens to hold. Each judge's two modes are
compared on the same pairs with McNemar's exact test on the discordant ones
(:func:`mcnemar`, :func:`racer_lib.evaluation.intervals.sign_test`), one-sided at the protocol's
level (:data:`racer_lib.evaluation.verdicts.ALPHA`); a claim over the judges or cells is
Holm-corrected across them (:func:`racer_lib.evaluation.verdicts.every` for "every",
:func:`some` for "at least one"); each finding is a
:class:`racer_lib.evaluation.verdicts.Verdict` (:func:`reading_verdicts`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from racer_lib.claims.rules import Claim, Finding
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.intervals import sign_test
from racer_lib.evaluation.metrics import (
    AGREEMENT_CELLS,
    BASIS_DOMAIN_GAINS,
    agreement_shares,
    headroom,
    with_mean_tokens,
)
from racer_lib.evaluation.verdicts import ALPHA, FAILS, HOLDS, INCONCLUSIVE, Verdict
from racer_lib.paper import files, plots, registry
from racer_lib.paper.claims import add_status
from racer_lib.records import llmbar
from racer_lib.records.schema import MODES, UNPARSEABLE, mode_columns
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
    stats = {f"{m}_{s}": (f"tokens_{m}", s) for m in MODES for s in ("median", "mean")}
    return records.groupby("judge", sort=False).agg(**stats)


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
BASIS_IMPROVES = "evidence: released verdicts of judges other than the paper's, none simulated"
#: The findings' texts and their keys (column ``key``: the chapter's claim reads the last;
#: :mod:`racer_lib.paper.given` the rest), and the CSVs written with them.
LOWERS = "reasoning lowers accuracy for at least one judge overall"
CELL_LE0 = "at least one (judge, subset) cell has ΔAccuracy <= 0"
MINORITY = "for every judge the pairs where exactly one mode is right are a minority"
IMPROVES = "reasoning improves accuracy for every judge (CoT over Vanilla)"
KEYS = {LOWERS: "lowers", CELL_LE0: "cell_le0", MINORITY: "minority", IMPROVES: "improves"}
FINDINGS_CSV, AGREEMENT_CSV = files.FINDINGS_CSV, files.AGREEMENT_CSV


def exact_share(k: int, m: int, sign: int, n: int, test: str, to_effect=lambda t: t) -> Verdict:
    """The claim that ``k`` of ``m`` paired outcomes fall one way more often than a fair coin
    (``sign`` 1) or less often (-1): the exact one-sided binomial test at ``ALPHA``
    (:func:`racer_lib.evaluation.intervals.sign_test`; on two modes' discordant pairs,
    McNemar's exact test), ``p_other`` its other side; the effect and its ``1 - 2 ALPHA``
    Clopper-Pearson interval: the share ``k / m`` mapped by ``to_effect``; ``n``: the pairs."""
    from statsmodels.stats.proportion import proportion_confint

    up, down = sign_test(m - k, k), sign_test(k, m - k)  # P(X >= k), P(X <= k)
    p, p_other = (up, down) if sign > 0 else (down, up)
    lo, hi = proportion_confint(k, m, alpha=2 * ALPHA, method="beta") if m else (np.nan,) * 2
    effect = [float(to_effect(x)) for x in (k / m if m else np.nan, lo, hi)]
    decision = HOLDS if p < ALPHA else FAILS if p_other < ALPHA else INCONCLUSIVE
    return Verdict(*effect, p, n, test, decision, p_other=p_other)


def mcnemar(row, sign: int = 1) -> Verdict:
    """The claim that CoT is more accurate (``sign`` 1) or less (-1) than Vanilla on the pairs
    of a :func:`racer_lib.records.summary.mode_summary` row (``n``, ``only_reasoning``,
    ``only_instruct``): McNemar's exact test; the effect is ΔAccuracy in points."""
    n, gained, lost = int(row["n"]), int(row["only_reasoning"]), int(row["only_instruct"])
    test = f"exact McNemar over {n} pairs (CoT {'>' if sign > 0 else '<'} Vanilla)"
    m = gained + lost
    return exact_share(gained, m, sign, n, test, lambda t: 100 * m / n * (2 * t - 1))


def some(members: Mapping[str, Verdict]) -> Verdict:
    """The claim that some member's claim holds: Holm over the members (``multipletests``);
    it holds when a member's adjusted p-value is below ``ALPHA`` (the family-wise error is
    controlled), fails when every member's opposite side holds after Holm, and is inconclusive
    otherwise. The numbers are the strongest member's, named in ``note``."""
    names, found = list(members), list(members.values())
    adjusted = verdicts.holm([v.p for v in found])
    others = verdicts.holm([v.p_other for v in found])
    k, held = int(np.argmin(adjusted)), int((adjusted < ALPHA).sum())
    decision = HOLDS if held else FAILS if (others < ALPHA).all() else INCONCLUSIVE
    note = f"{held} of {len(names)} hold after Holm; strongest {names[k]}"
    test, n = f"Holm over {len(names)}, any: {found[k].test}", min(v.n for v in found)
    v = found[k]
    return Verdict(v.effect, v.lo, v.hi, float(min(adjusted)), n, test, decision, note, max(others))


def cot_tests(by_judge: pd.DataFrame) -> pd.DataFrame:
    """Per judge (a judge-level :func:`delta_tables` table): the discordant pairs, ΔAccuracy
    with its 95 % interval, McNemar's exact p-values that CoT is more accurate
    (``p_improves``) and less (``p_lowers``), each Holm-adjusted over the judges (``*_holm``),
    and ``shown``: ``more accurate``, ``less accurate`` or ``undecided`` by those at ``ALPHA``."""
    up = [mcnemar(r, 1) for _, r in by_judge.iterrows()]
    out = by_judge[["judge", "n", "only_reasoning", "only_instruct", "delta_accuracy"]].copy()
    out["delta_lo"], out["delta_hi"] = [v.lo for v in up], [v.hi for v in up]
    out["p_improves"], out["p_lowers"] = [v.p for v in up], [v.p_other for v in up]
    for side in ("improves", "lowers"):
        out[f"p_{side}_holm"] = verdicts.holm(out[f"p_{side}"])
    held = [out["p_improves_holm"] < ALPHA, out["p_lowers_holm"] < ALPHA]
    out["shown"] = np.select(held, ["more accurate", "less accurate"], "undecided")
    return out


def reading_verdicts(by_judge, by_subset, agreement) -> dict[str, Verdict]:
    """The four findings of :func:`fig2_reading`, decided over the pairs (the release is fixed
    and no router is trained: a judge's accuracy on a fixed set of pairs varies only with the
    pairs, so they are the unit). Tables as there."""
    judges = dict(zip(by_judge["judge"], by_judge.to_dict("records")))
    cells = {f"{r['judge']} on {r['subset']}": r for r in by_subset.to_dict("records")}
    minority = {
        r["judge"]: exact_share(
            r["only_reasoning"] + r["only_instruct"], r["n"], -1, r["n"],
            f"exact binomial over {r['n']} pairs (share < 50 %)", lambda t: 100 * t,
        )
        for r in agreement.astype({"n": int}).to_dict("records")
    }  # fmt: skip
    return {
        LOWERS: some({j: mcnemar(r, -1) for j, r in judges.items()}),
        CELL_LE0: some({k: mcnemar(r, -1) for k, r in cells.items()}),
        MINORITY: verdicts.every(minority),
        IMPROVES: verdicts.every({j: mcnemar(r, 1) for j, r in judges.items()}),
    }


def fig2_reading(
    by_judge: pd.DataFrame, by_subset: pd.DataFrame, agreement: pd.DataFrame, provenance: str
) -> pd.DataFrame:
    """Fig. 2's message, that reasoning is not universally helpful, as three findings, and
    §2.1's, that reasoning improves a judge's accuracy, as a fourth, on a judge-level and a
    (judge, subset)-level :func:`racer_lib.records.summary.mode_summary` and the judges'
    :func:`agreement_table` (columns ``finding``, ``observed``, the verdict's, ``status``,
    ``basis``; :func:`racer_lib.paper.claims.add_status`), decided by :func:`reading_verdicts`:

    * :data:`LOWERS`: some judge is less accurate with CoT (McNemar per judge, :func:`some`);
    * :data:`CELL_LE0`: some (judge, subset) cell is (McNemar per cell, :func:`some`: a cell
      counts when its loss is shown, a stricter reading of ``<= 0``);
    * :data:`MINORITY`: for every judge, exactly one mode is right on fewer than half the
      pairs (exact binomial per judge, Holm: ``verdicts.every``);
    * :data:`IMPROVES`: CoT is more accurate for every judge (McNemar per judge, Holm). This
      reading was fixed before any result was seen: §2.1 states it of judges, so it is tested
      of each judge, not of their mean, which one strong judge could carry.
    """
    worse = by_judge[by_judge["delta_accuracy"] < 0]
    worst = by_subset.loc[by_subset["delta_accuracy"].idxmin()]
    right = agreement.set_index("judge")["share_one_mode_right"]
    deltas = by_judge["delta_accuracy"]
    names = ", ".join(f"{r.judge} {r.delta_accuracy:+.1f}" for r in worse.itertuples())
    observed = {
        LOWERS: f"{len(worse)} of {len(by_judge)} judges have a lower accuracy with CoT on "
        f"these pairs{': ' + names if names else ''}",
        CELL_LE0: f"{int((by_subset['delta_accuracy'] <= 0).sum())} of {len(by_subset)} cells; "
        f"the lowest is {worst['judge']} on {worst['subset']} ({worst['delta_accuracy']:+.1f} "
        "points)",
        MINORITY: f"share of pairs with exactly one mode right: from {100 * right.min():.1f} % "
        f"({right.idxmin()}) to {100 * right.max():.1f} % ({right.idxmax()})",
        IMPROVES: f"ΔAccuracy (CoT − Vanilla) from {deltas.min():+.1f} to {deltas.max():+.1f} "
        f"points over {len(deltas)} judges (mean {deltas.mean():+.1f})",
    }
    basis = [BASIS_ENDPOINTS, BASIS_DOMAIN_GAINS, BASIS_AGREEMENT, BASIS_IMPROVES]
    rows = [
        {"finding": f, "key": KEYS[f], "observed": observed[f], **v.columns(), "basis": b}
        for (f, v), b in zip(reading_verdicts(by_judge, by_subset, agreement).items(), basis)
    ]
    return add_status(rows, provenance, registry.LLMBAR_JUDGES, FINDINGS_CSV)


def findings_reads() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """The closing sentences' numbers, as ``(name, csv, column, agg, where)`` for
    :meth:`racer_lib.book.chapter.Prose.value` (``agg`` ``text``: a word): CoT's effect pooled
    per judge and over the (judge, subset) cells, the range of the agreement and headroom, the
    judges shown less and more accurate, and the findings by status."""
    C, F, pooled, cells = "cot_effect.csv", FINDINGS_CSV, {"subset": "all"}, {"level": "subset"}
    columns = ("judges_hurt", "judges", "min_delta", "max_delta", "min_cost_ratio")
    reads = [(f"all_{c}", C, c, "one", pooled) for c in (*columns, "max_cost_ratio")]
    reads += [(f"cells_{c}", C, c, "sum", cells) for c in ("judges_not_helped", "judges")]
    ranges = [(c, a) for c in ("judges_helped", "judges_hurt") for a in ("min", "max")]
    ranges += [("min_delta", "min"), ("max_delta", "max")]
    reads += [(f"subset_{c}_{a}", C, c, a, cells) for c, a in ranges]
    ranges = [(c, a) for c in ("share_one_mode_right", "headroom") for a in ("min", "max")]
    reads += [(f"{c}_{a}", AGREEMENT_CSV, c, a, {}) for c, a in ranges]
    shown = {"shown_less": "less accurate", "shown_more": "more accurate"}
    reads += [(k, "reasoning_tests.csv", "judge", "count", {"shown": v}) for k, v in shown.items()]
    reads.append(("improves_status", F, "status", "text", {"finding": IMPROVES}))
    reads.append(("findings_n", F, "finding", "count", {}))
    statuses = {s.replace(" ", "_"): s for s in ("reproduced", "not reproduced", "inconclusive")}
    return reads + [
        (f"findings_{k}", F, "finding", "count", {"status": s}) for k, s in statuses.items()
    ]


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
    statistic) and ``consistency`` (%), ``both_unparseable``, ``right_in_both_orders``, and the
    share (%) of pairs on which the output shown first was picked in each order (A in the
    original order, B in the swapped one).
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
_PALETTE = sns.color_palette("colorblind", 10)
LLMBAR_SUBSET_COLORS = {
    s: _PALETTE[i] for s, i in zip(llmbar.LLMBAR_SUBSETS, (0, 1, 2, 5, 4), strict=True)
}
LLMBAR_JUDGE_MARKERS = dict(zip(llmbar.LLMBAR_JUDGES, ("o", "s", "D", "^", "v", "P"), strict=True))


#: Where a point's name may go, in order of preference: offset (points), alignment.
_LABEL_SIDES = (
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
    ax: plt.Axes, xys, texts, keep_clear, avoid=(), sides=_LABEL_SIDES, **style
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
#: judge (:func:`racer_lib.records.summary.mode_summary`), their agreement, the position bias.
LLMBAR_RECORD_LABELS = {column: column for column in ("judge", "id", "subset", "label")}
LLMBAR_RECORD_LABELS |= {
    f"{quantity}_{mode}": (prompt, short)
    for mode, prompt in llmbar.LLMBAR_MODES.items()
    for quantity, short in (("verdict", "verdict"), ("correct", "right"), ("tokens", "tokens"))
}


COT_EFFECT_LABELS = {"judges": ("judges", "all")}
COT_EFFECT_LABELS |= {f"judges_{k}": ("judges", k) for k in ("helped", "hurt")}
COT_EFFECT_LABELS |= {"judges_not_helped": ("judges", "not helped")}
COT_EFFECT_LABELS |= {f"{a}_delta": ("ΔAccuracy (points)", a) for a in ("mean", "min", "max")}
COT_EFFECT_LABELS |= {f"{a}_cost_ratio": ("cost ratio", a) for a in ("min", "max")}


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


#: The style of a (judge, subset) point of :func:`judge_delta_accuracy` (coloured by its
#: subset) and of a judge's overall point.
_CELL_POINT = {"s": 42, "alpha": 0.85, "edgecolor": "white", "linewidth": 0.4, "zorder": 3}
_OVERALL_POINT = {"s": 150, "edgecolor": "black", "linewidth": 1.4, "zorder": 4}
_OVERALL_COLOR = (0.87, 0.87, 0.87, 0.8)


def _points(ax: plt.Axes, table: pd.DataFrame, colors, **style) -> list:
    """One point per row of ``table`` at its cost ratio and ΔAccuracy, in its colour of
    ``colors``, with its judge's marker."""
    rows = zip(colors, table["cost_ratio"], table["delta_accuracy"], table["judge"], strict=True)
    return [
        ax.scatter(x, y, color=c, marker=LLMBAR_JUDGE_MARKERS.get(j, "o"), **style)
        for c, x, y, j in rows
    ]


def judge_delta_accuracy(by_subset, by_judge, judges, subsets, title: str = "") -> plt.Figure:
    """Fig. 2's upper panel for LLMBar's judges: each (judge, subset) row of ``by_subset`` a
    small point at its cost ratio and ΔAccuracy, coloured by subset with the judge's marker;
    each judge's overall row of ``by_judge`` a large outlined point, named where the name
    hides no other point (:func:`place_labels`)."""
    fig, ax = plt.subplots(figsize=(7.6, 4.6))
    colors = [LLMBAR_SUBSET_COLORS[s] for s in by_subset["subset"]]
    cell_points = _points(ax, by_subset, colors, **_CELL_POINT)
    overall_points = _points(ax, by_judge, [_OVERALL_COLOR] * len(by_judge), **_OVERALL_POINT)
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

    def handle(marker, color, label, **style) -> plt.Line2D:
        return plt.Line2D([], [], ls="", marker=marker, color=color, label=label, **style)

    subset_handles = [handle("o", LLMBAR_SUBSET_COLORS[s], s) for s in subsets]
    judge_handles = [handle(LLMBAR_JUDGE_MARKERS.get(j, "o"), "grey", j) for j in judges]
    outline = {"markersize": 10, "markeredgecolor": "black", "markeredgewidth": 1.4}
    judge_handles.append(handle("o", "#dddddd", "judge overall", **outline))
    sides = (
        (subset_handles, "subset", "upper left", 1.0),
        (judge_handles, "judge", "lower left", 0.0),
    )
    legends = [
        ax.legend(handles=h, title=title, loc=loc, bbox_to_anchor=(1.01, y), frameon=False)
        for h, title, loc, y in sides
    ]
    ax.add_artist(legends[0])  # the second stays the axes' own legend


#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "§2.1 text (LLMBar's released judges)",
        "reasoning improves judge accuracy: tested on real judges other than the paper's",
        registry.LLMBAR_JUDGES,
        Finding(KEYS[IMPROVES]),
    ),
)


#: The position-bias sentences' reads (:meth:`racer_lib.book.chapter.Prose.glue_reads`).
_BIAS, _READING = "position_bias.csv", "position_bias_reading.csv"
POSITION_READS = [
    (f"{c}_{a}", _BIAS, c, a, {})
    for c in ("consistency", "acc_swapped_minus_original")
    for a in ("min", "max")
]
POSITION_READS += [
    (c, _READING, c, "one", {})
    for c in ("judges", "less_consistent", "lead_first_original", "lead_first_swapped")
]
POSITION_READS += [
    (c, _READING, c, "text", {}) for c in ("less_consistent_judges", "lead_judge", "lead_prompt")
]
