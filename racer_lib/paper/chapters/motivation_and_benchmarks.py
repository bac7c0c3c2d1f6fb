"""Chapter 03, the motivation figure and the OOD benchmarks (the paper's Fig. 1 and its appendix
table ``tab:benchmark``), computed from the tables chapters 04 (Fig. 2) and 08 (Fig. 3 under
shift) wrote.

Fig. 1(a) is each domain's pair of modes at (cost, accuracy): the instruct mode at cost 1 and the
reasoning mode at the cost ratio of §2 (tokens over the cell's own instruct tokens); Fig. 1(b)
is the realized cost (Eq. (1)'s C(π) as a ratio) of ACER and RACER-C before and after a shift.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.families import PER_SEED, Family, Test, from_rows
from racer_lib.claims.rules import RATIO_TOLERANCE, Claim, Finding, Level
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.metrics import BASIS_DOMAIN_GAINS
from racer_lib.paper import files, numbers, registry
from racer_lib.paper.claims import add_status
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.paper.files import ABLATION_RUNS_CSV
from racer_lib.paper.plots import DOMAIN_COLORS
from racer_lib.paper.rules import COUNT_TOLERANCE, paper_list

#: The domains whose judgments need structured verification (the paper's abstract: "e.g. math
#: and coding"), where Fig. 1(a) says reasoning gains most; every other domain is "other".
VERIFICATION_DOMAINS = ("math", "coding")

#: The CSVs this chapter writes that carry statuses.
DOMAINS_CSV, FINDINGS_CSV = files.DOMAINS_CSV, files.PAPER_FINDINGS_CSV
#: Chapter 08's runs, whose costs after the shift panel (b) reads, and chapter 04's per-domain
#: table, from which panel (a) is drawn.
SHIFT_RUNS_CSV, FIG2_BY_DOMAIN_CSV = ABLATION_RUNS_CSV, files.BY_DOMAIN_CSV
#: The keys of Fig. 1's findings (column ``key`` of :data:`FINDINGS_CSV`; its claims read them).
KEY_GAINS, KEY_WITHIN = "fig1a_gains", "fig1b_within"
#: The text of Fig. 1(b)'s finding.
WITHIN = (
    "(b) RACER stays within budget under OOD inputs where a standard router does not: after the "
    f"shift, RACER-C's mean cost at most {100 * RATIO_TOLERANCE:g} % over the budget, ACER's "
    "more than that"
)

BASIS_DOMAIN_COUNTS = (
    "simulator input: each benchmark's domain counts (simulate.CELLS: the paper's tab:benchmark)"
)
#: The columns of Table 4 the page shows.
DOMAIN_COLUMNS = ["benchmark", "domain", "pairs", "share", "paper_count", "paper_share", "status"]
#: The numbers the sentence under Table 4 states, as ``(name, csv, column, agg, where)`` for
#: :meth:`racer_lib.book.chapter.Prose.value`: over every benchmark, the pairs and the paper's
#: counts summed, and the largest share of one domain here and in the paper.
_DOMAIN_AGGS = {"pairs": "sum", "paper_count": "sum", "share": "max", "paper_share": "max"}
DOMAIN_READS = [(f"{c}_{agg}", DOMAINS_CSV, c, agg, {}) for c, agg in _DOMAIN_AGGS.items()]


def fig1_reads(shift: bool) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """The numbers the sentence under Fig. 1 states, as for :data:`DOMAIN_READS`: reasoning's
    gain on the verification domains and on the others, the range of its cost, and, with panel
    (b) (``shift``), how many of ACER's and RACER-C's runs exceed the budget after the shift."""
    G, V = "fig1a_gain_by_group.csv", "fig1b_shift_costs.csv"
    reads = [
        (f"gain_{group}", G, "delta_accuracy", "one", {"group": group})
        for group in ("verification", "other")
    ]
    reads += [
        (f"cost_{agg}", "fig1a_tradeoff.csv", "cost_reasoning", agg, {}) for agg in ("min", "max")
    ]
    for name, variant in (("acer", "ACER"), ("racer_c", "RACER-C")) if shift else ():
        reads.append((f"{name}_over", V, "shift_violated", "sum", {"variant": variant}))
        reads.append((f"{name}_runs", V, "seed", "count", {"variant": variant}))
    return reads


def domain_distribution(
    by_domain: pd.DataFrame,
    judge: str,
    paper_table: dict[tuple[str, str], tuple[int, float]],
    provenance: str,
    tolerance: float = 1.0,
) -> pd.DataFrame:
    """The paper's table ``tab:benchmark`` (domain distribution of the OOD benchmarks) computed from
    ``judge``'s rows of a per-(judge, dataset, domain)
    :func:`racer_lib.records.summary.mode_summary` table: per benchmark and domain the pairs
    (``pairs``) and their share of the benchmark (``share``, %), then the paper's count and
    proportion (``paper_count``, ``paper_share``; NaN where the paper has no such cell), and a
    check on this one draw: ``finding`` (the share is within ``tolerance`` points of the
    paper's) with its verdict and ``status`` (:func:`racer_lib.paper.claims.add_status`; the
    report decides Table 4 itself from ``share`` and ``pairs``). The simulator draws each
    benchmark's domains in the paper's counts (times its ``scale``), so on ``simulated`` records
    the shares are ``by construction``; on other records one draw decides nothing
    (``inconclusive``)."""
    mine = by_domain[by_domain["judge"] == judge]
    if mine.empty:
        raise ValueError(
            f"no rows of judge {judge!r} in the per-domain table (judges: "
            f"{', '.join(map(str, by_domain['judge'].unique()))})"
        )
    counts = mine.groupby(["dataset", "domain"], sort=False)["n"].sum()
    rows = []
    for (bench, domain), n in counts.items():
        paper_n, paper_share = paper_table.get((bench, domain), (np.nan, np.nan))
        share = 100 * n / counts[bench].sum()
        rows.append(
            {
                "benchmark": bench,
                "domain": domain,
                "pairs": int(n),
                "share": share,
                "paper_count": paper_n,
                "paper_share": paper_share,
                "finding": f"{bench} {domain}: share within {tolerance:g} points of the paper's",
                "holds": bool(abs(share - paper_share) <= tolerance),
                "basis": BASIS_DOMAIN_COUNTS,
            }
        )
    return add_status(pd.DataFrame(rows), provenance, registry.MOTIVATION, DOMAINS_CSV)


def mode_tradeoff(by_domain: pd.DataFrame, judge: str) -> pd.DataFrame:
    """The points of Fig. 1(a) for ``judge``: per (benchmark, domain) of a per-(judge, dataset,
    domain) :func:`racer_lib.records.summary.mode_summary` table, the instruct mode at cost 1
    and the reasoning mode at the cell's cost ratio (the cost of §2: tokens in the unit of the
    cell's own instruct tokens), their accuracies and ΔAccuracy, and ``group`` (``verification`` for
    :data:`VERIFICATION_DOMAINS`, else ``other``)."""
    mine = by_domain[by_domain["judge"] == judge]
    out = mine[["judge", "dataset", "domain", "n", "acc_instruct", "acc_reasoning"]].copy()
    out["delta_accuracy"] = out["acc_reasoning"] - out["acc_instruct"]
    out["cost_instruct"] = 1.0
    out["cost_reasoning"] = mine["cost_ratio"]
    out["group"] = np.where(out["domain"].isin(VERIFICATION_DOMAINS), "verification", "other")
    return out.reset_index(drop=True)


def gain_by_group(tradeoff: pd.DataFrame) -> pd.DataFrame:
    """:func:`mode_tradeoff` pooled per judge and group: the pairs, both modes' accuracies over
    the group's pairs (cells weighted by their pairs, so exactly the accuracy on the pooled
    pairs), ΔAccuracy, and the smallest and largest cost ratio of its cells."""
    rows = []
    for (judge, group), g in tradeoff.groupby(["judge", "group"], sort=False):
        w = g["n"] / g["n"].sum()
        acc0, acc1 = float(w @ g["acc_instruct"]), float(w @ g["acc_reasoning"])
        rows.append(
            {
                "judge": judge,
                "group": group,
                "pairs": int(g["n"].sum()),
                "acc_instruct": acc0,
                "acc_reasoning": acc1,
                "delta_accuracy": acc1 - acc0,
                "cost_ratio_min": g["cost_reasoning"].min(),
                "cost_ratio_max": g["cost_reasoning"].max(),
            }
        )
    return pd.DataFrame(rows)


def shift_costs(runs: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """The points of Fig. 1(b): the runs of one ``scenario`` of chapter 08's per-run table
    (:func:`racer_lib.paper.shift.shift_rows`, one row per replicate
    seed and method) by the plain objective (ACER) and by cost robustness (RACER-C), each
    run's cost on the training subset's validation split
    (``valid_cost``, in its cost unit) and on the shifted test set (``cost``, the realized ratio
    against that set's own instruct tokens), the budget and whether each exceeds it."""
    here = runs[(runs["scenario"] == scenario) & runs["variant"].isin(["ACER", "RACER-C"])]
    if here.empty:
        raise ValueError(
            f"no ACER or RACER-C runs of scenario {scenario!r} (scenarios: "
            f"{', '.join(map(str, runs['scenario'].unique()))})"
        )
    out = here[
        ["scenario", "train_subset", "test_subset", "method", "variant", "tau", "seed", "budget"]
    ].copy()
    out["valid_cost"] = here["valid_cost"]
    out["shift_cost"] = here["cost"]
    out["valid_violated"] = here["valid_cost"] > here["budget"]
    out["shift_violated"] = here["cost"] > here["budget"]
    return out.reset_index(drop=True)


def over_budget(costs: pd.DataFrame, variant: str) -> pd.Series:
    """Per replicate seed, ``variant``'s mean cost after the shift over the budget, minus one
    (``shift_cost / budget - 1`` of :func:`shift_costs`, its temperatures pooled within the
    seed: runs sharing a record draw count once)."""
    mine = costs[costs["variant"] == variant]
    return (mine["shift_cost"] / mine["budget"] - 1).groupby(mine["seed"]).mean()


def stays_within(costs: pd.DataFrame, min_n: int = verdicts.MIN_SEEDS) -> dict[str, Any]:
    """Fig. 1(b)'s caption as a findings row: RACER stays within budget after the shift where a
    standard router does not. A conjunction (:func:`racer_lib.evaluation.verdicts.conjunction`) of
    two one-sided bounds over the replicate seeds (:func:`over_budget`) at the claims table's margin
    :data:`racer_lib.claims.rules.RATIO_TOLERANCE`: RACER-C's ``cost / C - 1`` below it,
    and ACER's above it (:func:`racer_lib.evaluation.verdicts.directional`), decided as a
    :class:`racer_lib.claims.families.Family` written beside it (its power stated at the
    paper's own overspend for RACER-C, half the margin, and at twice the margin for ACER, of
    which the paper prints no number)."""
    family = Family(
        from_rows(
            "RACER-C within budget",
            {"RACER-C": over_budget(costs, "RACER-C")},
            Test(-1, RATIO_TOLERANCE, expected=RATIO_TOLERANCE / 2, min_n=min_n),
        )
        + from_rows(
            "ACER over budget",
            {"ACER": over_budget(costs, "ACER")},
            Test(1, RATIO_TOLERANCE, expected=2 * RATIO_TOLERANCE, min_n=min_n),
        )
    )
    found = family.verdicts()
    parts = family.part_verdicts(found)
    over = costs.groupby("variant")["shift_violated"].agg(["sum", "count"])
    counts = ", ".join(f"{v} {int(r['sum'])} of {int(r['count'])}" for v, r in over.iterrows())
    return {
        "finding": WITHIN,
        "key": KEY_WITHIN,
        "observed": "per seed, cost / C - 1 after the shift (RACER-C's τ pooled): "
        + "; ".join(f"{k} {v.interval_text()}" for k, v in parts.items())
        + f"; runs over budget: {counts}",
        **family.join(found).columns(),
        PER_SEED: family.to_json(),
        "basis": BASIS_LEARNED,
    }


def fig1_findings(
    groups: pd.DataFrame,
    costs: pd.DataFrame | None,
    provenance: str,
    min_n: int = verdicts.MIN_SEEDS,
):
    """Fig. 1's caption as findings (columns ``finding``, ``observed``, the verdict's,
    ``status``, ``basis``), written as :data:`FINDINGS_CSV`: (a) per judge of ``groups``
    (:func:`gain_by_group`), reasoning gains more on the verification domains than on the
    others, a check on one draw of records (the simulator is given each domain's gain: ``by
    construction`` where it holds); (b) on ``costs`` (:func:`shift_costs` of chapter 08's
    replicated runs; left out when ``None``), :func:`stays_within`, decided over the seeds
    (``min_n``: the seeds a test needs)."""
    rows = []
    for judge, g in groups.groupby("judge", sort=False):
        gain = g.set_index("group")["delta_accuracy"]
        if {"verification", "other"} <= set(gain.index):
            rows.append(
                {
                    "finding": f"(a) {judge}: reasoning gains more on math and coding "
                    "than on the other domains",
                    "key": KEY_GAINS,
                    "observed": f"{gain['verification']:+.1f} vs {gain['other']:+.1f} points",
                    "holds": bool(gain["verification"] > gain["other"]),
                    "basis": BASIS_DOMAIN_GAINS,
                }
            )
    if costs is not None:
        rows.append(stays_within(costs, min_n))
    return add_status(pd.DataFrame(rows), provenance, registry.MOTIVATION, FINDINGS_CSV)


def _tradeoff_panel(ax: plt.Axes, tradeoff) -> None:
    """Fig. 1(a) on ``ax``: per (benchmark, domain) row of
    :func:`mode_tradeoff`, an arrow from the instruct mode (cost 1) to
    the
    reasoning mode (its cost ratio) in accuracy, coloured by domain, solid for the verification
    domains and dashed for the others; the cost axis is logarithmic."""
    for _, row in tradeoff.iterrows():
        color = DOMAIN_COLORS.get(row["domain"], "grey")
        solid = row["group"] == "verification"
        ax.annotate(
            "",
            xy=(row["cost_reasoning"], row["acc_reasoning"]),
            xytext=(row["cost_instruct"], row["acc_instruct"]),
            arrowprops=dict(
                arrowstyle="-|>", color=color, lw=2.0 if solid else 1.0, ls="-" if solid else "--"
            ),
        )
        ax.scatter(row["cost_instruct"], row["acc_instruct"], s=18, color=color, zorder=3)
        ax.scatter(row["cost_reasoning"], row["acc_reasoning"], s=30, color=color, zorder=3)
    costs = np.r_[tradeoff["cost_instruct"], tradeoff["cost_reasoning"]]
    accs = np.r_[tradeoff["acc_instruct"], tradeoff["acc_reasoning"]]
    ax.set_xscale("log")
    ax.set_xlim(0.8, 1.3 * costs.max())
    ticks = [t for t in (1, 2, 5, 10, 20, 50) if t <= 1.3 * costs.max()]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_ylim(max(0.0, accs.min() - 5), min(100.0, accs.max() + 5))
    domains = [d for d in DOMAIN_COLORS if d in set(tradeoff["domain"])]
    handles = [plt.Line2D([], [], color=DOMAIN_COLORS[d], label=d) for d in domains]
    handles += [
        plt.Line2D([], [], color="grey", lw=2.0, label="math, coding (verification)"),
        plt.Line2D([], [], color="grey", lw=1.0, ls="--", label="other domains"),
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    judge = ", ".join(map(str, tradeoff["judge"].unique()))
    ax.set(
        title=f"(a) accuracy–cost trade-off ({judge})",
        xlabel="cost (tokens / instruct tokens, log scale)",
        ylabel="accuracy (%)",
    )


def _shift_cost_panel(ax: plt.Axes, costs) -> None:
    """Fig. 1(b) on ``ax``: each method's cost in training (validation split) and after the
    shift, from :func:`shift_costs`: runs as small points, the mean
    over
    seeds joined by a line (ACER black, RACER-C in oranges, darker for a smaller temperature),
    and the budget dashed."""
    methods = costs.drop_duplicates("method")[["method", "variant", "tau"]]
    racer_c = methods[methods["variant"] == "RACER-C"].sort_values("tau", ascending=False)
    palette = {"ACER": "black"}
    palette.update(
        dict(zip(racer_c["method"], plt.cm.Oranges(np.linspace(0.5, 0.9, max(len(racer_c), 1)))))
    )
    for k, name in enumerate(methods["method"]):
        sub = costs[costs["method"] == name]
        x = np.array([0.0, 1.0]) + 0.06 * (k - (len(methods) - 1) / 2)
        for xi, column in zip(x, ("valid_cost", "shift_cost"), strict=True):
            jitter = np.linspace(-0.015, 0.015, len(sub))  # spread the runs apart
            ax.scatter(xi + jitter, sub[column], s=8, alpha=0.4, color=palette[name], lw=0)
        ax.plot(
            x,
            [sub["valid_cost"].mean(), sub["shift_cost"].mean()],
            marker="o",
            color=palette[name],
            lw=1.6,
            label=name,
        )
    budget = float(costs["budget"].iloc[0])
    ax.axhline(budget, color="#b22222", ls="--", lw=1.2, label=f"budget C = {budget:g}")
    train_set, test_set = costs["train_subset"].iloc[0], costs["test_subset"].iloc[0]
    ax.set_xticks([0, 1], [f"training\n({train_set}, valid)", f"after the shift\n({test_set})"])
    ax.set_xlim(-0.4, 1.4)
    ax.set(title="(b) routing cost under a distribution shift", ylabel="cost (ratio)")
    ax.legend(loc="upper left")


def motivation_figure(tradeoff, costs=None) -> plt.Figure:
    """Fig. 1: (a) :func:`_tradeoff_panel` and, when ``costs`` is given, (b)
    :func:`_shift_cost_panel`."""
    n = 1 if costs is None else 2
    fig, axes = plt.subplots(1, n, figsize=(4.7 * n, 4.2), squeeze=False)
    _tradeoff_panel(axes[0][0], tradeoff)
    if costs is not None:
        _shift_cost_panel(axes[0][1], costs)
    fig.tight_layout()
    return fig


def _domain_text(k: int) -> str:
    """Table 4's shares (``k`` 1) or counts (0) per benchmark: ``judgebench 11.8 / ... (coding /
    ...)`` (the domains named with the shares)."""
    parts = []
    for bench in dict.fromkeys(b for b, _ in numbers.BENCHMARK_DOMAINS):
        cells = {d: v[k] for (b, d), v in numbers.BENCHMARK_DOMAINS.items() if b == bench}
        names = f" ({' / '.join(cells)})" if k else ""
        parts.append(f"{bench} {paper_list(cells.values())}{names}")
    return "; ".join(parts)


#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 1(a)",
        "reasoning judges gain on difficult tasks at a higher cost, marginally on simple ones",
        registry.MOTIVATION,
        Finding(KEY_GAINS),
    ),
    Claim(
        "Fig. 1(b)",
        "RACER stays within budget under OOD inputs where a standard router does not",
        registry.MOTIVATION,
        Finding(KEY_WITHIN),
    ),
    Claim(
        "Table 4",
        "domain shares of the OOD benchmarks (%): " + _domain_text(1),
        registry.MOTIVATION,
        Level(
            DOMAINS_CSV,
            "share",
            tuple(
                ({"benchmark": b, "domain": d}, share)
                for (b, d), (_, share) in numbers.BENCHMARK_DOMAINS.items()
            ),
        ),
    ),
    Claim(
        "Table 4",
        "domain counts of the OOD benchmarks (pairs): " + _domain_text(0),
        registry.MOTIVATION,
        Level(
            DOMAINS_CSV,
            "pairs",
            tuple(
                ({"benchmark": b, "domain": d}, count)
                for (b, d), (count, _) in numbers.BENCHMARK_DOMAINS.items()
            ),
            tol=COUNT_TOLERANCE,
            unit=" pairs",
        ),
    ),
)
