"""Chapter 04, reasoning or instruct (the paper's Fig. 2): the two figure panels and the paper's
reading of them checked on paired records.

The chapter's per-domain and agreement tables are
:func:`racer_lib.records.summary.mode_summary` tables (ΔAccuracy = Acc(M_R) - Acc(M_noR) and
the cost ratio of §2; the agreement table with the oracle's headroom, :func:`agreement_patterns`);
this module draws them (upper panel: ΔAccuracy against the cost ratio; lower panel: the four
agreement cells) and checks the paper's statements about them (:func:`fig2_findings`, with
§2.1's "most cost-effective gains" in :func:`cost_effective`).

Each check reads one record draw and runs no test over replicate seeds. Every one reads a
quantity a parameter of the simulator fixes (:mod:`racer_lib.paper.given`: the cells' gains and
cost ratios, the judges' ``rho``), so on simulated records it is a check of the simulator
(``by construction`` where it holds, ``not reproduced`` where the records do not contain it);
on other records a single draw decides nothing and it reads ``inconclusive``
(:func:`racer_lib.paper.claims.add_status`).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.rules import Claim, Difference, Finding
from racer_lib.evaluation.metrics import BASIS_DOMAIN_GAINS, headroom
from racer_lib.paper import files, registry
from racer_lib.paper.claims import add_status
from racer_lib.paper.effects import MODE_GAIN
from racer_lib.paper.plots import DOMAIN_COLORS, JUDGE_MARKERS, agreement_bars, legend_above
from racer_lib.records.summary import mode_summary

BASIS_RHO = (
    "simulator input: each judge's rho (simulate.JUDGES: larger models' modes agree more) with "
    "the paper's accuracies"
)

BASIS_COST_EFFECTIVE = (
    "simulator input: each domain's gain of reasoning (simulate.CELLS' gain) and each cell's "
    "cost ratio give the gain per extra token"
)
#: The domains of the paper's "most cost-effective gains" (§2.1, Fig. 2 upper).
VERIFICATION = ("math", "coding")

#: The Qwen3 judges of the paper, smallest first.
QWEN3_BY_SIZE = ("qwen3-1.7b", "qwen3-4b", "qwen3-8b")
#: The CSV the chapter writes :func:`fig2_findings` to (its claims read it), and the keys of
#: its findings (column ``key``).
FINDINGS_CSV = files.PAPER_FINDINGS_CSV
KEY_MATH_CODING, KEY_COST_EFFECTIVE, KEY_HEADROOM = "fig2_gains", "fig2_per_token", "headroom"
#: The lower panel's table (:func:`agreement_patterns`).
AGREEMENT_CSV = files.AGREEMENT_CSV
#: The per-domain table (:func:`by_domain`) and the columns of it the page shows.
BY_DOMAIN_CSV = files.BY_DOMAIN_CSV
BY_DOMAIN_COLUMNS = ["judge", "dataset", "domain", "n", "acc_instruct", "acc_reasoning"]
BY_DOMAIN_COLUMNS += ["delta_accuracy", "cost_ratio"]
#: The numbers the closing sentence states, as ``(name, csv, column, agg, where)`` for
#: :meth:`racer_lib.book.chapter.Prose.value`: the range of ΔAccuracy and of the cost ratio over
#: the judges, benchmarks and domains, then the pairs of each agreement cell summed over judges.
PROSE_READS = [
    (f"{c}_{agg}", BY_DOMAIN_CSV, c, agg, {})
    for c in ("delta_accuracy", "cost_ratio")
    for agg in ("min", "max")
]
PROSE_READS += [
    (f"{c}_sum", AGREEMENT_CSV, c, "sum", {}) for c in ("n", "only_reasoning", "only_instruct")
]


def by_domain(records: pd.DataFrame) -> pd.DataFrame:
    """The upper panel's table (:data:`BY_DOMAIN_CSV`): a
    :func:`racer_lib.records.summary.mode_summary` per judge, dataset and domain."""
    return mode_summary(records, ["judge", "dataset", "domain"])


def agreement_patterns(records: pd.DataFrame) -> pd.DataFrame:
    """The lower panel's table (:data:`AGREEMENT_CSV`): a
    :func:`racer_lib.records.summary.mode_summary` per judge and dataset (both accuracies, the
    four agreement cells, the cost ratio, the oracle) with the oracle's ``headroom``
    (:func:`racer_lib.evaluation.metrics.headroom`)."""
    table = mode_summary(records, ["judge", "dataset"])
    table["headroom"] = headroom(table)
    return table


def fig2_findings(
    records: pd.DataFrame, provenance: str, by_size: Sequence[str] = QWEN3_BY_SIZE
) -> pd.DataFrame:
    """The paper's reading of Fig. 2, checked on paired records (columns ``finding``, ``judge``,
    ``observed``, the verdict's columns, ``status``, ``basis``:
    :func:`racer_lib.paper.claims.add_status` on the records' ``provenance``):

    * per judge, reasoning gains more on math and coding than on safety and knowledge (the
      smallest ΔAccuracy of the first above the largest of the second, domains pooled over
      benchmarks); a judge without a domain of each kind is not checked;
    * per judge, reasoning is most cost-effective in math and coding (:func:`cost_effective`:
      its gain per extra token there, pooled, above that of the other domains, pooled);
    * the headroom (:func:`racer_lib.evaluation.metrics.headroom`) shrinks with model size,
      over the judges of ``by_size`` present in ``records`` (checked when there are two or more).

    Each is a check on one record draw (``holds``, no test). The simulator fixes what each reads
    (:mod:`racer_lib.paper.given`: the cells' gains ``g_c`` and ratios ``q_c``, the judges'
    ``rho``), so on simulated records it is ``by construction`` where it holds and ``not
    reproduced`` where it does not; on other records it is ``inconclusive``.
    """
    overall = mode_summary(records, ["judge"])
    overall["headroom"] = headroom(overall)
    pooled = mode_summary(records, ["judge", "domain"]).set_index(["judge", "domain"])
    checks = []
    for judge in records["judge"].unique():
        gains = pooled.loc[judge, "delta_accuracy"]
        verify = [d for d in ("math", "coding") if d in gains.index]
        surface = [d for d in ("safety", "knowledge") if d in gains.index]
        if verify and surface:
            checks.append(
                {
                    "finding": (
                        "reasoning gains more on math and coding than on safety and knowledge"
                    ),
                    "key": KEY_MATH_CODING,
                    "judge": judge,
                    "observed": f"min gain math/coding {gains[verify].min():.1f} pts; "
                    f"max gain safety/knowledge {gains[surface].max():.1f} pts",
                    "holds": bool(gains[verify].min() > gains[surface].max()),
                    "basis": BASIS_DOMAIN_GAINS,
                }
            )
    checks += [cost_effective(g, j) for j, g in records.groupby("judge", sort=False)]
    checks = [c for c in checks if c]
    order = [j for j in by_size if j in set(overall["judge"])]
    if len(order) > 1:
        room = overall.set_index("judge").loc[order, "headroom"]
        checks.append(
            {
                "finding": "the headroom when the modes disagree shrinks with model size",
                "key": KEY_HEADROOM,
                "judge": " > ".join(order),
                "observed": " > ".join(f"{v:.1f}" for v in room),
                "holds": bool((room.diff().dropna() < 0).all()),
                "basis": BASIS_RHO,
            }
        )
    columns = ["finding", "key", "judge", "observed", "holds", "basis"]
    table = pd.DataFrame(checks, columns=columns)
    return add_status(table, provenance, registry.REASONING, FINDINGS_CSV)


def cost_effective(records: pd.DataFrame, judge: str) -> dict | None:
    """§2.1: "the strongest and most cost-effective gains concentrate in math and coding", on one
    judge's paired ``records``: the accuracy gained per extra unit of cost, ΔAccuracy / (cost
    ratio - 1) (points per instruct answer's worth of extra tokens), of math and coding pooled
    against the other domains pooled (:func:`racer_lib.records.summary.mode_summary` of each
    group, benchmarks pooled); holds when the first is larger. ``None`` without a domain of each
    group. The simulator fixes it (its cells' gains and cost ratios)."""
    verify = records["domain"].isin(VERIFICATION)
    if verify.all() or not verify.any():
        return None
    group = np.where(verify, "math and coding", "other domains")
    pooled = mode_summary(records.assign(group=group), ["group"]).set_index("group")
    per_token = pooled["delta_accuracy"] / (pooled["cost_ratio"] - 1)
    return {
        "finding": "most cost-effective: accuracy gained per extra token of reasoning is "
        "largest in math and coding",
        "key": KEY_COST_EFFECTIVE,
        "judge": judge,
        "observed": "points per extra cost unit: "
        + ", ".join(f"{g} {v:+.2f}" for g, v in per_token.items()),
        "holds": bool(per_token["math and coding"] > per_token["other domains"]),
        "basis": BASIS_COST_EFFECTIVE,
    }


def delta_accuracy_panels(by_domain, benchmarks) -> plt.Figure:
    """The upper panel of Fig. 2, one panel per benchmark: each (judge, domain) row of a
    :func:`racer_lib.records.summary.mode_summary` table by judge, dataset and domain at its cost
    ratio and ΔAccuracy, coloured by domain with the judge's marker."""
    fig, axes = plt.subplots(
        1, len(benchmarks), figsize=(3.3 * len(benchmarks), 3.6), sharey=True, squeeze=False
    )
    for ax, bench in zip(axes[0], benchmarks, strict=True):
        sub = by_domain[by_domain["dataset"] == bench]
        for _, row in sub.iterrows():
            ax.scatter(
                row["cost_ratio"],
                row["delta_accuracy"],
                s=60,
                color=DOMAIN_COLORS.get(row["domain"], "grey"),
                marker=JUDGE_MARKERS.get(row["judge"], "o"),
                edgecolor="black",
                linewidth=0.4,
            )
        ax.axhline(0, color="black", lw=0.8)
        ax.set(title=bench, xlabel="cost ratio (reasoning / instruct)")
    axes[0][0].set_ylabel("ΔAccuracy (points)")
    domains = [d for d in DOMAIN_COLORS if d in set(by_domain["domain"])]
    handles = [
        plt.Line2D([], [], ls="", marker="o", color=DOMAIN_COLORS[d], label=d) for d in domains
    ]
    handles += [
        plt.Line2D([], [], ls="", marker=JUDGE_MARKERS.get(j, "o"), color="grey", label=j)
        for j in by_domain["judge"].unique()
    ]
    fig.legend(  # below the panels, so that the figure stays within the page's width
        handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=5, frameon=False
    )
    return fig


def agreement_panels(shares, benchmarks) -> plt.Figure:
    """The lower panel of Fig. 2: per benchmark, each judge's pairs split into the four
    agreement cells (:func:`racer_lib.paper.plots.agreement_bars` of an
    :func:`racer_lib.evaluation.metrics.agreement_shares` table by judge and dataset)."""
    fig, axes = plt.subplots(
        1, len(benchmarks), figsize=(3.3 * len(benchmarks), 3.4), sharey=True, squeeze=False
    )
    for ax, bench in zip(axes[0], benchmarks, strict=True):
        agreement_bars(ax, shares[shares["dataset"] == bench].set_index("judge"))
        ax.set(title=bench, ylim=(0, 100))
        ax.tick_params(axis="x", rotation=20)
    axes[0][0].set_ylabel("share of pairs (%)")
    legend_above(fig, axes[0][0], ncol=4)
    return fig


#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 2 (upper)",
        "the largest gains of reasoning are in math and coding; safety and knowledge gain "
        "little or lose",
        registry.REASONING,
        Finding(KEY_MATH_CODING),
    ),
    Claim(
        "Fig. 2 (upper)",
        "reasoning is most cost-effective in math and coding: the accuracy it gains per extra "
        "token is largest there",
        registry.REASONING,
        Finding(KEY_COST_EFFECTIVE),
    ),
    Claim(
        "Fig. 2 (lower)",
        "the headroom when the two modes disagree shrinks with model size",
        registry.REASONING,
        Finding(KEY_HEADROOM),
    ),
    Claim(
        "§2.1 text",
        "reasoning improves judge accuracy (ΔAccuracy > 0 over the three benchmarks)",
        registry.REASONING,
        Difference(AGREEMENT_CSV, "acc_reasoning", second_column="acc_instruct", effect=MODE_GAIN),
    ),
)
