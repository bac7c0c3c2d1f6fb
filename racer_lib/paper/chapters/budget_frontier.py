"""Chapter 07_budget_frontier, the paper's Fig. 4: accuracy against realized cost across budgets.

Each replicate seed (:func:`racer_lib.evaluation.verdicts.replicate_seeds`) re-draws the
records, the split, the routers' initialisation and the batch order; the tables keep one row per
seed (:class:`FrontierTables`). The area between a router's curve and Random's chord
(:func:`racer_lib.evaluation.metrics.area_above_random`, with the per-run gaps in
:func:`gap_to_random`), the oracle frontier thinned for drawing (:func:`thinned_frontier`), one
panel of the figure (:func:`_frontier_panel`, :func:`_label_grid`), the page's RACER-against-Random
view (:func:`racer_vs_random`) and §5.3's readings of the figure decided by the book's protocol
(:func:`frontier_findings`): a concave frontier (:func:`concavity`, on
:func:`chord_elevations`), a gain over All-Instruct on the benchmarks (:func:`over_all_instruct`)
and, at half of All-Reasoning's cost, an accuracy above All-Reasoning's on most judges and
splits (:func:`over_all_reasoning`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.families import MOST, PER_SEED, Family, Test, from_rows
from racer_lib.claims.rules import RATIO_TOLERANCE, SEED, Claim, Difference, Finding
from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation import verdicts
from racer_lib.paper import effects, experiments, files, plots, registry
from racer_lib.paper import numbers as paper
from racer_lib.paper.claims import add_status
from racer_lib.paper.rules import HalfCost
from racer_lib.records import schema as rec
from racer_lib.routing import train

#: The CSVs the chapter writes that its claims read: the runs, the fixed modes' endpoints, the
#: areas above Random's chord (shared with chapter 16: :mod:`racer_lib.paper.files`) and
#: the findings, with the keys of the findings (column ``key``).
RUNS_CSV, ENDS_CSV = files.FRONTIER_RUNS_CSV, files.FRONTIER_ENDS_CSV
AREA_CSV, FINDINGS_CSV = files.AREA_CSV, "frontier_findings.csv"
KEY_CONCAVE, KEY_OVER_INSTRUCT, KEY_OVER_REASONING = "concave", "over_instruct", "over_reasoning"

OVER_INSTRUCT = "improves over All-Instruct on every judge and OOD benchmark"
OVER_REASONING = (
    f"often surpasses All-Reasoning at <= {paper.FRONTIER_HALF_COST:g} x its cost "
    "(most judges and splits)"
)
#: The columns of a findings (or members) table the page shows.
SHOWN = ["finding", "observed", "effect", "lo", "hi", "sesoi", "p", "n", "test", "note", "status"]
MEMBER_SHOWN = ["member", "effect", "lo", "hi", "p", "decision"]
KEYS = ("judge", "set", "seed")


def chord_elevations(costs, accuracies) -> np.ndarray:
    """For a frontier of points in order (All-Instruct, RACER by budget, All-Reasoning), each
    interior point's elevation (points): its accuracy minus the chord joining its two
    neighbours, read at its cost. A concave frontier has every elevation at least zero.
    Neighbours of equal cost give the elevation above their mean accuracy."""
    c, a = np.asarray(costs, dtype=float), np.asarray(accuracies, dtype=float)
    out = np.zeros(max(len(c) - 2, 0))
    for i in range(1, len(c) - 1):
        span = c[i + 1] - c[i - 1]
        if span != 0:
            chord = a[i - 1] + (a[i + 1] - a[i - 1]) * (c[i] - c[i - 1]) / span
        else:
            chord = (a[i - 1] + a[i + 1]) / 2
        out[i - 1] = a[i] - chord
    return out


def paper_elevation() -> float:
    """The mean elevation of the paper's own RACER frontier above its neighbours' chords
    (Table 7, Llama pair: All-Instruct, RACER at C = 2 to 3.5, All-Reasoning;
    :func:`chord_elevations`), in accuracy points."""
    ai, ar = (
        paper.LLAMA_FAMILY_ENDPOINTS["All-Instruct"],
        paper.LLAMA_FAMILY_ENDPOINTS["All-Reasoning"],
    )
    points = sorted((cost, acc) for acc, cost, _, _ in paper.LLAMA_FAMILY.values())
    costs = [ai[1], *(c for c, _ in points), ar[1]]
    accuracies = [ai[0], *(a for _, a in points), ar[0]]
    return float(chord_elevations(costs, accuracies).mean())


#: The smallest effect of interest of "concave" (accuracy points), fixed before any run: half
#: the paper's own mean elevation (:func:`paper_elevation`). A straight line (Random's chord)
#: has elevation zero, so it fails the claim; a frontier bent as little as half the paper's
#: is inconclusive at best.
CONCAVITY_SESOI = round(0.5 * paper_elevation(), 3)
#: The texts of the chapter's findings (the claims table matches their beginnings).
CONCAVE = (
    f"concave frontier: RACER's points lie at least {CONCAVITY_SESOI:g} pts above the chords of "
    "their neighbours on average, none below by as much (every judge and set)"
)
#: The findings by the short names the page glues them under.
FINDINGS = {"concave": CONCAVE, "instruct": OVER_INSTRUCT, "reasoning": OVER_REASONING}
#: The test of one member of a gain claim (over All-Instruct, over All-Reasoning): above the
#: accuracy SESOI, its power stated at the paper's effect on that quantity (§5.3 prints no gap
#: over All-Reasoning at half its cost: the accuracy effect the paper reads, Table 3).
_GAIN = Test(1, 0.0, effects.ROUTER_ACCURACY.sesoi, effects.ROUTER_ACCURACY.expected())


def _paper_gain_over_instruct() -> float:
    """The only gain of RACER over All-Instruct the paper prints: Table 7's RACER accuracy,
    averaged over its budgets as the finding pools the build's, minus All-Instruct's (points;
    the Llama pair: Fig. 4's own gaps are drawn, not printed)."""
    racer = np.mean([acc for acc, _, _, _ in paper.LLAMA_FAMILY.values()])
    return float(racer - paper.LLAMA_FAMILY_ENDPOINTS["All-Instruct"][0])


def _endpoints(ends: pd.DataFrame, method: str) -> pd.DataFrame:
    """One fixed mode's ``accuracy`` and ``cost`` per judge, set and seed."""
    return ends[ends["method"] == method].set_index(list(KEYS))[["accuracy", "cost"]]


def _frontier_elevations(runs: pd.DataFrame, ends: pd.DataFrame) -> pd.DataFrame:
    """Per judge, set, seed and budget: RACER's elevation above the chord of its neighbours on
    that seed's frontier (:func:`chord_elevations`; All-Instruct and All-Reasoning of the same
    records close it)."""
    lo, hi = _endpoints(ends, "All-Instruct"), _endpoints(ends, "All-Reasoning")
    rows = []
    racer = runs[runs["method"] == "RACER"]
    for key, sub in racer.groupby(list(KEYS), sort=False):
        sub = sub.sort_values("budget")
        elevation = chord_elevations(
            [lo.loc[key, "cost"], *sub["cost"], hi.loc[key, "cost"]],
            [lo.loc[key, "accuracy"], *sub["accuracy"], hi.loc[key, "accuracy"]],
        )
        labels = dict(zip(KEYS, key))
        rows += [{**labels, "budget": b, "elevation": e} for b, e in zip(sub["budget"], elevation)]
    return pd.DataFrame(rows, columns=[*KEYS, "budget", "elevation"])


def _groups(values: pd.DataFrame, by: Sequence[str]) -> dict[str, pd.Series]:
    """The per-seed ``d`` of each group ``by`` of ``values`` (one row per seed), by member
    name."""
    return {
        ", ".join(f"C = {v:g}" if k == "budget" else str(v) for k, v in zip(by, key)): group["d"]
        for key, group in values.groupby(list(by), sort=False)
    }


def _span(members: dict[str, verdicts.Verdict]) -> str:
    """The members' mean effects, lowest to highest (points)."""
    effects = np.array([v.effect for v in members.values()], dtype=float)
    effects = effects[np.isfinite(effects)]
    if not effects.size:
        return "no estimate"
    return f"{effects.min():+.2f} to {effects.max():+.2f} pts"


def _member_table(members: dict[str, verdicts.Verdict]) -> pd.DataFrame:
    """A family's members (name) with their own verdicts, before Holm's correction."""
    return pd.DataFrame([{"member": k, **v.columns()} for k, v in members.items()])


def concavity(runs: pd.DataFrame, ends: pd.DataFrame, sesoi: float = CONCAVITY_SESOI):
    """§5.3's "concave frontier", two parts joined (``verdicts.conjunction``, an
    intersection-union test): *it bends*, per judge and set (a member) each seed's mean
    elevation of RACER's points above their neighbours' chords (:func:`_frontier_elevations`)
    shown to exceed ``sesoi`` (a minimum-effect test), every member; and *no dip*, per judge,
    set and budget each point's elevation shown above ``-sesoi`` (non-inferiority), every
    member. A straight frontier (elevation zero) fails the first part, a point under its
    chord the second. Returns the finding's row and the members of both parts."""
    elevations = _frontier_elevations(runs, ends).rename(columns={"elevation": "d"})
    mean = elevations.groupby(list(KEYS), sort=False)["d"].mean().reset_index()
    expected = paper_elevation()  # the power is stated at the paper's own bend
    family = Family(
        from_rows("bends", _groups(mean, ("judge", "set")), Test(1, 0.0, sesoi, expected))
        + from_rows(
            "no dip", _groups(elevations, ("judge", "set", "budget")), Test(1, -sesoi, 0, expected)
        ),
        parts=("bends", "no dip"),
    )
    found = family.verdicts()
    bends, points = found["bends"], found["no dip"]
    verdict = replace(family.join(found), sesoi=sesoi)
    observed = (
        f"mean elevation above the neighbours' chords {_span(bends)} over {len(bends)} "
        f"judge x set members, each point's {_span(points)}; SESOI {sesoi:g} pts (half the "
        f"paper's {paper_elevation():.2f})"
    )
    members = {f"mean: {k}": v for k, v in bends.items()} | {
        f"point: {k}": v for k, v in points.items()
    }
    row = _row(
        CONCAVE, KEY_CONCAVE, verdict, observed, "judge x set (x budget)", family, sesoi=sesoi
    )
    return row, members


def over_all_instruct(runs: pd.DataFrame, ends: pd.DataFrame, benchmarks: Sequence[str]):
    """Fig. 4: RACER improves over All-Instruct on the OOD benchmarks: per judge and benchmark
    (a member), per seed RACER's accuracy pooled over the budgets minus All-Instruct's on the
    same records, directional > 0, Holm over the members."""
    racer = runs[(runs["method"] == "RACER") & runs["set"].isin(benchmarks)]
    pooled = racer.groupby(list(KEYS), sort=False)["accuracy"].mean()
    d = (pooled - _endpoints(ends, "All-Instruct")["accuracy"]).dropna().rename("d").reset_index()
    gain = replace(_GAIN, expected=_paper_gain_over_instruct())
    family = Family(from_rows("", _groups(d, ("judge", "set")), gain), parts=("",))
    found = family.verdicts()
    members, verdict = found[""], family.join(found)
    observed = (
        f"RACER (mean over budgets) minus All-Instruct {_span(members)} over {len(members)} "
        "judge x benchmark members"
    )
    row = _row(OVER_INSTRUCT, KEY_OVER_INSTRUCT, verdict, observed, "judge x benchmark", family)
    return row, members


def over_all_reasoning(
    runs: pd.DataFrame,
    ends: pd.DataFrame,
    sets: Sequence[str] = ("train", "test"),
    share: float = paper.FRONTIER_HALF_COST,
):
    """§5.3: at about ``share`` x All-Reasoning's cost RACER often surpasses All-Reasoning: per
    judge and split (a member), per seed the best RACER accuracy among the budgets whose cost
    is at most ``share`` x All-Reasoning's cost on the same records, minus All-Reasoning's
    accuracy (no such budget: no value for that seed), directional > 0; the claim holds on
    most members (``verdicts.most``)."""
    hi = _endpoints(ends, "All-Reasoning").rename(columns=lambda c: f"ar_{c}")
    racer = runs[(runs["method"] == "RACER") & runs["set"].isin(sets)]
    racer = racer.join(hi, on=list(KEYS))
    cheap = racer[racer["cost"] <= share * racer["ar_cost"]]
    best = (
        cheap.groupby(list(KEYS))["accuracy"].max()
        - cheap.groupby(list(KEYS))["ar_accuracy"].first()
    )
    every_seed = racer[list(KEYS)].drop_duplicates().set_index(list(KEYS)).index
    d = best.reindex(every_seed).rename("d").reset_index()
    family = Family(
        from_rows("", _groups(d, ("judge", "set")), _GAIN), combine={"": MOST}, parts=("",)
    )
    found = family.verdicts()
    members, verdict = found[""], family.join(found)
    observed = (
        f"best RACER run at <= {share:g} x All-Reasoning's cost minus All-Reasoning "
        f"{_span(members)} over {len(members)} judge x split members; "
        f"{int(d['d'].notna().sum())} of {len(d)} seeds had such a run"
    )
    row = _row(OVER_REASONING, KEY_OVER_REASONING, verdict, observed, "judge x split", family)
    return row, members


def _row(
    finding: str,
    key: str,
    verdict: verdicts.Verdict,
    observed: str,
    over: str,
    family: Family,
    **labels: Any,
):
    """A findings row: the verdict, the members it is ``over`` (words) and its ``family``
    (:data:`racer_lib.claims.families.PER_SEED`, for the redraws)."""
    return {
        "finding": finding,
        "key": key,
        "family": over,
        **labels,
        "observed": observed,
        **verdict.columns(),
        "basis": experiments.BASIS_LEARNED,
        PER_SEED: family.to_json(),
    }


def frontier_findings(
    runs: pd.DataFrame, ends: pd.DataFrame, benchmarks: Sequence[str], provenance: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """§5.3's three readings of Fig. 4, each ONE row decided by the protocol
    (:func:`concavity`, :func:`over_all_instruct`, :func:`over_all_reasoning`), with their
    statuses (:func:`racer_lib.paper.claims.add_status`; no simulator parameter fixes a trained
    router's result); and the concavity's members (:func:`_member_table`)."""
    concave, points = concavity(runs, ends)
    rows = [
        concave,
        over_all_instruct(runs, ends, benchmarks)[0],
        over_all_reasoning(runs, ends)[0],
    ]
    findings = add_status(rows, provenance, registry.FRONTIER, FINDINGS_CSV)
    return findings, _member_table(points)


def racer_vs_random(summary: pd.DataFrame, name: str) -> pd.DataFrame:
    """The page's view of an :func:`racer_lib.evaluation.metrics.over_seeds` table on one set
    ``name``: per judge and budget, RACER's and Random's mean accuracy and cost, and RACER's
    lead in points."""
    wide = summary[summary["set"] == name].pivot_table(
        index=["judge", "budget"], columns="method", values=["accuracy_mean", "cost_mean"]
    )
    wide.columns = [f"{m} {q.split('_')[0]}" for q, m in wide.columns]
    wide["RACER − Random"] = wide["RACER accuracy"] - wide["Random accuracy"]
    return wide


def thinned_frontier(records: pd.DataFrame, points: int = 400, **fixed: Any) -> pd.DataFrame:
    """The oracle frontier of a set (:func:`racer_lib.evaluation.metrics.oracle_frontier`) kept at
    about
    ``points`` evenly spaced vertices (enough to draw), with ``fixed`` columns appended."""
    frontier = evaluate.oracle_frontier(records)
    keep = np.unique(np.linspace(0, len(frontier) - 1, points).round().astype(int))
    return frontier.iloc[keep].assign(**fixed)


def gap_to_random(runs: pd.DataFrame, records: pd.DataFrame, **fixed: Any) -> dict[str, Any]:
    """How far a router's runs on one set (``RACER`` and its ``Random`` rows, in pairs) lie
    above Random: the area between the mean curve over budgets and Random's chord
    (:func:`racer_lib.evaluation.metrics.area_above_random`), the covered cost range, and the mean
    and
    smallest per-run accuracy gap (points)."""
    racer, rand = runs[runs["method"] == "RACER"], runs[runs["method"] == "Random"]
    curve = racer.groupby("budget")[["cost", "accuracy"]].mean()
    gap = racer["accuracy"].to_numpy() - rand["accuracy"].to_numpy()
    return {
        **fixed,
        "area_above_random": evaluate.area_above_random(curve, records),
        "cost_low": curve["cost"].min(),
        "cost_high": curve["cost"].max(),
        "mean_gap_points": gap.mean(),
        "min_gap_points": gap.min(),
    }


def _where(frame, where: dict):
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        mask &= (frame[column] == value).to_numpy()
    return frame[mask]


def _frontier_panel(ax: plt.Axes, oracle, ends, summary, methods, **where) -> None:
    """One panel of Fig. 4: the oracle frontier (dotted, flat past its last vertex: more tokens
    buy nothing more), the two fixed modes and their chord, and each method's curve over
    budgets. ``oracle``, ``ends`` (rows per method with ``cost`` and ``accuracy``) and
    ``summary`` are whole tables, of which the rows matching ``where`` (e.g. ``judge=...,
    set=...``) are drawn."""
    orc, summary = _where(oracle, where), _where(summary, where)
    end = _where(ends, where).set_index("method")
    top = end.loc["All-Reasoning", "cost"] * 1.05
    ax.plot(
        [*orc["cost"], top],
        [*orc["accuracy"], orc["accuracy"].iloc[-1]],
        ls=":",
        color="black",
        lw=1,
        label="oracle",
    )
    plots.endpoints(ax, end["cost"].to_dict(), end["accuracy"].to_dict())
    plots.method_curves(ax, summary, methods)
    ax.set_ylim(end["accuracy"].min() - 2, max(orc["accuracy"].max(), end["accuracy"].max()) + 1.5)
    ax.set_xlim(min(0.8, orc["cost"].min() - 0.1), top)
    ax.set_title(" · ".join(str(v) for v in where.values()), fontsize=9)


def _label_grid(axes, xlabel: str, ylabel: str) -> None:
    """Axis labels on the bottom row and the left column of a grid of panels only."""
    for ax in axes[-1]:
        ax.set_xlabel(xlabel)
    for row in axes:
        row[0].set_ylabel(ylabel)


@dataclass
class FrontierTables:
    """The chapter's tables, gathered judge by judge and seed by seed (:meth:`add`): the runs
    of RACER and its Random twin per set (``runs``, one frame per judge and seed), the two
    fixed modes (``ends``), the thinned oracle frontier of the first replicate (``oracles``),
    the gap to Random (``areas``), the sets' sizes (``sizes``) and the records' provenances.
    Every row but the oracle's carries its replicate ``seed``."""

    runs: list[pd.DataFrame] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    oracles: list[pd.DataFrame] = field(default_factory=list)
    areas: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[dict[str, Any]] = field(default_factory=list)
    provenances: set[str] = field(default_factory=set)

    def add(
        self,
        judge: str,
        seed: int,
        result: train.TrainResult,
        sets: experiments.Sets,
        oracle: bool = False,
    ) -> None:
        """Evaluate ``judge``'s routers trained on replicate ``seed``'s records (``result``) on
        each of ``sets`` (drawn with the same seed) beside Random at each router's reasoning
        rate and the fixed modes, with the oracle frontier when ``oracle``; append the rows."""
        mine = pd.DataFrame(
            experiments.policy_rows(
                result,
                sets,
                method="RACER",
                random=("RACER",),
                lead=("judge", "set", "budget", "seed", "method"),
                judge=judge,
            )
        )
        self.runs.append(mine)
        self.ends += experiments.reference_rows(
            sets, lead=("judge", "set", "seed", "method"), judge=judge, seed=seed
        )
        for name, (recs, _) in sets.items():
            self.provenances.add(rec.provenance(recs))
            self.sizes.append({"judge": judge, "set": name, "seed": seed, "pairs": len(recs)})
            if oracle:
                self.oracles.append(thinned_frontier(recs, judge=judge, set=name, seed=seed))
            self.areas.append(
                gap_to_random(mine[mine["set"] == name], recs, judge=judge, set=name, seed=seed)
            )


def frontier_figure(oracle, ends, summary, judge: str, sets: list[str]) -> plt.Figure:
    """One judge's row of Fig. 4 as a figure of its own, at a readable size: a
    :func:`_frontier_panel` per set of ``sets`` (Random and RACER; the fixed modes' mean over
    the seeds), labelled on the outer panels, with the legend in the last, empty, panel."""
    ends = (
        pd.DataFrame(ends)
        .groupby(["judge", "set", "method"], as_index=False, sort=False)[["accuracy", "cost"]]
        .mean()
    )
    fig, axes = plt.subplots(2, 3, figsize=(9.0, 5.6), squeeze=False)
    fig.subplots_adjust(hspace=0.5, wspace=0.32)
    for ax, name in zip(axes.flat, sets):
        _frontier_panel(ax, oracle, ends, summary, ["Random", "RACER"], judge=judge, set=name)
    _label_grid(axes, "realized cost ratio", "accuracy (%)")
    plots.legend_in(axes.flat[-1], axes[0][0])
    return fig


_OOD = ["judgebench", "rewardbench", "rewardbench2"]
_WITHIN = f"{100 * RATIO_TOLERANCE:g} % over C"
#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 4",
        "on the in-distribution test split RACER is more accurate than Random at the same "
        "reasoning rate",
        registry.FRONTIER,
        Difference(
            RUNS_CSV,
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("judge", "budget", SEED),
            where={"set": "test"},
            effect=effects.SELECTION_GAIN,
        ),  # fmt: skip
        sensitivity="frontier_random_id",
        null="embedding",
        planted=True,
    ),
    Claim(
        "Fig. 4",
        "on the OOD benchmarks RACER keeps a consistent gain over Random (every judge and "
        "benchmark)",
        registry.FRONTIER,
        Difference(
            RUNS_CSV,
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("judge", "set", "budget", SEED),
            where={"set": _OOD},
            members=("judge", "set"),
            effect=effects.SELECTION_GAIN,
        ),  # fmt: skip
        sensitivity="frontier_random_ood",
        null="embedding",
        planted=True,
    ),
    Claim(
        "Fig. 4",
        "on the OOD benchmarks RACER improves over All-Instruct (every judge and benchmark)",
        registry.FRONTIER,
        Finding(KEY_OVER_INSTRUCT),
    ),
    Claim(
        "Fig. 4",
        f"on the OOD benchmarks RACER's cost stays within its budget (mean cost at most {_WITHIN})",
        registry.FRONTIER,
        Difference(
            RUNS_CSV,
            "cost",
            second_column="budget",
            relative=True,
            where={"method": "RACER", "set": _OOD},
            sign=-1,
            unit=" (cost / C - 1)",
            effect=effects.OVERSPEND,
            bound=True,
        ),  # fmt: skip
        sensitivity="frontier_ood_within",
    ),
    Claim(
        "Fig. 4",
        "RACER's frontier lies above Random's chord: the area between them is positive on "
        "every split",
        registry.FRONTIER,
        Difference(
            AREA_CSV,
            "area_above_random",
            members=("judge", "set"),
            unit=" pts x cost",
            effect=effects.SELECTION_AREA,
        ),  # fmt: skip
        sensitivity="frontier_area",
        null="embedding",
        planted=True,
    ),
    Claim(
        "Fig. 4",
        "RACER's accuracy-cost frontier is concave: each extra unit of budget buys less accuracy",
        registry.FRONTIER,
        Finding(KEY_CONCAVE),
        null="embedding",
    ),
    Claim(
        "§5.3 text",
        f"at about {paper.FRONTIER_HALF_COST:g} x the All-Reasoning cost RACER matches "
        f"All-Reasoning's accuracy (within {effects.ROUTER_ACCURACY.sesoi:g} pt; train and test "
        "splits)",
        registry.FRONTIER,
        HalfCost(RUNS_CSV, ENDS_CSV),
    ),
    Claim(
        "§5.3 text",
        f"at about {paper.FRONTIER_HALF_COST:g} x the All-Reasoning cost RACER often surpasses "
        "All-Reasoning's accuracy (on most judges and splits)",
        registry.FRONTIER,
        Finding(KEY_OVER_REASONING),
    ),
    Claim(
        "Table 9 / §A text",
        "RACER achieves a better accuracy-cost trade-off than self-routing: at half the cost of "
        "self-routing, which spends as much as All-Reasoning (Table 9), RACER is as accurate "
        f"(Qwen3-4B, test split, within {effects.ROUTER_ACCURACY.sesoi:g} pt)",
        registry.FRONTIER,
        HalfCost(RUNS_CSV, ENDS_CSV, sets=("test",), judges=("qwen3-4b",)),
    ),
)
