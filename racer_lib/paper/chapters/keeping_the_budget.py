"""Chapter 18_keeping_the_budget, beyond the paper: keeping the budget after deployment.

A router trained offline meets its budget ``C`` on pairs like its training pairs; on a stream
that shifts (Fig. 3's cheaper and costlier shifts, the out-of-distribution benchmarks) or
whose reasoning costs drift, its realized mean cost drifts with them. This chapter replays
such streams, pair by pair, under five policies (:data:`POLICIES`): offline RACER and RACER-C
routing each pair by the router file's rule (:class:`racer_lib.routing.decision.DecisionRule`),
RACER with a threshold recalibrated offline on the validation pairs, and paced RACER
(:class:`racer_lib.routing.pacing.BudgetPacer`, online dual descent on a cost price, at
:attr:`Design.step`), alone and with its hard cap. Beside them, offline RACER at the spend the
paced run realized, with its threshold set in hindsight on the whole stream: the accuracy the
pacer is compared with at the same realized cost (both thresholds:
:mod:`racer_lib.evaluation.pacing`).

Replicates (:func:`run_replicates`): a seed re-draws the records, their split, the routers'
initialisation and batch order, and the stream's order. Costs are in the router's training
unit (:class:`racer_lib.records.schema.CostUnit`), the unit of ``C`` and what a deployment
observes. The numeric check of the pacing bound (:mod:`racer_lib.evaluation.pacing`): with
the step ``eta0 / sqrt(T)``, dual descent's budget violation and regret against the best
static threshold in hindsight grow like ``O(sqrt(T))`` (Balseiro, Lu & Mirrokni 2023), so both
per pair shrink like ``T^(-1/2)``.

With LLMBar's released judgments (:class:`Release`, the full profiles), each judge adds a
stream of real judgments: its routers trained on LLMBar's Natural subset and deployed on the
adversarial subsets (:func:`release_stream`); their rows carry the provenance ``release`` and
are decided apart from the simulated streams.

Its claims (:data:`CLAIMS`) are the companion's own, not the paper's (artifact
:data:`ARTIFACT`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.rules import SEED, Claim, Difference
from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation import pacing
from racer_lib.paper import effects, experiments, plots, registry
from racer_lib.paper.claims import add_status
from racer_lib.paper.engine import rule_findings
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.paper.shift import CHEAPER, COSTLIER
from racer_lib.records import embed, llmbar, simulate
from racer_lib.records import schema as rec
from racer_lib.records.sets import judge_set, stratified_split
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
SIM, RELEASE = "simulated", "release"  # the provenances of the streams' records


#: LLMBar's subset a real stream's routers train on; they are deployed on every other subset.
NATURAL = "natural"
#: Chapter 15's training on LLMBar's few hundred pairs (its notebook's defaults).
RELEASE_TRAINING = {"arch": "mlp", "epochs": 50, "batch_size": 64, "lr": 1e-3, "dual_step": 1e-4}


@dataclass(frozen=True)
class Release:
    """LLMBar's real streams: the ``judges`` whose released judgments are replayed (none: no
    real stream), the ``budget`` C in their training unit (the mean Vanilla tokens of the
    training split, chapter 15's unit), the sentence ``encoder`` of the pairs, the trainer's
    ``training`` fields over :data:`RELEASE_TRAINING` and the share of the Natural subset
    each seed draws for validation (``valid_share``)."""

    judges: Sequence[str] = ()
    budget: float = 10.0
    encoder: str = "all-MiniLM-L6-v2"
    training: Mapping[str, Any] = field(default_factory=dict)
    valid_share: float = 0.2

    def settings(self, base: train.TrainSettings) -> train.TrainSettings:
        """``base`` (its device and precision) with :data:`RELEASE_TRAINING` and ``training``."""
        return replace(base, **{**RELEASE_TRAINING, **self.training})

    def sets(self) -> dict[str, tuple[pd.DataFrame, np.ndarray]]:
        """Each judge's released records (:func:`racer_lib.records.llmbar.llmbar_records`)
        with the pairs' embeddings, row for row."""
        if not self.judges:
            return {}
        pairs = llmbar.llmbar_pairs()
        emb = embed.embed_pairs(pairs, self.encoder, progress=False)
        out = {}
        for judge in self.judges:
            records = llmbar.llmbar_records(judge)
            if not records["id"].astype(str).equals(pairs["id"].astype(str)):
                raise ValueError(f"LLMBar {judge}'s records are not in the pairs' order")
            out[judge] = (records, emb)
        return out


def release_stream(judge: str) -> str:
    """The name of ``judge``'s real stream."""
    return f"LLMBar {judge}: Natural to adversarial"


@dataclass(frozen=True)
class Design:
    """One build's streams: the simulated ``judge``, the ``budget`` C (training unit), the
    trainer's ``settings``, the records' ``source`` (``dim``, ``scale``, ``simulator``, as
    :func:`racer_lib.records.sets.judge_set` takes them), the pairs per stream
    (``stream_length``), the pacer's step ``eta`` (``None``: :attr:`step`, the bound's
    ``eta0 / sqrt(stream_length)``), the drift stream's factor on reasoning
    costs from half-way (``drift_factor``), the bound check's stream ``lengths`` and step
    ``eta0 / sqrt(T)`` with its i.i.d. ``draws`` per seed, the routers' decision rule (``rule``,
    :class:`racer_lib.routing.decision.DecisionRule`, its draws seeded by the replicate) and
    LLMBar's real streams (``release``, :class:`Release`)."""

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
    release: Release = field(default_factory=lambda: Release())

    @property
    def bound(self) -> pacing.BoundCheck:
        """The bound check's setting (:class:`racer_lib.evaluation.pacing.BoundCheck`)."""
        return pacing.BoundCheck(self.budget, tuple(self.lengths), self.eta0, self.draws)

    @property
    def step(self) -> float:
        """The pacer's dual step on the streams: ``eta``, or the step for which dual descent's
        violation and regret grow like ``sqrt(T)`` at this stream's length, ``eta0 /
        sqrt(stream_length)`` (Balseiro, Lu & Mirrokni 2023; the bound check's rule)."""
        return self.eta if self.eta is not None else self.eta0 / np.sqrt(self.stream_length)


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
    decisions[MATCHED] = pacing.matched_decisions(scores["RACER"], costs, correct, spent)
    rows, curves = [], []
    for policy, d in decisions.items():
        d = np.asarray(d, dtype=np.int64)
        rows.append({"policy": policy, **policy_row(d, costs, correct, design.budget)})
        running = np.cumsum(costs[np.arange(len(d)), d]) / np.arange(1, len(d) + 1)
        if policy != MATCHED:  # its threshold is set on the whole stream: no running cost
            curves += [{"policy": policy, "t": t, "mean_cost": running[t - 1]} for t in checkpoints]
    return rows, curves


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


def _checkpoints(design: Design) -> list[int]:
    """The pairs seen at which the running mean cost is recorded: every twentieth of a stream."""
    step = max(1, design.stream_length // 20)
    return list(range(step, design.stream_length + 1, step))


def _replay(fit, test, design: Design, seed: int, k: int, stream: str):
    """Stream ``k`` of replicate ``seed``: the routers of ``fit`` (``(records, embeddings,
    Fit)``; the records' ``valid`` split sets the recalibrated threshold) deployed on ``test``
    (records, embeddings), ``design.stream_length`` pairs drawn from it with ``[seed, k]`` and
    replayed under every policy (:func:`stream_runs`). Returns its rows, its curves and the
    deployed pool (:func:`_pool`)."""
    records, emb, fitted = fit
    rule = DecisionRule(design.rule, seed)
    valid = (records["split"] == "valid").to_numpy()
    valid = _pool(records[valid], emb[valid], fitted, rule)
    thresholds = {
        "RACER": rule.threshold,
        "RACER-C": rule.threshold,
        RECALIBRATED: pacing.recalibrated_threshold(valid[0]["RACER"], valid[1], design.budget),
    }
    pool = _pool(*test, fitted, rule)
    scores, costs, correct = _stream(pool, design.stream_length, np.random.default_rng([seed, k]))
    if stream == DRIFT:
        costs[len(costs) // 2 :, 1] *= design.drift_factor
    rows, curves = stream_runs(scores, costs, correct, thresholds, design, _checkpoints(design))
    labels = {"stream": stream, "seed": seed, "budget": design.budget, "pairs": len(costs)}
    return [{**labels, **r} for r in rows], [{**labels, **c} for c in curves], pool


def _configs(budget: float, seed: int) -> list[train.PolicyConfig]:
    return [train.PolicyConfig(budget, seed=seed, variant=v) for v in ("RACER", "RACER-C")]


def _replicate_job(design: Design, seed: int):
    """Replicate ``seed`` as a job of :func:`racer_lib.paper.experiments.fit_together`: it
    yields the fit of RACER and RACER-C on each training subset and returns its rows."""
    source = dict(design.source)
    ood = judge_set(design.judge, OOD, seed=seed, **source)
    configs = _configs(design.budget, seed)
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
    for k, stream in enumerate(STREAMS):
        records, emb, _ = fit = fits[TRAINING[stream]]
        is_test = (records["split"] == "test").to_numpy()
        test = (records[is_test], emb[is_test]) if stream == DRIFT else deployed[stream]
        rows, curves, pool = _replay(fit, test, design, seed, k, stream)
        out["runs"] += rows
        out["curves"] += curves
        if stream == COSTLIER:  # the bound where the budget binds
            rng = np.random.default_rng([seed, len(STREAMS)])
            threshold = DecisionRule(design.rule, seed).threshold
            found = pacing.bound_rows(pool[0]["RACER"], *pool[1:], threshold, design.bound, rng)
            out["bound"] += [{"stream": stream, "seed": seed, **r} for r in found]
    return out


def _release_job(design: Design, sets: Mapping[str, tuple[pd.DataFrame, np.ndarray]], seed: int):
    """Replicate ``seed`` of LLMBar's real streams (:class:`Release`), a job of
    :func:`racer_lib.paper.experiments.fit_together`: per judge of ``sets``, RACER and RACER-C
    trained on the Natural subset (``valid_share`` of it drawn by the seed for validation),
    deployed on the other subsets; the seed also re-draws the initialisation, batch order and
    the stream, an i.i.d. draw of the deployed pairs (so the pairs vary with the seed too)."""
    release = design.release
    real = replace(design, budget=release.budget)
    out: dict[str, Any] = {"runs": [], "curves": [], "bound": [], "provenance": set()}
    for k, (judge, (records, emb)) in enumerate(sets.items(), start=len(STREAMS) + 1):
        natural = (records["subset"] == NATURAL).to_numpy()
        split = np.full(len(records), "test", dtype=object)
        split[natural] = stratified_split(
            records["subset"][natural], seed, [1 - release.valid_share, release.valid_share]
        )
        records = records.assign(split=split)
        fitted = yield records, emb, _configs(release.budget, seed)
        test = (records[~natural], emb[~natural])
        rows, curves, _ = _replay(
            (records, emb, fitted), test, real, seed, k, release_stream(judge)
        )
        out["runs"] += rows
        out["curves"] += curves
        out["provenance"].add(rec.provenance(records))
    return out


def _gather(replicates: Sequence[dict[str, Any]], out: dict[str, Any]) -> None:
    for replicate in replicates:
        provenance = rec.combined_provenance(replicate["provenance"])
        for key in ("runs", "curves", "bound"):
            out[key] += [{"provenance": provenance, **row} for row in replicate[key]]
        out["provenance"] |= replicate["provenance"]


def run_replicates(design: Design, seeds: Sequence[int]) -> dict[str, Any]:
    """The replicates ``seeds`` (:func:`racer_lib.evaluation.verdicts.replicate_seeds`),
    trained together (:func:`racer_lib.paper.experiments.fit_together`), the simulated streams
    and then LLMBar's real ones (``design.release``): ``runs`` (one row per stream, policy and
    seed), ``curves`` (running mean costs), ``bound``
    (:func:`racer_lib.evaluation.pacing.bound_rows`) as DataFrames, each row with the
    provenance of its records, and ``provenance`` (a set)."""
    out: dict[str, Any] = {"runs": [], "curves": [], "bound": [], "provenance": set()}
    jobs = [_replicate_job(design, s) for s in seeds]
    _gather(experiments.fit_together(jobs, design.settings), out)
    if sets := design.release.sets():
        jobs = [_release_job(design, sets, s) for s in seeds]
        settings = design.release.settings(design.settings)
        _gather(experiments.fit_together(jobs, settings), out)
    return {k: pd.DataFrame(v) if k != "provenance" else v for k, v in out.items()}


def pacing_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per stream (with its provenance) and policy (:data:`POLICIES`, then :data:`MATCHED`), over
    the seeds: accuracy
    and realized mean cost (mean, sd, :func:`racer_lib.evaluation.metrics.over_seeds`), the
    mean overspend after :data:`WARMUP` pairs and the share of seeds over budget."""
    by = ["provenance", "stream", "policy"]
    table = evaluate.over_seeds(runs, by, cost_col="cost")
    table = table.merge(runs.groupby(by, as_index=False)["overspend"].mean())
    order = {p: i for i, p in enumerate((*POLICIES, MATCHED))}
    table = table.sort_values(
        ["stream", "policy"], key=lambda s: s.map(order) if s.name == "policy" else s
    )
    return table.drop(columns=["cost_unit"]).reset_index(drop=True)


def summary_view(summary: pd.DataFrame) -> pd.DataFrame:
    """The page's columns of :func:`pacing_summary` (the provenance where the streams' differ)."""
    mixed = summary["provenance"].nunique() > 1
    cols = ["provenance"] * mixed + ["stream", "policy", "accuracy_mean", "accuracy_sd"]
    cols += ["cost_mean", "cost_sd", "overspend", "violation_rate"]
    return summary[cols].rename(
        columns={"overspend": "overspend after 500", "violation_rate": "seeds over C"}
    )


def curve_panels(curves: pd.DataFrame) -> plt.Figure:
    """The running mean cost against the pairs seen, one panel per stream, one line per policy:
    the mean over seeds with its 95 % t-interval (:func:`racer_lib.paper.plots.seed_interval`,
    the interval the claims are decided on) as a band; the stream's budget dashed."""
    budgets = curves.groupby("stream")["budget"].first()
    table = curves.groupby(["stream", "policy", "t"], as_index=False)["mean_cost"].agg(
        mean_cost_mean="mean", mean_cost_sd="std", seeds="size"
    )
    found = set(table["stream"])
    streams = [s for s in STREAMS if s in found] + sorted(found - set(STREAMS))
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
        ax.axhline(budgets[stream], color="grey", ls="--", lw=0.8)
        ax.set(xlabel="pairs seen", ylabel="running mean cost", title=stream)
        ax.title.set_fontsize(10)
    axes[0][0].legend()
    fig.tight_layout()
    return fig


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


def pacing_findings(folder) -> pd.DataFrame:
    """The chapter's claims (:data:`CLAIMS`) decided on the CSVs in ``folder`` by the
    reproduction report's own rules, so that the page and the report cannot disagree: the
    simulated streams' and the real streams' apart, each row with its provenance (a claim
    without its streams in this run is left out)."""
    parts = []
    for provenance, claims in ((SIM, SIMULATED_CLAIMS), (RELEASE, RELEASE_CLAIMS)):
        rows = rule_findings(claims, folder, ("difference",), BASIS_LEARNED)
        parts.append(add_status(rows, provenance, registry.KEEPING_BUDGET, FINDINGS_CSV))
        parts[-1].insert(0, "provenance", provenance)
    return pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)


def save_results(replicates: Mapping[str, Any], out, save_table) -> tuple[str, dict]:
    """Write the runs, curves and bound rows of :func:`run_replicates` to ``out`` with
    ``save_table`` (:func:`racer_lib.book.chapter.save_table`), then their summaries: returns
    the records' combined provenance and the written tables by file name."""
    provenance = rec.combined_provenance(replicates["provenance"])
    written = {  # each row with its own provenance
        name: save_table(replicates[key], out / name)
        for key, name in (("runs", RUNS_CSV), ("curves", CURVES_CSV), ("bound", BOUND_CSV))
    }
    written[SUMMARY_CSV] = save_table(pacing_summary(written[RUNS_CSV]), out / SUMMARY_CSV)
    bound = rec.combined_provenance(written[BOUND_CSV]["provenance"])
    summary = pacing.bound_summary(written[BOUND_CSV])
    for name, table in ((BOUND_SUMMARY_CSV, summary), (SLOPES_CSV, pacing.bound_slopes(summary))):
        written[name] = save_table(table, out / name, bound)
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
    *(  # the sentence's streams: the simulated ones
        (f"{key}_over_max", SUMMARY_CSV, "overspend", "max", {"policy": p, "provenance": SIM})
        for key, p in (("paced", PACED), ("capped", CAPPED))
    ),
    ("slope_violation", SLOPES_CSV, "slope", "one", {"quantity": "violation_per_pair"}),
    ("slope_regret", SLOPES_CSV, "slope", "one", {"quantity": "regret_per_pair"}),
]


def _claims(provenance: str, streams: str) -> tuple[Claim, Claim]:
    """The companion's two claims on the streams of ``provenance`` (``streams`` names them)."""
    family = dict(members=("stream",), sign=-1, bound=True)
    return (
        Claim(
            ARTIFACT,
            f"paced RACER's running mean cost stays within the budget + "
            f"{100 * effects.PACED_OVERSPEND.sesoi:g} % after {WARMUP} pairs, on every stream "
            f"({streams})",
            registry.KEEPING_BUDGET,
            Difference(
                RUNS_CSV,
                "cost_after",
                where={"policy": PACED, "provenance": provenance},
                second_column="budget",
                relative=True,
                unit=" (cost / C - 1)",
                effect=effects.PACED_OVERSPEND,
                **family,
            ),
        ),
        Claim(
            ARTIFACT,
            f"paced RACER's accuracy is at most {effects.PACED_ACCURACY.sesoi:g} point below "
            "offline RACER's at the same realized cost (its threshold set in hindsight), on "
            + ("every stream" if provenance == SIM else f"every stream ({streams})"),
            registry.KEEPING_BUDGET,
            Difference(
                RUNS_CSV,
                "accuracy",
                first={"policy": MATCHED, "provenance": provenance},
                second={"policy": PACED, "provenance": provenance},
                pair_on=("stream", SEED),
                effect=effects.PACED_ACCURACY,
                **family,
            ),
        ),
    )


#: The companion's own claims (not the paper's: :data:`ARTIFACT`), decided by the report's
#: rules on :data:`RUNS_CSV`, every stream a member of an intersection-union family: on the
#: simulated streams, then on LLMBar's real ones (decided apart: their provenance differs).
SIMULATED_CLAIMS = _claims(
    SIM,
    "Fig. 3's cheaper and costlier shifts, reasoning costs drifting up, the three "
    "out-of-distribution benchmarks",
)
RELEASE_CLAIMS = _claims(
    RELEASE, "LLMBar's released judgments, Natural to adversarial, every judge run"
)
CLAIMS: tuple[Claim, ...] = (*SIMULATED_CLAIMS, *RELEASE_CLAIMS)
