"""Chapter 18_keeping_the_budget, beyond the paper: keeping the budget after deployment.

A router trained offline meets its budget ``C`` on pairs like its training pairs; on a stream
that shifts (Fig. 3's cheaper and costlier shifts, the out-of-distribution benchmarks) or
whose reasoning costs drift, its realized mean cost drifts with them. This chapter replays
such streams, pair by pair, under five policies (:data:`POLICIES`): offline RACER and RACER-C
routing each pair by the router file's rule (:class:`racer_lib.routing.decision.DecisionRule`),
RACER with a threshold recalibrated offline on the validation pairs
(:func:`recalibrated_threshold`), and paced RACER (:class:`racer_lib.routing.pacing.BudgetPacer`,
online dual descent on a cost price, at :attr:`Design.step`), alone and with its hard cap.
Beside them, offline RACER at the spend the paced run realized, with its threshold set in
hindsight on the whole stream (:func:`hindsight_path`): the accuracy the pacer is compared with
at the same realized cost.

Replicates (:func:`run_replicates`): a seed re-draws the records, their split, the routers'
initialisation and batch order, and the stream's order. Costs are in the router's training
unit (:class:`racer_lib.records.schema.CostUnit`), the unit of ``C`` and what a deployment
observes. The numeric check of the pacing bound (:func:`bound_rows`): with the step
``eta0 / sqrt(T)``, dual descent's budget violation and regret against the best static
threshold in hindsight grow like ``O(sqrt(T))`` (Balseiro, Lu & Mirrokni 2023), so both per
pair shrink like ``T^(-1/2)`` (:func:`bound_slopes`: the fitted log-log slopes).

Its claims (:data:`CLAIMS`) are the companion's own, not the paper's (artifact
:data:`ARTIFACT`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.rules import SEED, Claim, Difference
from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import effects, experiments, plots, registry
from racer_lib.paper.claims import add_status
from racer_lib.paper.engine import rule_findings
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.paper.shift import CHEAPER, COSTLIER
from racer_lib.records import schema as rec
from racer_lib.records import simulate
from racer_lib.records.sets import judge_set
from racer_lib.routing import train
from racer_lib.routing.decision import DecisionRule
from racer_lib.routing.pacing import BudgetPacer

#: The streams: Fig. 3's two shifts (trained on a subset, deployed on OffsetBias), the
#: costlier scenario's router on its own test pairs, reasoning costs drifting up half-way, and
#: the same router deployed on each of the paper's three out-of-distribution benchmarks.
DRIFT = "(c) reasoning costs drift up"
#: Stream -> the out-of-distribution benchmark it is drawn from (whole: nothing trains on it).
BENCHMARK_STREAMS = {
    f"({letter}) {name}": bench
    for letter, name, bench in zip(
        "def", ("JudgeBench", "RewardBench", "RewardBench 2"), simulate.OOD_BENCHMARKS, strict=True
    )
}
STREAMS = (CHEAPER, COSTLIER, DRIFT, *BENCHMARK_STREAMS)
OOD = "offsetbias"
TRAINING = {CHEAPER: "magpie_ultra", COSTLIER: "wildguardmix", DRIFT: "wildguardmix"} | {
    stream: "wildguardmix" for stream in BENCHMARK_STREAMS
}
OFFLINE, OFFLINE_C, RECALIBRATED, PACED, CAPPED = (
    "offline RACER",
    "offline RACER-C",
    "recalibrated threshold",
    "paced RACER",
    "paced RACER, capped",
)
POLICIES = (OFFLINE, OFFLINE_C, RECALIBRATED, PACED, CAPPED)
#: Offline RACER at the paced run's realized spend, its threshold set in hindsight.
MATCHED = "offline RACER at paced spend"
#: The pairs after which the paced cost is claimed within budget.
WARMUP = 500
SPLIT_SHARES = (0.6, 0.2, 0.2)
ARTIFACT = "companion claim, beyond the paper"
RUNS_CSV, CURVES_CSV, BOUND_CSV = "pacing_runs.csv", "pacing_curves.csv", "pacing_bound.csv"
SUMMARY_CSV, BOUND_SUMMARY_CSV = "pacing_summary.csv", "pacing_bound_summary.csv"
SLOPES_CSV, FINDINGS_CSV = "pacing_slopes.csv", "pacing_findings.csv"


@dataclass(frozen=True)
class Design:
    """One build's streams: the simulated ``judge``, the ``budget`` C (training unit), the
    trainer's ``settings``, the records' ``source`` (``dim``, ``scale``, ``simulator``, as
    :func:`racer_lib.records.sets.judge_set` takes them), the pairs per stream
    (``stream_length``), the pacer's step ``eta`` (``None``: :attr:`step`, the bound's
    ``eta0 / sqrt(stream_length)``), the drift stream's factor on reasoning
    costs from half-way (``drift_factor``), the bound check's stream ``lengths`` and step
    ``eta0 / sqrt(T)`` with its i.i.d. ``draws`` per seed, and the routers' decision rule (``rule``,
    :class:`racer_lib.routing.decision.DecisionRule`, its draws seeded by the replicate)."""

    judge: str
    budget: float
    settings: train.TrainSettings
    source: Mapping[str, Any] = field(default_factory=dict)
    stream_length: int = 1000
    eta: float | None = None
    drift_factor: float = 2.0
    lengths: Sequence[int] = (100, 200, 400, 800, 1600, 3200)
    eta0: float = 1.0
    rule: str = "sampled"
    draws: int = 10

    @property
    def step(self) -> float:
        """The pacer's dual step on the streams: ``eta``, or the step for which dual descent's
        violation and regret grow like ``sqrt(T)`` at this stream's length, ``eta0 /
        sqrt(stream_length)`` (Balseiro, Lu & Mirrokni 2023; the bound check's rule)."""
        return self.eta if self.eta is not None else self.eta0 / np.sqrt(self.stream_length)


def recalibrated_threshold(p_valid, costs_valid, budget: float) -> float:
    """The threshold on a router's scores (``p_valid``: ``pi(1 | z)`` or its rule's scores,
    :meth:`racer_lib.routing.decision.DecisionRule.scores`) that a deployment would set
    offline: reasoning on the validation pairs of highest score, as many as keep their mean
    cost (``costs_valid``, shape ``(n, 2)``) within ``budget``; reason iff score > threshold."""
    p = np.asarray(p_valid, dtype=np.float64)
    order = np.argsort(-p, kind="stable")
    c = np.asarray(costs_valid, dtype=np.float64)[order]
    spend = c[:, 0].sum() + np.concatenate([[0.0], np.cumsum(c[:, 1] - c[:, 0])])
    k = int(np.flatnonzero(spend <= budget * len(p)).max(initial=0))
    return float(p[order][k]) if k < len(p) else -np.inf


def hindsight_path(scores, costs, correct) -> tuple[np.ndarray, np.ndarray]:
    """Every static threshold on ``scores`` in hindsight: reasoning on the ``k`` pairs of
    highest score, ``k = 0 .. n``. Returns the total cost and the number correct of each."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    c, r = np.asarray(costs, dtype=np.float64)[order], np.asarray(correct)[order]
    total = c[:, 0].sum() + np.concatenate([[0.0], np.cumsum(c[:, 1] - c[:, 0])])
    right = r[:, 0].sum() + np.concatenate([[0.0], np.cumsum(r[:, 1] - r[:, 0])])
    return total, right


def policy_row(decision, costs, correct, budget: float) -> dict[str, float]:
    """A policy's decisions on a stream: accuracy (%), realized mean cost, the largest running
    mean cost after :data:`WARMUP` pairs (``cost_after``; NaN on a shorter stream), its
    overspend (``cost_after / budget - 1``) and the reasoning rate."""
    d = np.asarray(decision, dtype=np.int64)
    rows = np.arange(len(d))
    spent = np.asarray(costs)[rows, d]
    running = np.cumsum(spent) / (rows + 1)
    after = float(running[WARMUP - 1 :].max()) if len(d) >= WARMUP else np.nan
    return {
        "accuracy": 100 * float(np.asarray(correct)[rows, d].mean()),
        "cost": float(running[-1]),
        "cost_after": after,
        "overspend": after / budget - 1,
        "reasoning_rate": float(d.mean()),
    }


def _matched(p, costs, correct, spent: float) -> np.ndarray:
    """Offline RACER's decisions at a realized total cost of at most ``spent``: the most pairs
    of highest ``p`` that fit (:func:`hindsight_path`)."""
    total, _ = hindsight_path(p, costs, correct)
    k = int(np.flatnonzero(total <= spent + 1e-9).max(initial=0))
    decision = np.zeros(len(p), dtype=np.int64)
    decision[np.argsort(-np.asarray(p), kind="stable")[:k]] = 1
    return decision


def stream_runs(
    scores: Mapping[str, np.ndarray],
    costs: np.ndarray,
    correct: np.ndarray,
    thresholds: Mapping[str, float],
    design: Design,
    checkpoints: Sequence[int],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every policy on one stream: ``scores`` RACER's and RACER-C's scores per pair under their
    rule (keys ``RACER``, ``RACER-C``; reason iff score > the rule's threshold, ``thresholds``
    with the recalibrated one under :data:`RECALIBRATED`), ``costs`` and ``correct`` of shape
    ``(n, 2)``. :data:`CAPPED` adds the pacer's hard cap, its largest cost of one reasoning
    judgment the stream's largest (the judge's longest reasoning, a deployment's
    ``max_tokens``). Returns one row per policy (:func:`policy_row`, and :data:`MATCHED`) and
    the running mean cost of each policy but :data:`MATCHED` at ``checkpoints``."""
    pacer = BudgetPacer(design.budget, threshold=thresholds["RACER"], eta=design.step)
    decisions = {
        OFFLINE: scores["RACER"] > thresholds["RACER"],
        OFFLINE_C: scores["RACER-C"] > thresholds["RACER-C"],
        RECALIBRATED: scores["RACER"] > thresholds[RECALIBRATED],
        PACED: pacer.replay(scores["RACER"], costs)["decision"],
        CAPPED: BudgetPacer(
            design.budget,
            threshold=thresholds["RACER"],
            eta=design.step,
            mode="cap",
            cap_cost=float(costs[:, 1].max()),
        ).replay(scores["RACER"], costs)["decision"],
    }
    spent = float(costs[np.arange(len(costs)), decisions[PACED]].sum())
    decisions[MATCHED] = _matched(scores["RACER"], costs, correct, spent)
    rows, curves = [], []
    for policy, d in decisions.items():
        d = np.asarray(d, dtype=np.int64)
        rows.append({"policy": policy, **policy_row(d, costs, correct, design.budget)})
        running = np.cumsum(costs[np.arange(len(d)), d]) / np.arange(1, len(d) + 1)
        if policy != MATCHED:  # its threshold is set on the whole stream: no running cost
            curves += [{"policy": policy, "t": t, "mean_cost": running[t - 1]} for t in checkpoints]
    return rows, curves


def bound_rows(scores, costs, correct, threshold: float, design: Design, rng) -> list[dict]:
    """The pacing bound on one stream: for each length ``T`` of ``design.lengths``, the first
    ``T`` pairs of ``design.draws`` i.i.d. draws (``rng``) of the pairs (``scores`` under a
    rule whose ``threshold`` it is, ``costs``, ``correct``) paced with step ``eta0 /
    sqrt(T)``: the budget violation, the largest excess of the cumulative cost over ``C t``
    within the first ``T`` pairs (``max(0, max_t sum_{s <= t} c_s - C t)``), and the regret
    (pairs correct) against the best static threshold in hindsight within ``C T``, each also
    per pair (violation relative to C, regret in points), averaged over the draws."""
    draws = rng.integers(0, len(scores), (design.draws, max(design.lengths)))
    rows = []
    for T in design.lengths:
        eta = design.eta0 / np.sqrt(T)
        found = []
        for i in draws[:, :T]:
            pacer = BudgetPacer(design.budget, threshold=threshold, eta=eta)
            paced = pacer.replay(scores[i], costs[i])
            d = paced["decision"]
            total, right = hindsight_path(scores[i], costs[i], correct[i])
            best = float(right[total <= design.budget * T + 1e-9].max(initial=right[0]))
            excess = paced["spent"] - design.budget * np.arange(1, T + 1)
            found.append(
                (
                    max(0.0, float(excess.max())),
                    best - float(correct[i][np.arange(T), d].sum()),
                )
            )
        violation, regret = np.mean(found, axis=0)
        rows.append(
            {
                "T": T,
                "eta": eta,
                "violation": violation,
                "regret": regret,
                "violation_per_pair": violation / (design.budget * T),
                "regret_per_pair": 100 * regret / T,
            }
        )
    return rows


def _pool(records, emb, fitted, rule: DecisionRule) -> tuple[dict, np.ndarray, np.ndarray]:
    """``(scores, costs, correct)`` of every pair of ``records``: the fitted routers' scores
    under ``rule`` (RACER, RACER-C), the costs in their training unit and each mode's
    correctness."""
    probs = fitted.result.p_reasoning(emb)
    ids = records["id"].astype(str).tolist()
    scores = {k: rule.scores(ids, probs[j])[0] for j, k in enumerate(("RACER", "RACER-C"))}
    return scores, fitted.unit.cost(records), rec.correct_matrix(records)


def _stream(pool, length: int, rng: np.random.Generator):
    """A stream of ``length`` pairs drawn from ``pool`` (:func:`_pool`) with replacement by
    ``rng``: a deployment's pairs, i.i.d. from the set."""
    p, costs, correct = pool
    i = rng.integers(0, len(costs), length)
    return {k: v[i] for k, v in p.items()}, costs[i], correct[i]


def _replicate_job(design: Design, seed: int):
    """Replicate ``seed`` as a job of :func:`racer_lib.paper.experiments.fit_together`: it
    yields the fit of RACER and RACER-C on each training subset and returns its rows."""
    source = dict(design.source)
    ood = judge_set(design.judge, OOD, seed=seed, **source)
    configs = [
        train.PolicyConfig(design.budget, seed=seed, variant=v) for v in ("RACER", "RACER-C")
    ]
    step = max(1, design.stream_length // 20)
    checkpoints = list(range(step, design.stream_length + 1, step))
    out: dict[str, Any] = {"runs": [], "curves": [], "bound": [], "provenance": set()}
    fits = {}
    for subset in dict.fromkeys(TRAINING.values()):
        records, emb = judge_set(
            design.judge, subset, seed=seed, split_shares=SPLIT_SHARES, **source
        )
        fits[subset] = (records, emb, (yield records, emb, configs))
        out["provenance"].add(rec.provenance(records))
    out["provenance"].add(rec.provenance(ood[0]))
    deployed = {stream: ood for stream in (CHEAPER, COSTLIER)} | {
        stream: judge_set(design.judge, bench, seed=seed, **{**source, "scale": 1.0})
        for stream, bench in BENCHMARK_STREAMS.items()
    }
    rule = DecisionRule(design.rule, seed)
    base = rule.scores(["0"], [0.5])[1]  # the rule's own threshold on its scores
    for k, stream in enumerate(STREAMS):
        records, emb, fitted = fits[TRAINING[stream]]
        split = {s: (records["split"] == s).to_numpy() for s in ("valid", "test")}
        valid = _pool(records[split["valid"]], emb[split["valid"]], fitted, rule)
        thresholds = {
            "RACER": base,
            "RACER-C": base,
            RECALIBRATED: recalibrated_threshold(valid[0]["RACER"], valid[1], design.budget),
        }
        test = (records[split["test"]], emb[split["test"]]) if stream == DRIFT else deployed[stream]
        pool = _pool(*test, fitted, rule)
        scores, costs, correct = _stream(
            pool, design.stream_length, np.random.default_rng([seed, k])
        )
        if stream == DRIFT:
            costs[len(costs) // 2 :, 1] *= design.drift_factor
        rows, curves = stream_runs(scores, costs, correct, thresholds, design, checkpoints)
        labels = {"stream": stream, "seed": seed, "budget": design.budget, "pairs": len(costs)}
        out["runs"] += [{**labels, **r} for r in rows]
        out["curves"] += [{**labels, **c} for c in curves]
        if stream == COSTLIER:  # the bound where the budget binds
            rng = np.random.default_rng([seed, len(STREAMS)])
            found = bound_rows(pool[0]["RACER"], *pool[1:], base, design, rng)
            out["bound"] += [{"stream": stream, "seed": seed, **r} for r in found]
    return out


def run_replicates(design: Design, seeds: Sequence[int]) -> dict[str, Any]:
    """The replicates ``seeds`` (:func:`racer_lib.evaluation.verdicts.replicate_seeds`),
    trained together (:func:`racer_lib.paper.experiments.fit_together`): ``runs`` (one row
    per stream, policy and seed), ``curves`` (running mean costs), ``bound``
    (:func:`bound_rows`) as DataFrames, and ``provenance`` (a set)."""
    jobs = [_replicate_job(design, s) for s in seeds]
    out: dict[str, Any] = {"runs": [], "curves": [], "bound": [], "provenance": set()}
    for replicate in experiments.fit_together(jobs, design.settings):
        for key in ("runs", "curves", "bound"):
            out[key] += replicate[key]
        out["provenance"] |= replicate["provenance"]
    return {k: pd.DataFrame(v) if k != "provenance" else v for k, v in out.items()}


def pacing_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per stream and policy (:data:`POLICIES`, then :data:`MATCHED`), over the seeds: accuracy
    and realized mean cost (mean, sd, :func:`racer_lib.evaluation.metrics.over_seeds`), the
    mean overspend after :data:`WARMUP` pairs and the share of seeds over budget."""
    table = evaluate.over_seeds(runs, ["stream", "policy"], cost_col="cost")
    table = table.merge(runs.groupby(["stream", "policy"], as_index=False)["overspend"].mean())
    order = {p: i for i, p in enumerate((*POLICIES, MATCHED))}
    table = table.sort_values(
        ["stream", "policy"], key=lambda s: s.map(order) if s.name == "policy" else s
    )
    return table.drop(columns=["cost_unit"]).reset_index(drop=True)


def summary_view(summary: pd.DataFrame) -> pd.DataFrame:
    """The page's columns of :func:`pacing_summary`."""
    cols = [
        "stream",
        "policy",
        "accuracy_mean",
        "accuracy_sd",
        "cost_mean",
        "cost_sd",
        "overspend",
        "violation_rate",
    ]
    return summary[cols].rename(
        columns={"overspend": "overspend after 500", "violation_rate": "seeds over C"}
    )


def curve_panels(curves: pd.DataFrame, budget: float) -> plt.Figure:
    """The running mean cost against the pairs seen, one panel per stream, one line per policy:
    the mean over seeds with its 95 % t-interval (:func:`racer_lib.paper.plots.seed_interval`,
    the interval the claims are decided on) as a band; the budget dashed."""
    table = curves.groupby(["stream", "policy", "t"], as_index=False)["mean_cost"].agg(
        mean_cost_mean="mean", mean_cost_sd="std", seeds="size"
    )
    streams = [s for s in STREAMS if s in set(table["stream"])]
    cols = min(3, len(streams))
    rows = -(-len(streams) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 3.1 * rows), squeeze=False, sharex=True
    )
    for ax in axes.flat[len(streams) :]:
        ax.set_visible(False)
    for ax, stream in zip(axes.flat, streams, strict=False):
        for policy in POLICIES:
            sub = table[(table["stream"] == stream) & (table["policy"] == policy)]
            half = plots.seed_interval(sub, "mean_cost")
            (line,) = ax.plot(sub["t"], sub["mean_cost_mean"], label=policy)
            ax.fill_between(
                sub["t"],
                sub["mean_cost_mean"] - half,
                sub["mean_cost_mean"] + half,
                color=line.get_color(),
                alpha=0.2,
            )
        ax.axhline(budget, color="grey", ls="--", lw=0.8)
        ax.set(xlabel="pairs seen", ylabel="running mean cost", title=stream)
        ax.title.set_fontsize(10)
    axes[0][0].legend()
    fig.tight_layout()
    return fig


def bound_summary(bound: pd.DataFrame) -> pd.DataFrame:
    """The bound check over seeds, per stream length ``T``: the step, the violation and
    regret per pair (mean, sd) and the seeds."""
    return bound.groupby("T", as_index=False).agg(
        eta=("eta", "first"),
        violation_per_pair_mean=("violation_per_pair", "mean"),
        violation_per_pair_sd=("violation_per_pair", "std"),
        regret_per_pair_mean=("regret_per_pair", "mean"),
        regret_per_pair_sd=("regret_per_pair", "std"),
        seeds=("seed", "nunique"),
    )


def bound_slopes(summary: pd.DataFrame) -> pd.DataFrame:
    """The log-log slope of each per-pair quantity of :func:`bound_summary` against ``T`` (a
    least-squares line through the lengths where its mean is positive; NaN with fewer than
    two) beside the bound's ``-1/2``: a slope at or below it is the bound's rate or faster."""
    rows = []
    for q in ("violation_per_pair", "regret_per_pair"):
        sub = summary[summary[f"{q}_mean"] > 0]
        slope = (
            np.polyfit(np.log(sub["T"]), np.log(sub[f"{q}_mean"]), 1)[0]
            if len(sub) >= 2
            else np.nan
        )
        rows.append({"quantity": q, "slope": slope, "bound": -0.5, "lengths": len(sub)})
    return pd.DataFrame(rows)


def bound_panel(summary: pd.DataFrame) -> plt.Figure:
    """Violation (relative to C) and regret (points) per pair against ``T``, log-log, the
    mean over seeds with its 95 % t-interval, beside a line of slope -1/2 through the first
    point."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, q, label in zip(
        axes,
        ("violation_per_pair", "regret_per_pair"),
        ("violation per pair (/ C)", "regret per pair (pts)"),
        strict=True,
    ):
        mean = summary[f"{q}_mean"].to_numpy()
        half = plots.seed_interval(summary, q)
        low = np.clip(np.minimum(half, np.abs(mean) * 0.999), 0, None)  # log axis: stay > 0
        ax.errorbar(
            summary["T"],
            mean,
            yerr=[low, half],
            marker="o",
            capsize=3,
            label="paced, mean over seeds",
        )
        ref = np.nan_to_num(mean[0]) or np.nanmax(mean) or 1.0
        ax.plot(
            summary["T"],
            ref * (summary["T"] / summary["T"].iloc[0]) ** -0.5,
            "k--",
            lw=0.8,
            label="slope -1/2",
        )
        ax.set(xscale="log", yscale="log", xlabel="stream length T", ylabel=label)
        ax.legend()
    fig.tight_layout()
    return fig


def pacing_findings(folder, provenance: str) -> pd.DataFrame:
    """The chapter's claims (:data:`CLAIMS`) decided on the CSVs in ``folder`` by the
    reproduction report's own rules, so that the page and the report cannot disagree."""
    rows = rule_findings(CLAIMS, folder, ("difference",), BASIS_LEARNED)
    return add_status(rows, provenance, registry.KEEPING_BUDGET, FINDINGS_CSV)


def save_results(replicates: Mapping[str, Any], out, save_table) -> tuple[str, dict]:
    """Write the runs, curves and bound rows of :func:`run_replicates` to ``out`` with
    ``save_table`` (:func:`racer_lib.book.chapter.save_table`), then their summaries: returns
    the provenance and the written tables by file name."""
    provenance = rec.combined_provenance(replicates["provenance"])
    written = {
        name: save_table(replicates[key], out / name, provenance)
        for key, name in (("runs", RUNS_CSV), ("curves", CURVES_CSV), ("bound", BOUND_CSV))
    }
    summary = bound_summary(written[BOUND_CSV])
    for name, table in (
        (SUMMARY_CSV, pacing_summary(written[RUNS_CSV])),
        (BOUND_SUMMARY_CSV, summary),
        (SLOPES_CSV, bound_slopes(summary)),
    ):
        written[name] = save_table(table, out / name, provenance)
    return provenance, written


#: The numbers the page's sentences state, as ``(name, csv, column, agg, where)`` for
#: :meth:`racer_lib.book.chapter.Prose.glue_reads`.
PROSE_READS = [
    ("seeds", SUMMARY_CSV, "seeds", "min", {}),
    ("budget", RUNS_CSV, "budget", "max", {}),
    *(
        (f"{key}_{q}_{s}", SUMMARY_CSV, f"{q}_mean", "one", {"stream": stream, "policy": policy})
        for s, stream in zip("abcdef", STREAMS, strict=True)
        for key, policy in (
            ("offline", OFFLINE),
            ("offline_c", OFFLINE_C),
            ("paced", PACED),
            ("capped", CAPPED),
            ("matched", MATCHED),
        )
        for q in ("cost", "accuracy")
    ),
    ("paced_over_max", SUMMARY_CSV, "overspend", "max", {"policy": PACED}),
    ("capped_over_max", SUMMARY_CSV, "overspend", "max", {"policy": CAPPED}),
    ("slope_violation", SLOPES_CSV, "slope", "one", {"quantity": "violation_per_pair"}),
    ("slope_regret", SLOPES_CSV, "slope", "one", {"quantity": "regret_per_pair"}),
]

_COMPANION = dict(members=("stream",), sign=-1, bound=True)
#: The companion's own claims (not the paper's: :data:`ARTIFACT`), decided by the report's
#: rules on :data:`RUNS_CSV`, every stream a member of an intersection-union family.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        ARTIFACT,
        f"paced RACER's running mean cost stays within the budget + "
        f"{100 * effects.PACED_OVERSPEND.sesoi:g} % after {WARMUP} pairs, on every stream "
        "(Fig. 3's cheaper and costlier shifts, reasoning costs drifting up, the three "
        "out-of-distribution benchmarks)",
        registry.KEEPING_BUDGET,
        Difference(
            RUNS_CSV,
            "cost_after",
            where={"policy": PACED},
            second_column="budget",
            relative=True,
            unit=" (cost / C - 1)",
            effect=effects.PACED_OVERSPEND,
            **_COMPANION,
        ),
    ),
    Claim(
        ARTIFACT,
        f"paced RACER's accuracy is at most {effects.PACED_ACCURACY.sesoi:g} point below offline "
        "RACER's at the same realized cost (its threshold set in hindsight), on every stream",
        registry.KEEPING_BUDGET,
        Difference(
            RUNS_CSV,
            "accuracy",
            first={"policy": MATCHED},
            second={"policy": PACED},
            pair_on=("stream", SEED),
            effect=effects.PACED_ACCURACY,
            **_COMPANION,
        ),
    ),
)
