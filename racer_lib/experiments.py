"""The sweeps the chapters run, as tidy rows: train a grid of routers, evaluate them on named
sets next to the fixed modes, Random and the oracle, and route with the score baselines at
budgets matched on validation.

A chapter's experiment reads in four steps::

    configs = experiments.grid(budgets, seeds, variant="RACER-R", tau_r=tau_r)
    fit = experiments.fit(records, embeddings, configs, settings)        # Algorithm 1
    rows = experiments.policy_rows(fit.result, sets, method="RACER", judge=judge)
    rows += experiments.baseline_rows(fit.train, fit.valid, sets, budgets, seeds, options)

Every function returns a list of dicts (one per run) whose keys are the CSV columns, so a
chapter concatenates them and writes them with :func:`racer_lib.chapter.save_table`. The
leading columns of each row follow ``lead``, a tuple of names taken from the row's own labels
(``set``, ``method``, ``budget``, ``seed``) and from the constant ``**fixed`` columns
(``judge=...``); a label missing from ``lead`` is left out of the row, a fixed column missing
from it comes first.

Accuracy and cost are expectations under the policy (:func:`racer_lib.evaluate.policy_point`):
on an evaluation set the cost is the realized ratio against that set's own All-Instruct tokens,
on the validation split it is in the training unit (:func:`racer_lib.evaluate.split_point`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from . import baselines, evaluate, train
from . import records as rec
from .claims import add_status
from .sets import judge_set
from .store import PolicyStore, train_in_chunks, train_stored

#: A named evaluation set: its records and their embeddings (rows aligned).
Sets = Mapping[str, tuple[pd.DataFrame, np.ndarray]]
LEAD = ("set", "method", "budget", "seed")


def grid(
    budgets: Iterable[float],
    seeds: Iterable[int],
    *,
    outer: Mapping[str, Sequence[Any]] | None = None,
    **common: Any,
) -> list[train.PolicyConfig]:
    """Policy configurations for every combination of the ``outer`` axes (each a
    :class:`~racer_lib.train.PolicyConfig` field, varied in the order given, outermost first),
    then ``budgets``, then ``seeds``; ``common`` fields are shared (e.g. ``variant="RACER-R"``,
    ``tau_r=1.0``). Order matters: it is the order of the batch and of the rows."""
    outer = dict(outer or {})
    budgets, seeds = list(budgets), list(seeds)
    return [
        train.PolicyConfig(budget=b, seed=s, **dict(zip(outer, values)), **common)
        for values in itertools.product(*outer.values())
        for b in budgets
        for s in seeds
    ]


def seeds(first: int, n: int) -> list[int]:
    """The seeds of ``n`` runs: ``first, first + 1, ...`` (every chapter's convention)."""
    return [first + k for k in range(n)]


@dataclass
class Fit:
    """Routers trained on one record set: the cost unit, the two splits and the result."""

    unit: Any
    train: train.Split
    valid: train.Split
    result: train.TrainResult


def fit(
    records: pd.DataFrame,
    embeddings: np.ndarray,
    configs: list[train.PolicyConfig],
    settings: train.TrainSettings,
    split: np.ndarray | None = None,
    progress: bool = False,
    store: PolicyStore | bool | None = None,
) -> Fit:
    """Train ``configs`` in one batched pass (:func:`racer_lib.train.train_policies`; in equal
    chunks when the batch would not fit in :data:`racer_lib.store.BATCH_MEMORY_BYTES`) on the
    rows of ``records`` whose split is ``train``, selecting checkpoints on ``valid``.

    ``split``: a split label per row to use instead of the records' ``split`` column (e.g. a
    fresh split per seed, :func:`racer_lib.sets.stratified_split`).
    ``store``: where trained policies are shared (:mod:`racer_lib.store`): a
    :class:`~racer_lib.store.PolicyStore`, ``None`` for the one ``racer run`` names in the
    environment (none outside it), ``False`` to train everything here.
    """
    if split is not None:
        records = records.assign(split=split)
    unit, parts = train.splits(records, embeddings, ("train", "valid"))
    if store is None or store is True:
        store = PolicyStore.from_env()
    if store:
        result, _ = train_stored(
            parts["train"], parts["valid"], configs, settings, unit, store, progress=progress
        )
    else:
        result = train_in_chunks(
            parts["train"], parts["valid"], configs, settings, unit, progress=progress
        )
    return Fit(unit, parts["train"], parts["valid"], result)


def evaluation_sets(
    judge: str,
    records: pd.DataFrame,
    embeddings: np.ndarray,
    splits: Sequence[str] = ("test",),
    benchmarks: Sequence[str] = (),
    *,
    records_dir: str | os.PathLike = "",
    seed: int = 0,
    dim: int = 64,
    scale: float = 1.0,
) -> dict[str, tuple[pd.DataFrame, np.ndarray]]:
    """The named sets a judge's routers are evaluated on: ``splits`` of its training mixture
    (``records`` and ``embeddings``), then each of ``benchmarks``, simulated with ``seed``,
    ``dim`` and ``scale`` or read from ``records_dir`` (:func:`racer_lib.sets.judge_set`)."""
    masks = {name: (records["split"] == name).to_numpy() for name in splits}
    sets = {name: (records[m], embeddings[m]) for name, m in masks.items()}
    for bench in benchmarks:
        sets[bench] = judge_set(
            judge, bench, records_dir=records_dir, seed=seed, dim=dim, scale=scale
        )
    return sets


def _row(
    lead: Sequence[str],
    labels: Mapping[str, Any],
    fixed: Mapping[str, Any],
    *rest: Mapping[str, Any],
) -> dict[str, Any]:
    """One row: fixed columns not in ``lead``, then ``lead`` in order, then ``rest``."""
    known = {**fixed, **labels}
    row = {k: v for k, v in fixed.items() if k not in lead}
    row.update({k: known[k] for k in lead if k in known})
    for part in rest:
        row.update(part)
    return row


def policy_rows(
    result: train.TrainResult,
    sets: Sets,
    *,
    method: str | None = None,
    random: Collection[str] = (),
    valid: train.Split | None = None,
    lead: Sequence[str] = LEAD,
    **fixed: Any,
) -> list[dict[str, Any]]:
    """One row per set and trained policy: its expected accuracy, realized cost and reasoning
    rate, then (with ``valid``) ``valid_accuracy``, ``valid_cost`` and ``valid_rate`` on the
    validation split, then ``best_epoch``.

    ``method`` labels every policy (default: its variant). A policy whose label is in
    ``random`` is followed by a ``Random`` row: reasoning on every pair with the policy's own
    reasoning rate on that set (the paper's Random baseline).
    """
    rows = []
    p_valid = result.p_reasoning(valid.x.numpy()) if valid is not None else None
    for name, (recs, emb) in sets.items():
        p_set = result.p_reasoning(emb)
        for i, (cfg, best) in enumerate(zip(result.configs, result.best_epoch)):
            label = method or cfg.variant
            labels = {"set": name, "method": label, "budget": cfg.budget, "seed": cfg.seed}
            point = evaluate.policy_point(recs, p_set[i])
            extra = {} if valid is None else _valid_columns(valid, p_valid[i])
            rows.append(_row(lead, labels, fixed, point, extra, {"best_epoch": best}))
            if label in random:
                rows.append(
                    _row(
                        lead,
                        {**labels, "method": "Random"},
                        fixed,
                        evaluate.random_point(recs, point["reasoning_rate"]),
                    )
                )
    return rows


def _valid_columns(valid: train.Split, p) -> dict[str, float]:
    point = evaluate.split_point(valid.r.numpy(), valid.c.numpy(), p)
    return {
        "valid_accuracy": point["accuracy"],
        "valid_cost": point["cost"],
        "valid_rate": point["reasoning_rate"],
    }


def baseline_rows(
    tr: train.Split,
    valid: train.Split,
    sets: Sets,
    budgets: Sequence[float],
    seeds: Sequence[int],
    options: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    methods: Sequence[str] = baselines.METHODS,
    valid_point: bool = False,
    lead: Sequence[str] = LEAD,
    **fixed: Any,
) -> list[dict[str, Any]]:
    """The score baselines at matched budgets: for each method and seed, fit on ``tr``, set one
    threshold per budget on ``valid`` (:func:`racer_lib.baselines.match_budget`, the largest
    validation reasoning rate whose cost stays within the budget), and route every set.

    ``options`` are each method's constructor options. The KNN is deterministic, so it is
    fitted once for all seeds. After the set's accuracy, cost and rate, a row holds the
    threshold's validation ``valid_rate`` and ``valid_cost`` or, with ``valid_point``, the
    validation point of its decisions (``valid_accuracy``, ``valid_cost``, ``valid_rate``).
    """
    options = options or {}
    rows = []
    x_tr, x_va = tr.x.numpy(), valid.x.numpy()
    for method in methods:
        router = None
        for s in seeds:
            if router is None or method != "RouterBench-KNN":
                router = baselines.make(method, seed=s, **options.get(method, {}))
                router.fit(x_tr, tr.r.numpy(), tr.c.numpy())
            valid_scores = router.score(x_va)
            thresholds = {
                b: baselines.match_budget(valid_scores, valid.c.numpy(), b) for b in budgets
            }
            for name, (recs, emb) in sets.items():
                scores = router.score(emb)
                for b, th in thresholds.items():
                    labels = {"set": name, "method": method, "budget": b, "seed": s}
                    point = evaluate.policy_point(recs, th.route(scores))
                    extra = (
                        _valid_columns(valid, th.route(valid_scores))
                        if valid_point
                        else {"valid_rate": th.rate, "valid_cost": th.valid_cost}
                    )
                    rows.append(_row(lead, labels, fixed, point, extra))
    return rows


def reference_rows(
    sets: Sets | Mapping[str, pd.DataFrame],
    *,
    oracle: bool = False,
    lead: Sequence[str] = ("set", "method"),
    **fixed: Any,
) -> list[dict[str, Any]]:
    """All-Instruct and All-Reasoning on each set and, with ``oracle``, the oracle: the top of
    :func:`racer_lib.evaluate.oracle_frontier` at the lowest cost that reaches it."""
    rows = []
    for name, value in sets.items():
        recs = value[0] if isinstance(value, tuple) else value
        for method, point in evaluate.endpoints(recs).items():
            rows.append(_row(lead, {"set": name, "method": method}, fixed, point))
        if oracle:
            frontier = evaluate.oracle_frontier(recs)
            top = frontier["accuracy"].max()
            rows.append(
                _row(
                    lead,
                    {"set": name, "method": "Oracle"},
                    fixed,
                    {
                        "accuracy": top,
                        "cost": frontier.loc[frontier["accuracy"] >= top, "cost"].min(),
                        "reasoning_rate": np.nan,
                    },
                )
            )
    return rows


def thinned_frontier(records: pd.DataFrame, points: int = 400, **fixed: Any) -> pd.DataFrame:
    """The oracle frontier of a set (:func:`racer_lib.evaluate.oracle_frontier`) kept at about
    ``points`` evenly spaced vertices (enough to draw), with ``fixed`` columns appended."""
    frontier = evaluate.oracle_frontier(records)
    keep = np.unique(np.linspace(0, len(frontier) - 1, points).round().astype(int))
    return frontier.iloc[keep].assign(**fixed)


def curve_metrics(
    runs: pd.DataFrame, sets: Sets, by: Sequence[str] = ("method", "seed"), **fixed: Any
) -> list[dict[str, Any]]:
    """RouteLLM's AUC, APGR and CPT (:func:`racer_lib.evaluate.routing_metrics`) of each
    group ``by`` of ``runs`` on each set (``runs`` has a ``set`` column)."""
    rows = []
    for name, (recs, *_) in sets.items():
        for key, pts in runs[runs["set"] == name].groupby(list(by)):
            rows.append(
                {**fixed, "set": name, **dict(zip(by, key)), **evaluate.routing_metrics(pts, recs)}
            )
    return rows


def gap_to_random(runs: pd.DataFrame, records: pd.DataFrame, **fixed: Any) -> dict[str, Any]:
    """How far a router's runs on one set (``RACER`` and its ``Random`` rows, in pairs) lie
    above Random: the area between the mean curve over budgets and Random's chord
    (:func:`racer_lib.evaluate.area_above_random`), the covered cost range, and the mean and
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


def selected_checkpoints(result: train.TrainResult) -> pd.DataFrame:
    """Each policy's best valid checkpoint (appendix B.3): its budget, seed, epoch, and the
    validation accuracy and cost at that epoch, from the training history."""
    configs = result.configs
    selected = pd.DataFrame(
        {
            "budget": [c.budget for c in configs],
            "seed": [c.seed for c in configs],
            "best_epoch": result.best_epoch,
        }
    )
    at = result.history[["budget", "seed", "epoch", "valid_accuracy", "valid_cost"]]
    return selected.merge(
        at, left_on=["budget", "seed", "best_epoch"], right_on=["budget", "seed", "epoch"]
    ).drop(columns="epoch")


def training_summary(history: pd.DataFrame) -> pd.DataFrame:
    """Per budget, the last epoch's multiplier, training cost and reward (means over seeds),
    the largest multiplier of any epoch, and how far the final training cost lies from the
    budget (appendix C.1's reading of the curves)."""
    last = (
        history[history["epoch"] == history["epoch"].max()]
        .groupby("budget")
        .agg(
            final_lambda=("lambda", "mean"),
            final_train_cost=("train_cost", "mean"),
            final_train_reward=("train_reward", "mean"),
        )
    )
    peak = history.groupby("budget")["lambda"].max().rename("max_lambda_any_epoch")
    summary = last.join(peak).reset_index()
    summary["final_cost_minus_budget"] = summary["final_train_cost"] - summary["budget"]
    return summary


def budget_matching(runs: pd.DataFrame, set_name: str = "test") -> pd.DataFrame:
    """The thresholds the score baselines were given on validation (one row per judge,
    method, budget and seed; read from one set's rows of :func:`baseline_rows`): the
    validation reasoning rate and cost, and whether that cost is within the budget."""
    matching = runs[(runs["set"] == set_name) & (runs["method"] != "RACER")][
        ["provenance", "judge", "method", "budget", "seed", "valid_rate", "valid_cost"]
    ].copy()
    matching["within_budget"] = matching["valid_cost"] <= matching["budget"]
    return matching.reset_index(drop=True)


def shifted_table(
    runs: pd.DataFrame,
    budget: float,
    sets: Sequence[str],
    paper: Mapping[tuple[str, str], tuple[float, float]],
    judges: Sequence[str],
    methods: Sequence[str],
) -> pd.DataFrame:
    """The advanced-baselines table: each (judge, method) at ``budget``, accuracy and cost
    averaged over ``sets`` (each set's mean over seeds, then the mean of the sets), their sd
    over seeds of the per-seed set means, and the paper's value for ``(method, judge)``
    (``paper``; NaN where it has none)."""
    at = runs[(runs["budget"] == budget) & runs["set"].isin(sets)]
    mean = (
        at.groupby(["judge", "method", "set"])[["accuracy", "cost"]]
        .mean()
        .groupby(["judge", "method"])
        .mean()
    )
    per_seed = at.groupby(["judge", "method", "seed"])[["accuracy", "cost"]].mean()
    spread = per_seed.groupby(["judge", "method"]).std()
    table = pd.DataFrame(
        {
            "accuracy": mean["accuracy"],
            "accuracy_sd": spread["accuracy"],
            "cost": mean["cost"],
            "cost_sd": spread["cost"],
            "seeds": per_seed.groupby(["judge", "method"]).size(),
        }
    ).reset_index()
    values = [paper.get(key, (np.nan, np.nan)) for key in zip(table["method"], table["judge"])]
    table["paper_accuracy"] = [v[0] for v in values]
    table["paper_cost"] = [v[1] for v in values]
    table["method"] = pd.Categorical(table["method"], methods, ordered=True)
    table["judge"] = pd.Categorical(table["judge"], judges, ordered=True)
    return table.sort_values(["judge", "method"]).reset_index(drop=True)


def metric_summary(
    metrics: pd.DataFrame,
    shifted: Sequence[str],
    judges: Sequence[str],
    methods: Sequence[str],
    in_distribution: str = "test",
) -> pd.DataFrame:
    """AUC, APGR and CPT (:func:`curve_metrics` rows) per judge and method: the mean over the
    ``shifted`` sets (``OOD mean``) next to the ``in_distribution`` set."""
    by_set = metrics.groupby(["judge", "method", "set"])[["auc", "apgr", "cpt"]].mean()
    ood = by_set[by_set.index.get_level_values("set").isin(shifted)]
    summary = pd.concat(
        {
            "OOD mean": ood.groupby(["judge", "method"]).mean(),
            in_distribution: by_set.xs(in_distribution, level="set"),
        },
        axis=1,
    )
    return summary.reindex(pd.MultiIndex.from_product([judges, methods], names=["judge", "method"]))


#: Why a finding about trained routers is evidence even on simulated records (the ``basis``
#: column of the findings tables): :mod:`racer_lib.simulate` draws judges' verdicts, costs and
#: embeddings, and knows nothing of routers, baselines or their training.
BASIS_LEARNED = "emerges: routers are trained; the simulator is given no router's result"


def baseline_findings(table: pd.DataFrame, budget: float, provenance: str) -> pd.DataFrame:
    """Two readings of :func:`shifted_table` per judge (the advanced-baselines table): is RACER
    the most accurate method (with its margin over the best baseline, and the paper's), and is
    every method's mean cost on the shifted sets within the budget (thresholds were matched on
    validation in the training unit, each benchmark is priced in its own: this can fail).
    Neither is given to the simulator (``status``: :func:`racer_lib.claims.add_status`)."""
    findings = []
    for judge in table["judge"].unique():
        t = table[table["judge"] == judge].astype({"method": str}).set_index("method")
        rivals = t.drop(index="RACER")
        best = rivals["accuracy"].idxmax()
        margin = t.loc["RACER", "accuracy"] - rivals.loc[best, "accuracy"]
        paper_margin = t.loc["RACER", "paper_accuracy"] - rivals["paper_accuracy"].max()
        findings.append(
            {
                "finding": f"{judge}: RACER is the most accurate method at C = {budget:g}",
                "holds": bool(margin > 0),
                "detail": f"RACER {t.loc['RACER', 'accuracy']:.2f} % vs best baseline {best} "
                f"{rivals.loc[best, 'accuracy']:.2f} % ({margin:+.2f} pts; "
                + (
                    f"paper {paper_margin:+.1f} pts)"
                    if np.isfinite(paper_margin)
                    else "not in the paper)"
                ),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
        over = t[t["cost"] > budget]
        findings.append(
            {
                "finding": f"{judge}: every method has mean OOD cost within C = {budget:g}",
                "holds": bool(over.empty),
                "detail": ", ".join(f"{m} {c:.2f}" for m, c in t["cost"].items())
                + ("" if over.empty else f"; over budget: {', '.join(map(str, over.index))}"),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
    return add_status(findings, provenance)


def set_mean(
    rows: pd.DataFrame | Sequence[Mapping[str, Any]], sets: Sequence[str], by: Sequence[str]
) -> pd.DataFrame:
    """Mean accuracy and cost over ``sets`` of each group ``by``: first the mean within each set
    (over seeds), then the mean of the sets, so every set weighs the same (e.g. the OOD mean
    of the advanced-baselines figure)."""
    rows = pd.DataFrame(rows)
    within = rows[rows["set"].isin(sets)].groupby([*by, "set"])[["accuracy", "cost"]].mean()
    return within.groupby(list(by)).mean().reset_index()


# ----------------------------------------------------------------------------------------
# Routers trained on a fresh small split per seed (the LLMBar routing chapter)


def training_check(
    result: train.TrainResult, x_eval: np.ndarray, *, method: str | None = None, **fixed: Any
) -> list[dict[str, Any]]:
    """Is each policy trained at all? One row per policy of ``result``: ``fixed`` columns, its
    seed, method (default: its variant) and budget, the selected ``best_epoch``, the validation
    accuracy at the first epoch, its smallest and largest value over the epochs and at the best
    epoch, the validation cost at the first and the best epoch, the largest multiplier, and
    ``p_test_sd``, the standard deviation of ``pi(1|z)`` over the rows of ``x_eval`` (0: the
    same probability for every pair, i.e. Random)."""
    p_eval = result.p_reasoning(x_eval)
    hist = result.history
    rows = []
    for i, (cfg, best) in enumerate(zip(result.configs, result.best_epoch, strict=True)):
        h = hist[hist["policy"] == i].set_index("epoch")
        rows.append(
            {
                **fixed,
                "seed": cfg.seed,
                "method": method or cfg.variant,
                "budget": cfg.budget,
                "best_epoch": best,
                "valid_accuracy_epoch1": h.loc[1, "valid_accuracy"],
                "valid_accuracy_min": h["valid_accuracy"].min(),
                "valid_accuracy_max": h["valid_accuracy"].max(),
                "valid_accuracy_best": h.loc[best, "valid_accuracy"],
                "valid_cost_epoch1": h.loc[1, "valid_cost"],
                "valid_cost_best": h.loc[best, "valid_cost"],
                "lambda_max": h["lambda"].max(),
                "p_test_sd": float(np.std(p_eval[i])),
            }
        )
    return rows


def training_check_summary(
    checks: pd.DataFrame, by: Sequence[str] = ("judge", "method", "budget")
) -> tuple[pd.DataFrame, str]:
    """:func:`training_check` rows read two ways: the mean over seeds of each group ``by``, and
    one sentence: by how much validation accuracy moved over training (median over policies),
    the share of policies whose selected validation cost meets the budget, and the share of
    runs (``by`` without ``budget``, plus ``seed``) whose selected cost grows with the budget."""
    view = checks.groupby(list(by))[
        [
            "valid_accuracy_epoch1",
            "valid_accuracy_best",
            "valid_accuracy_min",
            "valid_accuracy_max",
            "valid_cost_epoch1",
            "valid_cost_best",
            "best_epoch",
            "lambda_max",
            "p_test_sd",
        ]
    ].mean()
    moved = (checks["valid_accuracy_max"] - checks["valid_accuracy_min"]).median()
    runs = [c for c in by if c != "budget"] + ["seed"]
    tracks = (
        checks.groupby(runs)
        .apply(
            lambda g: g.sort_values("budget")["valid_cost_best"].is_monotonic_increasing,
            include_groups=False,
        )
        .mean()
    )
    within = (checks["valid_cost_best"] <= checks["budget"]).mean()
    text = (
        f"validation accuracy moved by {moved:.1f} points over training (median over "
        f"policies); the selected validation cost meets the budget for {within:.0%} of "
        f"policies and grows with the budget for {tracks:.0%} of "
        f"({', '.join(runs)}) runs"
    )
    return view, text


def routing_findings(
    runs: pd.DataFrame,
    summary: pd.DataFrame,
    judges: Sequence[str],
    budgets: Sequence[float],
    provenance: str,
    rivals: Sequence[str] = baselines.METHODS,
) -> pd.DataFrame:
    """Three statements per judge, computed whatever their answer (``finding``, ``holds``,
    ``status``, ``detail``, ``basis``; none is given to a simulator, see
    :func:`racer_lib.claims.add_status`): RACER is more accurate than Random at every budget
    (mean paired gap, its sd over seeds and the seeds RACER wins); RACER is at least as
    accurate as ACER averaged over budgets and seeds (with both mean costs); and, at each
    budget, RACER is at least as accurate as the most accurate of ``rivals`` (margin, costs,
    and the sd over seeds of the paired difference). ``runs`` has one row per judge, method,
    budget and seed; ``summary`` is its :func:`racer_lib.evaluate.over_seeds` table."""
    acc = summary.set_index(["judge", "method", "budget"])
    per_seed = runs.set_index(["judge", "method", "budget", "seed"])["accuracy"].sort_index()
    n_seeds = runs["seed"].nunique()
    findings = []
    for judge in judges:
        gap = (per_seed.loc[(judge, "RACER")] - per_seed.loc[(judge, "Random")]).groupby("budget")
        mean_gap, sd_gap = gap.mean(), gap.std()
        wins = gap.apply(lambda g: int((g > 0).sum()))
        findings.append(
            {
                "finding": f"{judge}: RACER is more accurate than Random at every budget",
                "holds": bool((mean_gap > 0).all()),
                "detail": "; ".join(
                    f"C={b:g}: {mean_gap[b]:+.2f} pts (sd {sd_gap[b]:.2f}, RACER "
                    f"ahead in {wins[b]} of {n_seeds} seeds)"
                    for b in budgets
                ),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
        racer = runs[(runs["judge"] == judge) & (runs["method"] == "RACER")]
        acer = runs[(runs["judge"] == judge) & (runs["method"] == "ACER")]
        diff = racer["accuracy"].mean() - acer["accuracy"].mean()
        findings.append(
            {
                "finding": f"{judge}: RACER is at least as accurate as ACER on average",
                "holds": bool(diff >= 0),
                "detail": f"RACER {racer['accuracy'].mean():.2f} % at mean cost "
                f"{racer['cost'].mean():.2f}, ACER {acer['accuracy'].mean():.2f} % at "
                f"mean cost {acer['cost'].mean():.2f} ({diff:+.2f} pts, over "
                f"{len(budgets)} budgets x {n_seeds} seeds)",
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
        for b in budgets:
            others = acc.loc[(judge, list(rivals), b)].reset_index("method")
            best = others.loc[others["accuracy_mean"].idxmax()]
            r = acc.loc[(judge, "RACER", b)]
            margin = r["accuracy_mean"] - best["accuracy_mean"]
            paired = per_seed.loc[(judge, "RACER", b)] - per_seed.loc[(judge, best["method"], b)]
            findings.append(
                {
                    "finding": f"{judge}: at C={b:g}, RACER is at least as accurate as the best "
                    "baseline",
                    "holds": bool(margin >= 0),
                    "detail": f"RACER {r['accuracy_mean']:.2f} % at cost {r['cost_mean']:.2f}; "
                    f"best baseline {best['method']} {best['accuracy_mean']:.2f} % at "
                    f"cost {best['cost_mean']:.2f}; margin {margin:+.2f} pts (sd over "
                    f"seeds of the paired difference {paired.std():.2f}, RACER ahead "
                    f"in {int((paired > 0).sum())} of {n_seeds} seeds)",
                    "calibrated": False,
                    "basis": BASIS_LEARNED,
                }
            )
    return add_status(findings, provenance)


# ----------------------------------------------------------------------------------------
# The robustness ablation (chapter 06): ACER, RACER-R and RACER-C trained on one subset and
# deployed on another


def subset_statistics(
    judge: str,
    roles: Mapping[str, str],
    paper: Mapping[str, tuple[int, float]],
    *,
    records_dir: str | os.PathLike = "",
    seed: int = 0,
    scale: float = 1.0,
) -> pd.DataFrame:
    """The ablation's dataset table: per subset of ``roles`` (subset name: its role), its
    pairs, cost ratio and both modes' accuracy at full size, ``pairs_used`` at ``scale``, the
    paper's pairs and cost ratio (``paper``; NaN where it has none) and the records'
    provenance (last column)."""
    stats = []
    for subset, role in roles.items():
        full, _ = judge_set(judge, subset, records_dir=records_dir, seed=seed, dim=0, scale=1.0)
        row = evaluate.mode_summary(full).iloc[0]
        paper_pairs, paper_ratio = paper.get(subset, (np.nan, np.nan))
        stats.append(
            {
                "subset": subset,
                "role": role,
                "pairs": int(row["n"]),
                "cost_ratio": row["cost_ratio"],
                "acc_instruct": row["acc_instruct"],
                "acc_reasoning": row["acc_reasoning"],
                "pairs_used": len(
                    judge_set(
                        judge, subset, records_dir=records_dir, seed=seed, dim=0, scale=scale
                    )[0]
                ),
                "paper_pairs": paper_pairs,
                "paper_cost_ratio": paper_ratio,
                "provenance": rec.provenance(full),
            }
        )
    return pd.DataFrame(stats)


def trainer_cost_weights(costs: Sequence[float], tau_c: float = 1.0) -> np.ndarray:
    """The weights Algorithm 1's cost adversary gives one batch of pairs whose expected costs
    are ``costs`` (both modes at that cost), at temperature ``tau_c``, as the trainer computes
    them: the costlier pairs must weigh more."""
    c = torch.tensor([[[float(v), float(v)] for v in costs]])
    *_, w_c, _ = train._step_terms(
        torch.zeros(1, len(costs)),
        torch.zeros(1, len(costs), 2),
        c,
        torch.tensor([1.0]),
        torch.tensor([float(tau_c)]),
    )
    return w_c[0].numpy()


def ablation_plan(
    taus_r: Sequence[float], taus_c: Sequence[float], budget: float, seeds: Sequence[int]
) -> tuple[list[str], list[train.PolicyConfig]]:
    """The ablation's named methods and their configurations, in batch order: ACER, then
    RACER-R at each of ``taus_r``, then RACER-C at each of ``taus_c`` (``"RACER-R τ=0.1"``),
    each at ``budget`` with every seed. Returns one name per configuration and the
    configurations."""
    methods = [("ACER", "ACER", np.nan)]
    methods += [(f"RACER-R τ={t:g}", "RACER-R", t) for t in taus_r]
    methods += [(f"RACER-C τ={t:g}", "RACER-C", t) for t in taus_c]
    plan = [
        (
            name,
            train.PolicyConfig(
                budget,
                seed=s,
                variant=variant,
                tau_r=tau if variant == "RACER-R" else 1.0,
                tau_c=tau if variant == "RACER-C" else 1.0,
            ),
        )
        for name, variant, tau in methods
        for s in seeds
    ]
    return [name for name, _ in plan], [cfg for _, cfg in plan]


def shift_rows(
    fitted: Fit,
    names: Sequence[str],
    records: pd.DataFrame,
    embeddings: np.ndarray,
    shifted: pd.DataFrame,
    shifted_embeddings: np.ndarray,
    **fixed: Any,
) -> list[dict[str, Any]]:
    """One row per policy of ``fitted`` (named by ``names``, e.g. :func:`ablation_plan`'s):
    ``fixed`` columns, its method, variant, temperature (NaN for ACER), seed, budget and
    ``best_epoch``, its accuracy, cost and reasoning rate on the ``shifted`` set, then
    ``valid_accuracy`` and ``valid_cost`` on the ``valid`` rows of ``records`` (each set's own
    cost unit), ``final_lambda`` (the multiplier after the last epoch) and ``violated`` (the
    shifted cost exceeds the budget)."""
    result = fitted.result
    valid_mask = (records["split"] == "valid").to_numpy()
    p_valid = result.p_reasoning(embeddings[valid_mask])
    p_shifted = result.p_reasoning(shifted_embeddings)
    hist = result.history
    final_lambda = (
        hist[hist["epoch"] == result.settings.epochs].sort_values("policy")["lambda"].to_numpy()
    )
    rows = []
    for name, cfg, pv, ps, best, lam in zip(
        names, result.configs, p_valid, p_shifted, result.best_epoch, final_lambda, strict=True
    ):
        iid = evaluate.policy_point(records[valid_mask], pv)
        point = evaluate.policy_point(shifted, ps)
        rows.append(
            {
                **fixed,
                "method": name,
                "variant": cfg.variant,
                "tau": {"RACER-R": cfg.tau_r, "RACER-C": cfg.tau_c}.get(cfg.variant, np.nan),
                "seed": cfg.seed,
                "budget": cfg.budget,
                "best_epoch": best,
                **point,
                "valid_accuracy": iid["accuracy"],
                "valid_cost": iid["cost"],
                "final_lambda": lam,
                "violated": bool(point["cost"] > cfg.budget),
            }
        )
    return rows


def ablation_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`shift_rows` over seeds: per scenario and method (in the runs' order of methods)
    :func:`racer_lib.evaluate.over_seeds`, the mean validation accuracy, cost and final
    multiplier, and the method's variant and temperature."""
    order = {name: i for i, name in enumerate(dict.fromkeys(runs["method"]))}
    summary = evaluate.over_seeds(runs, ["scenario", "method"])
    valid = runs.groupby(["scenario", "method"])[
        ["valid_accuracy", "valid_cost", "final_lambda"]
    ].mean()
    summary = summary.merge(valid.reset_index(), on=["scenario", "method"])
    summary = summary.merge(runs[["method", "variant", "tau"]].drop_duplicates(), on="method")
    return summary.sort_values(
        ["scenario", "method"], key=lambda s: s.map(order) if s.name == "method" else s
    ).reset_index(drop=True)


def _violations(scenario: str, label: str, sub: pd.DataFrame) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "method": label,
        "runs": len(sub),
        "violations": int(sub["violated"].sum()),
        "violation_rate": sub["violated"].mean(),
        "cost_mean": sub["cost"].mean(),
        "cost_max": sub["cost"].max(),
    }


def violation_rates(runs: pd.DataFrame, taus_c: Sequence[float]) -> pd.DataFrame:
    """How often each scenario's deployed cost exceeds the budget: ACER, RACER-C at each of
    ``taus_c`` and pooled over them (``"RACER-C (all τ)"``), with ACER's rate beside each row
    and whether the row's rate is below it (empty for ACER)."""
    viol = []
    for scenario in dict.fromkeys(runs["scenario"]):
        here = runs[runs["scenario"] == scenario]
        viol.append(_violations(scenario, "ACER", here[here["variant"] == "ACER"]))
        for t in taus_c:
            viol.append(
                _violations(
                    scenario,
                    f"RACER-C τ={t:g}",
                    here[(here["variant"] == "RACER-C") & (here["tau"] == t)],
                )
            )
        viol.append(_violations(scenario, "RACER-C (all τ)", here[here["variant"] == "RACER-C"]))
    viol = pd.DataFrame(viol)
    acer_rate = viol.set_index(["scenario", "method"])["violation_rate"].xs("ACER", level="method")
    viol["acer_violation_rate"] = viol["scenario"].map(acer_rate)
    viol["fewer_violations_than_acer"] = (
        viol["violation_rate"] < viol["acer_violation_rate"]
    ).where(viol["method"] != "ACER")
    return viol


def ablation_findings(
    runs: pd.DataFrame,
    summary: pd.DataFrame,
    viol: pd.DataFrame,
    taus_r: Sequence[float],
    taus_c: Sequence[float],
    provenance: str,
) -> pd.DataFrame:
    """The paper's four statements on Fig. 3, each checked on the runs (``finding``,
    ``scenario``, ``observed``, ``holds``, ``status``, ``basis``): under the first scenario (the
    cheaper shift) no run exceeds the budget and RACER-R is more accurate than ACER (gain above
    its standard error, at every temperature); under the second (the costlier shift) RACER-C is
    less accurate than ACER and RACER-R, and exceeds the budget less often than ACER. The
    simulator is given the subsets' cost ratios (the direction of each shift), not how trained
    routers respond to them: all four can fail (:func:`racer_lib.claims.add_status`)."""
    mean = summary.set_index(["scenario", "method"])
    cheaper, costlier = list(dict.fromkeys(runs["scenario"]))[:2]
    racer_r = [f"RACER-R τ={t:g}" for t in taus_r]
    racer_c = [f"RACER-C τ={t:g}" for t in taus_c]
    b_rates = viol[viol["scenario"] == costlier].set_index("method")["violation_rate"]

    def acc(scenario, method):
        return mean.loc[(scenario, method), "accuracy_mean"]

    def gain_over_acer(scenario, method):
        """Mean accuracy gain over ACER and the standard error of that difference."""
        sd, n = mean["accuracy_sd"], mean["seeds"]
        se = np.sqrt(sum(sd[(scenario, m)] ** 2 / n[(scenario, m)] for m in (method, "ACER")))
        return acc(scenario, method) - acc(scenario, "ACER"), (se if np.isfinite(se) else np.inf)

    in_a = runs[runs["scenario"] == cheaper]
    best_c = max(acc(costlier, m) for m in racer_c)
    floor = min([acc(costlier, "ACER")] + [acc(costlier, m) for m in racer_r])
    rows = pd.DataFrame(
        [
            {
                "finding": "cheaper shift: every run of every method stays within budget",
                "scenario": cheaper,
                "observed": f"{int(in_a['violated'].sum())} of {len(in_a)} runs over budget",
                "holds": bool(not in_a["violated"].any()),
                "calibrated": False,
                "basis": "emerges from the routers' reasoning rates on the shifted subset, "
                "but largely set by the simulator's cost ratios (Table 1: reasoning is cheaper "
                "there)",
            },
            {
                "finding": "cheaper shift: RACER-R is more accurate than ACER",
                "scenario": cheaper,
                "observed": ", ".join(
                    "{}: {:+.2f} ± {:.2f} pts".format(m, *gain_over_acer(cheaper, m))
                    for m in racer_r
                ),
                "holds": bool(
                    all(g > se for g, se in (gain_over_acer(cheaper, m) for m in racer_r))
                ),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            },
            {
                "finding": "costlier shift: RACER-C is less accurate than ACER and RACER-R",
                "scenario": costlier,
                "observed": (
                    f"best RACER-C {best_c:.2f} %, lowest of ACER and RACER-R {floor:.2f} %"
                ),
                "holds": bool(best_c < floor),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            },
            {
                "finding": "costlier shift: RACER-C stays within budget more often than ACER",
                "scenario": costlier,
                "observed": f"violation rate RACER-C {b_rates['RACER-C (all τ)']:.2f} (all τ), "
                f"ACER {b_rates['ACER']:.2f}",
                "holds": bool(b_rates["RACER-C (all τ)"] < b_rates["ACER"]),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            },
        ]
    )
    return add_status(rows, provenance)


# ----------------------------------------------------------------------------------------
# One grid on one evaluation set (chapters 07 and 10)


def config_rows(
    result: train.TrainResult,
    records: pd.DataFrame,
    embeddings: np.ndarray,
    fields: Sequence[str] = ("budget", "seed"),
) -> list[dict[str, Any]]:
    """One row per policy of ``result``: the :class:`~racer_lib.train.PolicyConfig` ``fields``
    (e.g. ``("beta", "budget", "seed")``), ``best_epoch``, then its accuracy, cost and
    reasoning rate on ``records`` (:func:`racer_lib.evaluate.policy_point`)."""
    p = result.p_reasoning(embeddings)
    return [
        {
            **{f: getattr(cfg, f) for f in fields},
            "best_epoch": best,
            **evaluate.policy_point(records, pi),
        }
        for cfg, pi, best in zip(result.configs, p, result.best_epoch, strict=True)
    ]


def beta_table(
    runs: pd.DataFrame, paper: Mapping[tuple[float, float], tuple[float, float]]
) -> pd.DataFrame:
    """The β table: :func:`racer_lib.evaluate.over_seeds` of :func:`config_rows` by beta and
    budget, with the paper's accuracy and cost of each (beta, budget) cell (``paper``; NaN
    where it has none)."""
    table = evaluate.over_seeds(runs, ["beta", "budget"])
    cells = [
        paper.get(key, (np.nan, np.nan)) for key in zip(table["beta"], table["budget"], strict=True)
    ]
    table["paper_accuracy"] = [v[0] for v in cells]
    table["paper_cost"] = [v[1] for v in cells]
    return table


def mean_difference(
    table: pd.DataFrame, keys: Sequence[str], first: tuple, second: tuple, column: str = "accuracy"
) -> tuple[float, float]:
    """``column``'s mean over seeds at row ``first`` minus that at row ``second`` of an
    :func:`racer_lib.evaluate.over_seeds` ``table`` (rows named by their ``keys`` values), and
    the standard error of that difference (``inf`` with a single seed)."""
    cells = table.set_index(list(keys))
    m = cells.loc[first, f"{column}_mean"] - cells.loc[second, f"{column}_mean"]
    se = np.sqrt(
        sum(cells.loc[k, f"{column}_sd"] ** 2 / cells.loc[k, "seeds"] for k in (first, second))
    )
    return m, (se if np.isfinite(se) else np.inf)


def beta_findings(
    table: pd.DataFrame, betas: Sequence[float], budgets: Sequence[float], provenance: str
) -> pd.DataFrame:
    """The paper's three statements on its β table, checked on a :func:`beta_table` wherever
    the betas they need were run (``finding``, ``budget``, ``observed``, ``holds``, ``status``,
    ``basis``; β acts on training only, so none is given to the simulator): without
    entropy (β = 0) accuracy drops at the tightest budget; β = 0.005 and 0.01 perform alike
    (within half a point or the standard error, if larger); β = 0.05 lowers accuracy. A
    difference counts only beyond the standard error of the difference of the two means."""

    def diff(b1, b2, c):
        return mean_difference(table, ("beta", "budget"), (b1, c), (b2, c))

    tight = min(budgets)
    findings = []
    if {0.0, 0.005} <= set(betas):
        m, se = diff(0.005, 0.0, tight)
        findings.append(
            {
                "finding": "without entropy, accuracy drops at the tightest budget",
                "budget": tight,
                "observed": f"β=0.005 minus β=0: {m:+.2f} ± {se:.2f} pts",
                "holds": bool(m > se),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            }
        )
    if {0.005, 0.01} <= set(betas):
        for c in budgets:
            m, se = diff(0.01, 0.005, c)
            findings.append(
                {
                    "finding": "β = 0.005 and β = 0.01 perform alike",
                    "budget": c,
                    "observed": f"β=0.01 minus β=0.005: {m:+.2f} ± {se:.2f} pts",
                    "holds": bool(abs(m) <= max(se, 0.5)),
                    "calibrated": False,
                    "basis": BASIS_LEARNED,
                }
            )
    if {0.005, 0.05} <= set(betas):
        for c in budgets:
            m, se = diff(0.05, 0.005, c)
            findings.append(
                {
                    "finding": "β = 0.05 lowers accuracy",
                    "budget": c,
                    "observed": f"β=0.05 minus β=0.005: {m:+.2f} ± {se:.2f} pts",
                    "holds": bool(m < -se),
                    "calibrated": False,
                    "basis": BASIS_LEARNED,
                }
            )
    return add_status(findings, provenance)


def matched_random_rows(
    result: train.TrainResult, records: pd.DataFrame, embeddings: np.ndarray
) -> list[dict[str, Any]]:
    """Every router of ``result`` on ``records`` with its two Random twins: one row per policy
    with its budget, seed and ``best_epoch``, RACER's accuracy, cost and reasoning rate
    (``racer_*``), Random at matched cost (:func:`racer_lib.evaluate.random_at_cost`:
    ``random_at_cost_*``) and Random at the router's reasoning rate (``random_at_rate_*``)."""
    rows = []
    p_eval = result.p_reasoning(embeddings)
    for cfg, p, best in zip(result.configs, p_eval, result.best_epoch, strict=True):
        own = evaluate.policy_point(records, p)
        at_cost = evaluate.random_at_cost(records, own["cost"])
        at_rate = evaluate.random_point(records, own["reasoning_rate"])
        rows.append(
            {
                "budget": cfg.budget,
                "seed": cfg.seed,
                "best_epoch": best,
                "racer_accuracy": own["accuracy"],
                "racer_cost": own["cost"],
                "racer_reasoning_rate": own["reasoning_rate"],
                "random_at_cost_accuracy": at_cost["accuracy"],
                "random_at_cost_cost": at_cost["cost"],
                "random_at_cost_rate": at_cost["reasoning_rate"],
                "random_at_rate_accuracy": at_rate["accuracy"],
                "random_at_rate_cost": at_rate["cost"],
            }
        )
    return rows


def matched_random_table(
    runs: pd.DataFrame,
    ends: Mapping[str, Mapping[str, float]],
    paper: Mapping[float, Sequence[float]],
    paper_ends: Mapping[str, tuple[float, float]],
    paper_columns: Sequence[str] = (
        "paper_accuracy",
        "paper_cost",
        "paper_random_accuracy",
        "paper_random_cost",
    ),
) -> pd.DataFrame:
    """:func:`matched_random_rows` per budget, between All-Instruct and All-Reasoning
    (``ends``, :func:`racer_lib.evaluate.endpoints`): RACER's mean and sd over seeds of
    accuracy and cost, its reasoning rate, violation rate, both Random twins' means, RACER
    minus Random at matched cost, and the paper's ``paper_columns`` per budget (``paper``) and
    for the fixed modes (``paper_ends``; NaN where it has none)."""
    g = runs.assign(violated=runs["racer_cost"] > runs["budget"]).groupby("budget", sort=True)
    racer = g.agg(
        seeds=("seed", "size"),
        accuracy_mean=("racer_accuracy", "mean"),
        accuracy_sd=("racer_accuracy", "std"),
        cost_mean=("racer_cost", "mean"),
        cost_sd=("racer_cost", "std"),
        reasoning_rate=("racer_reasoning_rate", "mean"),
        violation_rate=("violated", "mean"),
        random_at_cost_accuracy_mean=("random_at_cost_accuracy", "mean"),
        random_at_cost_accuracy_sd=("random_at_cost_accuracy", "std"),
        random_at_cost_cost_mean=("random_at_cost_cost", "mean"),
        random_at_rate_accuracy_mean=("random_at_rate_accuracy", "mean"),
        random_at_rate_cost_mean=("random_at_rate_cost", "mean"),
    ).reset_index()
    racer.insert(0, "method", "RACER")
    racer["racer_minus_random_at_cost"] = (
        racer["accuracy_mean"] - racer["random_at_cost_accuracy_mean"]
    )
    for k, col in enumerate(paper_columns):
        racer[col] = [paper.get(b, (np.nan,) * len(paper_columns))[k] for b in racer["budget"]]
    fixed = pd.DataFrame(
        [
            {
                "method": m,
                "accuracy_mean": ends[m]["accuracy"],
                "cost_mean": ends[m]["cost"],
                "reasoning_rate": ends[m]["reasoning_rate"],
                "paper_accuracy": paper_ends.get(m, (np.nan, np.nan))[0],
                "paper_cost": paper_ends.get(m, (np.nan, np.nan))[1],
            }
            for m in ("All-Instruct", "All-Reasoning")
        ]
    )
    return pd.concat([fixed.iloc[[0]], racer, fixed.iloc[[1]]], ignore_index=True)[
        ["method", *racer.columns.drop("method")]
    ]


def matched_random_findings(table: pd.DataFrame, provenance: str) -> pd.DataFrame:
    """The paper's reading of a :func:`matched_random_table` in three checks on the means over
    seeds (``finding``, ``holds``, ``status``, ``detail``, ``basis``): RACER is above Random at
    matched cost at every budget; at some budget it reaches All-Reasoning's accuracy at a lower
    cost; its mean cost on the evaluation set is within every budget (the budget binds in
    training, not here). None is given to the simulator (:func:`racer_lib.claims.add_status`)."""
    racer = table[table["method"] == "RACER"]
    hi = table[table["method"] == "All-Reasoning"].iloc[0]
    gap = racer["racer_minus_random_at_cost"]
    beats = racer[
        (racer["accuracy_mean"] >= hi["accuracy_mean"]) & (racer["cost_mean"] < hi["cost_mean"])
    ]
    over = racer["cost_mean"] - racer["budget"]
    rows = pd.DataFrame(
        [
            {
                "finding": "RACER is above Random at matched cost at every budget",
                "holds": bool((gap > 0).all()),
                "detail": "; ".join(
                    f"C={b:g}: {d:+.2f} pts" for b, d in zip(racer["budget"], gap, strict=True)
                ),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            },
            {
                "finding": "at some budget RACER reaches All-Reasoning accuracy at lower cost",
                "holds": bool(len(beats)),
                "detail": (
                    f"All-Reasoning {hi['accuracy_mean']:.2f} % at cost {hi['cost_mean']:.2f}; "
                    + "; ".join(
                        f"C={b:g}: {a:.2f} % at {c:.2f}"
                        for b, a, c in zip(
                            racer["budget"], racer["accuracy_mean"], racer["cost_mean"], strict=True
                        )
                    )
                ),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            },
            {
                "finding": "RACER mean cost is within budget at every budget",
                "holds": bool((over <= 0).all()),
                "detail": "; ".join(
                    f"C={b:g}: cost {c:.2f}"
                    for b, c in zip(racer["budget"], racer["cost_mean"], strict=True)
                ),
                "calibrated": False,
                "basis": BASIS_LEARNED,
            },
        ]
    )
    return add_status(rows, provenance)
