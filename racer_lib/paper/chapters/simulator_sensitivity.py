"""Chapter 16_simulator_sensitivity: how the verdicts on the paper's emergent claims depend on
the simulator's uncalibrated choices (:data:`racer_lib.records.choices.CHOICES`), and three
controls that can fail.

**No borrowed verdicts.** Every claim of the chapters (:func:`racer_lib.paper.registry.claims`) with
a ``sensitivity`` key whose chapter's CSVs this chapter can write (:func:`sensitive_claims`; not
Table 2's baselines) is decided by the claim's own rule (``claim.rule.evaluate``, the report's) on
CSVs written per simulator with the names and columns of the claim's chapter (:func:`write_point`):
Fig. 4's ``frontier_runs.csv``, ``frontier_endpoints.csv``, ``area_above_random.csv``, Table 3's
``beta_runs.csv``, Table 7's ``llama_runs.csv``, Fig. 3's ``ablation_runs.csv`` and its two findings
(:func:`ablation_findings`). What those chapters compute, it computes with their code, no copy: the
area above Random and Random at matched cost
(:func:`racer_lib.evaluation.metrics.area_above_random`,
:func:`~racer_lib.evaluation.metrics.random_at_cost`), Fig. 3's plan, runs, matched-spend controls
and findings (:mod:`racer_lib.paper.shift`); only its sizes are its own, and its routers are not
shared through the router store.

**Replicates.** Each simulator runs the replicate seeds of
:func:`racer_lib.evaluation.verdicts.replicate_seeds`; each draws the records and their split
(:data:`SPLIT_SHARES`, cut anew with the seed) afresh and trains its routers with that seed
(initialisation, batch order); every simulator uses the same replicate seeds. The seeds run in
lockstep (:func:`racer_lib.paper.experiments.fit_together`), their routers trained together.
**The design** (:func:`design`): the default, every knob swept one at a time, a Latin
hypercube, and the :data:`CONTROLS`. :func:`claim_verdicts` runs one
simulator (the bench of the verdicts' error rates calls it on the null and planted ones).
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import qmc

from racer_lib.claims import statuses
from racer_lib.claims.rules import Claim, NotAvailable
from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation import verdicts
from racer_lib.paper import engine as paper_engine
from racer_lib.paper import experiments, files, shift
from racer_lib.paper import registry as stems
from racer_lib.paper.files import (
    ABLATION_RUNS_CSV,
    AREA_CSV,
    BETA_RUNS_CSV,
    CONTROL_RUNS_CSV,
    FINDINGS_GLOB,
    FRONTIER_ENDS_CSV,
    FRONTIER_RUNS_CSV,
    LLAMA_RUNS_CSV,
)
from racer_lib.records import choices, simulate
from racer_lib.records.io import atomic_write
from racer_lib.records.sets import judge_set
from racer_lib.routing import train

#: How each claim's verdict moves over the simulators (:func:`claim_robustness`; the report's).
ROBUSTNESS_CSV = files.ROBUSTNESS_CSV
#: Every record of this chapter is drawn by the simulator (it has no real-data mode).
PROVENANCE = "simulated"
NO_FLIP = "no flip in range"
#: Why an effect over this chapter's simulators differs in size from the same claim's in its
#: own chapter: each simulator is decided on small sets, fewer budgets and linear routers
#: (:class:`Sizes`), so its sign and how often the claim holds carry over, not its size.
EFFECT_SCOPE = (
    "on this chapter's small sets, fewer budgets and linear routers: compare its sign, not its "
    "size, with the claim's own chapter (an area, for one, grows with the budgets it spans)"
)
#: Fig. 3's two scenarios (chapter 08's): the subset trained on; OffsetBias is deployed on.
SCENARIOS = {shift.CHEAPER: "magpie_ultra", shift.COSTLIER: "wildguardmix"}
SHIFTED = "offsetbias"
#: The positive control: the embedding carries every pair latent and the cells well apart.
PLANTED = choices.Simulator(readable=1.0, cell_signal=1.5)
#: The part of :func:`write_point` that writes each CSV a claim's rule reads.
_FRONTIER = (FRONTIER_RUNS_CSV, FRONTIER_ENDS_CSV, AREA_CSV, BETA_RUNS_CSV)
PARTS = {LLAMA_RUNS_CSV: "llama", ABLATION_RUNS_CSV: "ablation", FINDINGS_GLOB: "ablation",
         **dict.fromkeys(_FRONTIER, "frontier")}  # fmt: skip
#: The claims of Fig. 4 and Table 7 that compare RACER with Random.
VERSUS_RANDOM = ("frontier_random_id", "frontier_random_ood", "frontier_area", "llama_vs_random")


def _part(claim: Claim) -> str | None:
    """The part of :func:`write_point` whose CSVs ``claim``'s rule reads (``None``: none; Table
    2's baselines are not re-run here)."""
    csv = getattr(claim.rule, "csv", None) or getattr(claim.rule, "files", None)
    return None if claim.chapter == stems.BASELINES else PARTS.get(csv)


def sensitive_claims() -> dict[str, Claim]:
    """The claims with a ``sensitivity`` key whose CSVs this chapter writes, by key."""
    return {c.sensitivity: c for c in stems.claims() if c.sensitivity and _part(c)}


@dataclass(frozen=True)
class Control:
    """A control: its simulator, how the embeddings are handed to the routers (a key of
    :data:`EMBEDDINGS`), the claims it reads and the decision each must (``holds``) or must
    not (``not holds``) reach for the control to pass."""

    simulator: choices.Simulator
    embedding: str
    keys: tuple[str, ...]
    expect: str


#: The planted signal's expectation: the effect recovered, its interval above zero and not
#: shown below the claim's smallest effect of interest (at these small sizes the interval is
#: too wide to clear the paper's SESOI, so "holds" would ask more than the sizes can show).
RECOVERED = "recovered"
_NULL = tuple(k for k, c in sensitive_claims().items() if c.null == "embedding")
CONTROLS: dict[str, Control] = {
    "null simulator": Control(choices.null_simulator(), "drawn", _NULL, "not holds"),
    "permuted embeddings": Control(choices.DEFAULT, "permuted", VERSUS_RANDOM, "not holds"),
    "planted signal": Control(PLANTED, "drawn", VERSUS_RANDOM, RECOVERED),
}


@dataclass(frozen=True)
class Sizes:
    """What one simulator draws and trains per replicate seed: the judges, the shares of the
    training mixture, of each OOD benchmark and of Fig. 3's subsets, the embedding's dimension,
    and fewer budgets, β and τ than the claims' chapters (each claim's own cells kept)."""

    judge: str = "qwen3-4b"
    llama: str = "llama-3.1-8b"
    scale: float = 0.05
    benchmark_scale: float = 0.25
    shift_scale: float = 0.1
    dim: int = 8
    budgets: tuple[float, ...] = (2.0, 3.0, 4.0)
    betas: tuple[float, ...] = (0.0, 0.005, 0.01, 0.05)
    llama_budgets: tuple[float, ...] = (2.0, 2.5, 3.0, 3.5)
    shift_budget: float = 2.0
    taus: tuple[float, ...] = (0.1, 1.0)


#: The entropy weight of the Fig. 4 and Table 7 routers (the paper's, appendix B.3).
BETA = 0.005

Embedding = Callable[[pd.DataFrame, np.ndarray, np.random.Generator], np.ndarray]
#: How the embeddings reach the routers: as drawn, or permuted across a set's pairs (each pair
#: gets another's, so nothing in it speaks of the pair: the negative control).
EMBEDDINGS: dict[str, Embedding] = {
    "drawn": lambda records, emb, rng: emb,
    "permuted": lambda records, emb, rng: emb[rng.permutation(len(emb))],
}


#: The shares each replicate's training sets are split in anew (with its seed, exactly; the
#: simulator's own shares, :data:`racer_lib.records.simulate.SPLIT_SHARES`): every replicate's
#: train split then has one size, and :func:`write_point` trains the replicates together.
SPLIT_SHARES = (0.8, 0.1, 0.1)
#: A writer of :data:`WRITERS` for one replicate: a generator that yields each fit it needs,
#: ``(records, embeddings, configs)``, is sent the fit, and returns its CSVs' rows
#: (:func:`racer_lib.paper.experiments.fit_together`).
Job = Generator[tuple, experiments.Fit, dict[str, list]]


def _handed(name: str, embedding: Embedding, s: int):
    rng = np.random.default_rng([s, zlib.crc32(name.encode())])
    return lambda recs, emb: embedding(recs, emb, rng)


# ----------------------------------------------------------------------------------------
# One replicate seed: the rows of the claims' CSVs


def _frontier_rows(sim, s: int, sizes: Sizes, embedding: Embedding) -> Job:
    """Fig. 4 and Table 3 at replicate ``s``: RACER-R at every budget and β of ``sizes`` trained
    in one batch on the judge's training mixture; Fig. 4's rows (β = :data:`BETA`) on the train
    and test splits and each OOD benchmark, with Random at RACER's rate, the fixed modes and
    the area above Random; Table 3's on the test split."""
    j = sizes.judge
    records, emb = judge_set(j, "training_mix", seed=s, dim=sizes.dim, scale=sizes.scale,
                             simulator=sim, split_shares=SPLIT_SHARES)  # fmt: skip
    emb = _handed("training_mix", embedding, s)(records, emb)
    betas = sorted({*sizes.betas, BETA})
    configs = experiments.grid(sizes.budgets, [s], outer={"beta": betas}, variant="RACER-R")
    fit = yield records, emb, configs
    sets = experiments.evaluation_sets(j, records, emb, ("train", "test"))
    for bench in simulate.OOD_BENCHMARKS:
        recs, e = judge_set(j, bench, seed=s, dim=sizes.dim, scale=sizes.benchmark_scale,
                            simulator=sim)  # fmt: skip
        sets[bench] = (recs, _handed(bench, embedding, s)(recs, e))
    out = {k: [] for k in PARTS if PARTS[k] == "frontier"}
    for name, (recs, e) in sets.items():
        ends = evaluate.endpoints(recs)
        curve = []
        for cfg, p in zip(configs, fit.result.p_reasoning(e), strict=True):
            point = evaluate.policy_point(recs, p)
            if name == "test":
                out[BETA_RUNS_CSV].append({"beta": cfg.beta, "budget": cfg.budget, "seed": s,
                                             **point})  # fmt: skip
            if cfg.beta == BETA:
                curve.append(point)
                label = {"judge": j, "set": name, "budget": cfg.budget, "seed": s}
                rand = evaluate.random_point(recs, point["reasoning_rate"])
                out[FRONTIER_RUNS_CSV] += [label | {"method": "RACER"} | point,
                                           label | {"method": "Random"} | rand]  # fmt: skip
        out[FRONTIER_ENDS_CSV] += [
            {"judge": j, "set": name, "seed": s, "method": m, **pt} for m, pt in ends.items()
        ]
        area = evaluate.area_above_random(pd.DataFrame(curve), recs)
        out[AREA_CSV].append({"judge": j, "set": name, "seed": s, "area_above_random": area})
    return out


def _llama_rows(sim, s: int, sizes: Sizes, embedding: Embedding) -> Job:
    """Table 7 at replicate ``s``: RACER-R at each of ``llama_budgets`` on the Llama pair's
    training mixture, on its test split beside Random at matched cost and at RACER's rate."""
    records, emb = judge_set(sizes.llama, "training_mix", seed=s, dim=sizes.dim,
                             scale=sizes.scale, simulator=sim,
                             split_shares=SPLIT_SHARES)  # fmt: skip
    emb = _handed("llama", embedding, s)(records, emb)
    configs = experiments.grid(sizes.llama_budgets, [s], variant="RACER-R")
    fit = yield records, emb, configs
    test, test_emb = experiments.evaluation_sets(sizes.llama, records, emb)["test"]
    rows = []
    for cfg, p in zip(configs, fit.result.p_reasoning(test_emb), strict=True):
        own = evaluate.policy_point(test, p)
        at_cost = evaluate.random_at_cost(test, own["cost"])
        at_rate = evaluate.random_point(test, own["reasoning_rate"])
        rows.append({"evaluation_set": "test", "budget": cfg.budget, "seed": s}
                    | {f"racer_{k}": v for k, v in own.items()}
                    | {f"random_at_cost_{k}": v for k, v in at_cost.items()}
                    | {f"random_at_rate_{k}": v for k, v in at_rate.items()})  # fmt: skip
    return {LLAMA_RUNS_CSV: rows}


def _ablation_rows(sim, s: int, sizes: Sizes, embedding: Embedding) -> Job:
    """Fig. 3 at replicate ``s``, as chapter 08 runs one replicate: every method of
    :func:`racer_lib.paper.shift.ablation_plan` (ACER, RACER-R and RACER-C at each of
    ``sizes.taus``) trained on each scenario's subset and deployed on OffsetBias
    (:func:`racer_lib.paper.shift.shift_rows`); under the costlier shift, each RACER-C run's
    matched-spend control (:func:`racer_lib.paper.shift.matched_controls`)."""
    kw = dict(seed=s, dim=sizes.dim, scale=sizes.shift_scale, simulator=sim)
    ood, ood_emb = judge_set(sizes.judge, SHIFTED, **kw)
    test = (ood, _handed(SHIFTED, embedding, s)(ood, ood_emb))
    names, configs = shift.ablation_plan(sizes.taus, sizes.taus, sizes.shift_budget, [s])
    out = {ABLATION_RUNS_CSV: [], CONTROL_RUNS_CSV: []}
    for scenario, subset in SCENARIOS.items():
        records, emb = judge_set(sizes.judge, subset, split_shares=SPLIT_SHARES, **kw)
        emb = _handed(subset, embedding, s)(records, emb)
        fit = yield records, emb, configs
        out[ABLATION_RUNS_CSV] += shift.shift_rows(
            fit, names, records, emb, *test, scenario=scenario, train_subset=subset,
            test_subset=SHIFTED)  # fmt: skip
        if scenario == shift.COSTLIER:
            wanted = shift.control_plan(fit, names, shift.COST_ROBUST)
            if wanted:
                control = yield records, emb, shift.control_configs(wanted)
                out[CONTROL_RUNS_CSV] += shift.control_rows(wanted, control, test,
                                                            scenario=scenario)  # fmt: skip
    return out


def ablation_findings(runs: pd.DataFrame, controls: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Fig. 3's two findings, by chapter 08's own code, as its findings CSVs hold them:
    :func:`racer_lib.paper.shift.ablation_findings` and
    :func:`racer_lib.paper.shift.matched_spend_finding`."""
    return {
        shift.ABLATION_FINDINGS_CSV: shift.ablation_findings(runs, PROVENANCE),
        shift.CONTROL_FINDINGS_CSV: shift.matched_spend_finding(runs, controls, PROVENANCE),
    }


# ----------------------------------------------------------------------------------------
# One simulator: write its CSVs, decide its claims


WRITERS = {"frontier": _frontier_rows, "llama": _llama_rows, "ablation": _ablation_rows}


def write_point(folder: str | Path, sim: choices.Simulator, seeds: Sequence[int], sizes: Sizes,
                settings: train.TrainSettings, embedding: str | Embedding = "drawn",
                parts: Iterable[str] = tuple(WRITERS)) -> Path:  # fmt: skip
    """Write into ``folder`` the CSVs of ``parts`` (keys of :data:`WRITERS`) for simulator
    ``sim`` over the replicate ``seeds``, with the names and columns of the claims' chapters
    and a first column ``provenance``; the embeddings reach the routers through ``embedding``
    (a key of :data:`EMBEDDINGS`, or a function of records, embeddings and a generator)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    hand = EMBEDDINGS[embedding] if isinstance(embedding, str) else embedding
    tables: dict[str, list] = {}
    for part in parts:  # the seeds' jobs in lockstep, each round's fits in one pass
        jobs = [WRITERS[part](sim, s, sizes, hand) for s in seeds]
        for written in experiments.fit_together(jobs, settings):
            for name, rows in written.items():
                tables.setdefault(name, []).extend(rows)
    frames = {name: pd.DataFrame(rows) for name, rows in tables.items()}
    if ABLATION_RUNS_CSV in frames:
        frames |= ablation_findings(frames[ABLATION_RUNS_CSV], frames[CONTROL_RUNS_CSV])
    for name, frame in frames.items():
        frame.insert(0, "provenance", PROVENANCE)
        atomic_write(folder / name, lambda tmp, frame=frame: frame.to_csv(tmp, index=False))
    return folder


def decide(folder: str | Path, keys: Iterable[str]) -> pd.DataFrame:
    """Each claim of ``keys`` (:func:`sensitive_claims`) decided by its own rule on the CSVs in
    ``folder``: ``key``, the verdict's columns (``effect``, ``lo``, ``hi``, ``p``, ``n``,
    ``test``, ``decision``, ``note``), ``unit`` and the rule's ``value`` text; a claim whose
    CSVs are missing has an empty decision and the reason in ``note``."""
    claims, rows = sensitive_claims(), []
    for key in keys:
        rule = claims[key].rule
        unit = getattr(rule, "unit", "").strip()
        try:
            outcome = rule.evaluate(Path(folder))
        except NotAvailable as err:
            rows.append({"key": key, "decision": "", "note": str(err), "unit": unit})
            continue
        rows.append({"key": key, **outcome.verdict.columns(), "unit": unit,
                     "value": outcome.value})  # fmt: skip
    columns = ["key", *verdicts.Verdict.__dataclass_fields__, "unit", "value"]
    return pd.DataFrame(rows).reindex(columns=columns)


def claim_verdicts(simulator: choices.Simulator, seed: int, n_seeds: int, sizes: Sizes,
                   settings: train.TrainSettings, folder: str | Path,
                   embedding: str | Embedding = "drawn",
                   keys: Iterable[str] | None = None) -> pd.DataFrame:  # fmt: skip
    """The verdicts of the claims ``keys`` (default every :func:`sensitive_claims`) on
    ``simulator``: :func:`write_point` of the parts they read, over
    ``replicate_seeds(seed, n_seeds)``, into ``folder``, then :func:`decide`. The bench of the
    verdicts' error rates calls it on the null simulator and on :data:`PLANTED`."""
    claims = sensitive_claims()
    keys = list(claims if keys is None else keys)
    parts = [p for p in WRITERS if any(_part(claims[k]) == p for k in keys)]
    seeds = verdicts.replicate_seeds(seed, n_seeds)
    write_point(folder, simulator, seeds, sizes, settings, embedding, parts)
    return decide(folder, keys)


# ----------------------------------------------------------------------------------------
# The design


def sweep_levels(choice: choices.Choice, levels: int, centre: float | None = None) -> list[float]:
    """A knob's one-at-a-time levels: ``levels`` values evenly spaced from its low to its high
    end, and its value at the design's centre (default: the knob's default), sorted, once."""
    grid = np.linspace(choice.low, choice.high, max(levels, 2))
    centre = choice.default if centre is None else centre
    return sorted({float(np.round(v, 6)) for v in grid} | {float(centre)})


def design(seed: int, levels: int = 2, lhs_points: int = 4, knobs: Sequence[str] = choices.KNOBS,
           centre: choices.Simulator = choices.DEFAULT) -> pd.DataFrame:  # fmt: skip
    """The simulators to run, one row each (``point``, ``design``, ``knob``, ``embedding``,
    then every field of :class:`~racer_lib.records.choices.Simulator`): the ``centre`` (the
    book's default simulator unless a build sets another); each of ``knobs`` at its
    :func:`sweep_levels` with the others at the centre (``sweep``); ``lhs_points`` points of a
    Latin hypercube over the ranges of ``knobs`` (``lhs``, scipy's ``LatinHypercube`` seeded
    with ``seed``); and the :data:`CONTROLS` (``control``; the permuted embeddings on the
    centre)."""
    by_name = {c.name: c for c in choices.CHOICES}
    drawn_ = {"embedding": "drawn"}
    rows = [{"point": "default", "design": "default", "knob": "", **drawn_, **asdict(centre)}]
    for name in knobs:
        for v in sweep_levels(by_name[name], levels, getattr(centre, name)):
            if v != getattr(centre, name):
                sim = centre.with_knobs(**{name: v})
                rows.append({"point": f"{name}={v:g}", "design": "sweep", "knob": name,
                             **drawn_, **asdict(sim)})  # fmt: skip
    if lhs_points:
        unit = qmc.LatinHypercube(d=len(knobs), seed=seed).random(lhs_points)
        low = np.array([by_name[k].low for k in knobs])
        high = np.array([by_name[k].high for k in knobs])
        for i, x in enumerate(qmc.scale(unit, low, high)):
            sim = centre.with_knobs(
                **{k: float(np.round(v, 3)) for k, v in zip(knobs, x, strict=True)}
            )
            rows.append({"point": f"lhs {i + 1}", "design": "lhs", "knob": "", **drawn_,
                         **asdict(sim)})  # fmt: skip
    for name, control in CONTROLS.items():
        sim = centre if control.embedding == "permuted" else control.simulator
        rows.append({"point": name, "design": "control", "knob": "",
                     "embedding": control.embedding, **asdict(sim)})  # fmt: skip
    return pd.DataFrame(rows)


def simulator_of(row: dict[str, Any]) -> choices.Simulator:
    """The :class:`~racer_lib.records.choices.Simulator` of a :func:`design` row."""
    fields = choices.Simulator.__dataclass_fields__
    return choices.Simulator(
        **{k: (bool(row[k]) if k == "reasoning_gain" else float(row[k])) for k in fields}
    )


def choices_table() -> pd.DataFrame:
    """:data:`racer_lib.records.choices.CHOICES` as a table (knob, default, low, high, why)."""
    return pd.DataFrame([asdict(c) for c in choices.CHOICES])


def run_design(points: pd.DataFrame, seed: int, n_seeds: int, sizes: Sizes,
               settings: train.TrainSettings, out: str | Path,
               progress: bool = False) -> pd.DataFrame:  # fmt: skip
    """Every point of a :func:`design`, :func:`claim_verdicts` over ``n_seeds`` replicates of
    master ``seed``, its CSVs in ``out/points/<point>/``: one row per point and claim (a
    control: the claims it reads only), after the point's columns of the design."""
    import sys

    from tqdm import tqdm

    rows = []
    bar = tqdm(points.to_dict("records"), desc="simulators", disable=not progress, file=sys.stderr)
    for point in bar:
        control = CONTROLS.get(point["point"]) if point["design"] == "control" else None
        folder = Path(out) / "points" / re.sub(r"[^\w.=+-]+", "_", point["point"])
        found = claim_verdicts(simulator_of(point), seed, n_seeds, sizes, settings, folder,
                               point["embedding"], control.keys if control else None)  # fmt: skip
        rows.append(found.assign(point=point["point"]))
    points = points.drop(columns="provenance", errors="ignore")
    return points.merge(pd.concat(rows, ignore_index=True), on="point", how="right")


# ----------------------------------------------------------------------------------------
# The controls


def controls_table(points: pd.DataFrame) -> pd.DataFrame:
    """One row per control and claim it reads (``control``, ``key``, ``expect``, ``decision``,
    ``effect``, ``interval``, ``test``, ``n``, ``passes``), from :func:`run_design`'s verdicts
    on the control's own CSVs: the negative controls pass when the claim does not hold (a
    claim that holds there reads a leak), the planted signal when its effect is recovered
    (:data:`RECOVERED`)."""
    rows = []
    for name, control in CONTROLS.items():
        here = points[points["point"] == name].set_index("key")
        for key in control.keys:
            if key not in here.index:
                continue
            v = here.loc[key]
            holds = v["decision"] == verdicts.HOLDS
            interval = f"[{v['lo']:+.3g}, {v['hi']:+.3g}]" if np.isfinite(v["lo"]) else ""
            if control.expect == RECOVERED:
                passes = v["decision"] != verdicts.FAILS and bool(v["lo"] > 0)
            else:
                passes = holds if control.expect == verdicts.HOLDS else not holds
            rows.append({"control": name, "key": key, "expect": control.expect,
                         "decision": v["decision"], "effect": v["effect"], "interval": interval,
                         "unit": v["unit"], "test": v["test"], "n": v["n"],
                         "passes": passes})  # fmt: skip
    return pd.DataFrame(rows)


def control_summary(controls: pd.DataFrame) -> pd.DataFrame:
    """Per control: the claims it read, how many passed, and ``result`` (``passes`` when every
    one did, else ``fails``)."""
    g = controls.groupby("control", sort=False)["passes"]
    table = pd.DataFrame({"claims": g.size(), "passed": g.sum().astype(int)}).reset_index()
    return table.assign(result=np.where(table["passed"] == table["claims"], "passes", "fails"))


# ----------------------------------------------------------------------------------------
# Per claim, over the design


def decision_score(p: float, decision: str) -> float:
    """How far a verdict is from flipping: ``log10(ALPHA / p)`` (positive exactly when the
    claim holds, p < ALPHA), clipped to ±12; NaN without a test."""
    if not np.isfinite(p):
        return math.nan
    score = float(np.clip(math.log10(verdicts.ALPHA / max(p, 1e-12)), -12, 12))
    return score if decision == verdicts.HOLDS else min(score, 0.0)


def flip_threshold(values: Sequence[float], scores: Sequence[float]) -> float | None:
    """Where along a sweep (knob ``values``, sorted, with :func:`decision_score`) the claim
    flips between holding and not: the score interpolated linearly to zero between the two
    levels that disagree (the crossing nearest the middle of the sweep if several); ``None``
    if no two neighbours disagree."""
    x, sc = np.asarray(values, float), np.asarray(scores, float)
    crossings = []
    for i in range(len(x) - 1):
        if np.isfinite(sc[i] + sc[i + 1]) and (sc[i] > 0) != (sc[i + 1] > 0):
            span = sc[i] - sc[i + 1]
            t = sc[i] / span if span else 0.5
            crossings.append(x[i] + t * (x[i + 1] - x[i]))
    if not crossings:
        return None
    middle = (x[0] + x[-1]) / 2
    return float(min(crossings, key=lambda c: abs(c - middle)))


def sweeps(points: pd.DataFrame, key: str) -> dict[str, pd.DataFrame]:
    """Each knob's one-at-a-time sweep of claim ``key``: knob -> the rows of ``points``
    (:func:`run_design`'s) of its sweep and the centre, sorted by the knob's value
    (``value``), with their :func:`decision_score` (``score``)."""
    here = points[(points["key"] == key) & (points["decision"].fillna("") != "")]
    out = {}
    for knob in dict.fromkeys(points.loc[points["design"] == "sweep", "knob"]):
        sweep = here[(here["knob"] == knob) | (here["design"] == "default")]
        scores = [decision_score(p, d) for p, d in zip(sweep["p"], sweep["decision"])]
        out[knob] = sweep.assign(value=sweep[knob], score=scores).sort_values("value")
    return out


def claim_robustness(points: pd.DataFrame) -> pd.DataFrame:
    """Per claim (the report's robustness column reads it): ``key``, ``claim``, ``simulators``
    (the design's points that decided it, controls left out), ``holds_in``, ``fails_in``,
    ``share`` (holds), the rule's effect over them (``effect_median``, ``effect_min``,
    ``effect_max``, in ``unit``; a family's weakest member's), ``depends_most_on`` (the knob
    whose sweep moves the effect most), ``flip_threshold`` (``"readable ≈ 0.15"``, the first
    knob in that order that flips; :data:`NO_FLIP`), ``effect_scope`` (why the effect's size is
    not the claim chapter's, :data:`EFFECT_SCOPE`) and a one-line ``summary``."""
    claims, rows = sensitive_claims(), []
    plausible = points[(points["design"] != "control") & (points["decision"].fillna("") != "")]
    for key in dict.fromkeys(plausible["key"]):
        here = plausible[plausible["key"] == key]
        by_knob = sweeps(points, key)
        ranges = {k: float(s["effect"].max() - s["effect"].min()) for k, s in by_knob.items()}
        order = sorted((k for k in ranges if np.isfinite(ranges[k])), key=lambda k: -ranges[k])
        flip = NO_FLIP
        for knob in order:
            at = flip_threshold(by_knob[knob]["value"], by_knob[knob]["score"])
            if at is not None:
                flip = f"{knob} ≈ {at:.2g}"
                break
        n, k = len(here), int((here["decision"] == verdicts.HOLDS).sum())
        effect, unit = here["effect"].astype(float), str(here["unit"].fillna("").iloc[0])
        rows.append(
            {"key": key, "claim": f"{claims[key].artifact}: {claims[key].claim}",
             "simulators": n, "holds_in": k,
             "fails_in": int((here["decision"] == verdicts.FAILS).sum()), "share": k / n,
             "effect_median": effect.median(), "effect_min": effect.min(),
             "effect_max": effect.max(), "unit": unit,
             "depends_most_on": order[0] if order else "", "flip_threshold": flip,
             "effect_scope": EFFECT_SCOPE,
             "summary": f"holds in {k} of {n} simulators (simulated records); effect "
             f"{effect.median():+.3g} (median; {effect.min():+.3g} to {effect.max():+.3g}) "
             f"{unit}".rstrip() + (f", moving most with {order[0]}" if order else "")
             + f"; {flip}"}
        )  # fmt: skip
    return pd.DataFrame(rows)


#: Each claim's main-build status beside the reduced system's at the default simulator.
AT_DEFAULT_CSV = "status_at_default.csv"
#: The chapters whose results :func:`status_at_default` decides the main build's statuses on.
MAIN_CHAPTERS = (stems.FRONTIER, stems.ROBUSTNESS, stems.BETA, stems.LLAMA)


def status_at_default(points: pd.DataFrame, results_root: str | Path, profile: str) -> pd.DataFrame:
    """Does the reduced system reach the main build's status at the default simulator? Per
    claim of ``points`` (:func:`run_design`): ``main_status``, decided by the claim's rule on
    its chapter's results under ``results_root`` as the report decides it
    (:func:`racer_lib.paper.engine.evaluate_claim`), ``reduced_status``, the ``default``
    point's decision as a status (:func:`racer_lib.claims.statuses.status_of`), ``agrees``."""
    claims, rows = sensitive_claims(), []
    here = points[points["point"] == "default"].set_index("key")
    for key, d in here.iterrows():
        claim = claims[key]
        main = paper_engine.evaluate_claim(claim, Path(results_root) / claim.chapter, True, profile)
        decided = isinstance(d["decision"], str) and d["decision"] != ""
        reduced = statuses.status_of(d["decision"], False, PROVENANCE) if decided else ""
        rows.append(
            {"key": key, "chapter": claim.chapter, "main_status": main["status"],
             "main_effect": main.get("effect", np.nan), "main_seeds": main.get("n", np.nan),
             "reduced_status": reduced or statuses.NOT_REPRODUCIBLE,
             "reduced_effect": d["effect"], "reduced_seeds": d["n"],
             "agrees": main["status"] == reduced, "main_reason": main.get("reason", "")}
        )  # fmt: skip
    return pd.DataFrame(rows)


def agreement(table: pd.DataFrame) -> pd.DataFrame:
    """One row on a :func:`status_at_default` table: the claims ``compared``, those that
    ``agree``, and the keys of those that differ (``differ``, ``none`` when every one agrees)."""
    differ = ", ".join(table.loc[~table["agrees"].astype(bool), "key"]) or "none"
    return pd.DataFrame([{"compared": len(table), "agree": int(table["agrees"].sum()),
                          "differ": differ}])  # fmt: skip


#: The numbers the page's sentences state, ``(name, csv, column, agg, where)`` for
#: :meth:`racer_lib.book.chapter.Prose.glue_reads`: the shares and Fig. 4's in-distribution
#: claim (:data:`ROBUSTNESS_CSV`) and the agreement with the main build (:data:`AGREEMENT_CSV`).
Read = tuple[str, str, str, str, dict[str, Any]]
AGREEMENT_CSV = "status_agreement.csv"
_ID = {"key": "frontier_random_id"}
ROBUSTNESS_READS: list[Read] = [
    *((f"share_{agg}", ROBUSTNESS_CSV, "share", agg, {}) for agg in ("min", "max")),
    ("sims", ROBUSTNESS_CSV, "simulators", "max", {}),
    *((f"id_{c}", ROBUSTNESS_CSV, c, "one", _ID)
      for c in ("share", "effect_median", "effect_min", "effect_max")),
    *((f"id_{c}", ROBUSTNESS_CSV, c, "text", _ID)
      for c in ("depends_most_on", "flip_threshold", "unit")),
]  # fmt: skip
AGREEMENT_READS: list[Read] = [
    (c, AGREEMENT_CSV, c, agg, {}) for c, agg in
    (("compared", "one"), ("agree", "one"), ("differ", "text"))
]  # fmt: skip
