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

from . import baselines, evaluate, train
from .sets import judge_set

#: A named evaluation set: its records and their embeddings (rows aligned).
Sets = Mapping[str, tuple[pd.DataFrame, np.ndarray]]
LEAD = ("set", "method", "budget", "seed")


def grid(budgets: Iterable[float], seeds: Iterable[int], *,
         outer: Mapping[str, Sequence[Any]] | None = None, **common: Any
         ) -> list[train.PolicyConfig]:
    """Policy configurations for every combination of the ``outer`` axes (each a
    :class:`~racer_lib.train.PolicyConfig` field, varied in the order given, outermost first),
    then ``budgets``, then ``seeds``; ``common`` fields are shared (e.g. ``variant="RACER-R"``,
    ``tau_r=1.0``). Order matters: it is the order of the batch and of the rows."""
    outer = dict(outer or {})
    budgets, seeds = list(budgets), list(seeds)
    return [train.PolicyConfig(budget=b, seed=s, **dict(zip(outer, values)), **common)
            for values in itertools.product(*outer.values())
            for b in budgets for s in seeds]


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


def fit(records: pd.DataFrame, embeddings: np.ndarray, configs: list[train.PolicyConfig],
        settings: train.TrainSettings, split: np.ndarray | None = None,
        progress: bool = False) -> Fit:
    """Train ``configs`` in one batched pass (:func:`racer_lib.train.train_policies`) on the
    rows of ``records`` whose split is ``train``, selecting checkpoints on ``valid``.

    ``split``: a split label per row to use instead of the records' ``split`` column (e.g. a
    fresh split per seed, :func:`racer_lib.sets.stratified_split`).
    """
    if split is not None:
        records = records.assign(split=split)
    unit, parts = train.splits(records, embeddings, ("train", "valid"))
    result = train.train_policies(parts["train"], parts["valid"], configs, settings, unit,
                                  progress=progress)
    return Fit(unit, parts["train"], parts["valid"], result)


def evaluation_sets(judge: str, records: pd.DataFrame, embeddings: np.ndarray,
                    splits: Sequence[str] = ("test",), benchmarks: Sequence[str] = (), *,
                    records_dir: str | os.PathLike = "", seed: int = 0, dim: int = 64,
                    scale: float = 1.0) -> dict[str, tuple[pd.DataFrame, np.ndarray]]:
    """The named sets a judge's routers are evaluated on: ``splits`` of its training mixture
    (``records`` and ``embeddings``), then each of ``benchmarks``, simulated with ``seed``,
    ``dim`` and ``scale`` or read from ``records_dir`` (:func:`racer_lib.sets.judge_set`)."""
    masks = {name: (records["split"] == name).to_numpy() for name in splits}
    sets = {name: (records[m], embeddings[m]) for name, m in masks.items()}
    for bench in benchmarks:
        sets[bench] = judge_set(judge, bench, records_dir=records_dir, seed=seed, dim=dim,
                                scale=scale)
    return sets


def _row(lead: Sequence[str], labels: Mapping[str, Any], fixed: Mapping[str, Any],
         *rest: Mapping[str, Any]) -> dict[str, Any]:
    """One row: fixed columns not in ``lead``, then ``lead`` in order, then ``rest``."""
    known = {**fixed, **labels}
    row = {k: v for k, v in fixed.items() if k not in lead}
    row.update({k: known[k] for k in lead if k in known})
    for part in rest:
        row.update(part)
    return row


def policy_rows(result: train.TrainResult, sets: Sets, *, method: str | None = None,
                random: Collection[str] = (), valid: train.Split | None = None,
                lead: Sequence[str] = LEAD, **fixed: Any) -> list[dict[str, Any]]:
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
                rows.append(_row(lead, {**labels, "method": "Random"}, fixed,
                                 evaluate.random_point(recs, point["reasoning_rate"])))
    return rows


def _valid_columns(valid: train.Split, p) -> dict[str, float]:
    point = evaluate.split_point(valid.r.numpy(), valid.c.numpy(), p)
    return {"valid_accuracy": point["accuracy"], "valid_cost": point["cost"],
            "valid_rate": point["reasoning_rate"]}


def baseline_rows(tr: train.Split, valid: train.Split, sets: Sets, budgets: Sequence[float],
                  seeds: Sequence[int], options: Mapping[str, Mapping[str, Any]] | None = None,
                  *, methods: Sequence[str] = baselines.METHODS, valid_point: bool = False,
                  lead: Sequence[str] = LEAD, **fixed: Any) -> list[dict[str, Any]]:
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
            thresholds = {b: baselines.match_budget(valid_scores, valid.c.numpy(), b)
                          for b in budgets}
            for name, (recs, emb) in sets.items():
                scores = router.score(emb)
                for b, th in thresholds.items():
                    labels = {"set": name, "method": method, "budget": b, "seed": s}
                    point = evaluate.policy_point(recs, th.route(scores))
                    extra = (_valid_columns(valid, th.route(valid_scores)) if valid_point
                             else {"valid_rate": th.rate, "valid_cost": th.valid_cost})
                    rows.append(_row(lead, labels, fixed, point, extra))
    return rows


def reference_rows(sets: Sets | Mapping[str, pd.DataFrame], *, oracle: bool = False,
                   lead: Sequence[str] = ("set", "method"), **fixed: Any
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
            rows.append(_row(lead, {"set": name, "method": "Oracle"}, fixed, {
                "accuracy": top, "cost": frontier.loc[frontier["accuracy"] >= top, "cost"].min(),
                "reasoning_rate": np.nan}))
    return rows


def thinned_frontier(records: pd.DataFrame, points: int = 400, **fixed: Any) -> pd.DataFrame:
    """The oracle frontier of a set (:func:`racer_lib.evaluate.oracle_frontier`) kept at about
    ``points`` evenly spaced vertices (enough to draw), with ``fixed`` columns appended."""
    frontier = evaluate.oracle_frontier(records)
    keep = np.unique(np.linspace(0, len(frontier) - 1, points).round().astype(int))
    return frontier.iloc[keep].assign(**fixed)


def curve_metrics(runs: pd.DataFrame, sets: Sets, by: Sequence[str] = ("method", "seed"),
                  **fixed: Any) -> list[dict[str, Any]]:
    """RouteLLM's AUC, APGR and CPT (:func:`racer_lib.evaluate.routing_metrics`) of each
    group ``by`` of ``runs`` on each set (``runs`` has a ``set`` column)."""
    rows = []
    for name, (recs, *_) in sets.items():
        for key, pts in runs[runs["set"] == name].groupby(list(by)):
            rows.append({**fixed, "set": name, **dict(zip(by, key)),
                         **evaluate.routing_metrics(pts, recs)})
    return rows


def gap_to_random(runs: pd.DataFrame, records: pd.DataFrame, **fixed: Any) -> dict[str, Any]:
    """How far a router's runs on one set (``RACER`` and its ``Random`` rows, in pairs) lie
    above Random: the area between the mean curve over budgets and Random's chord
    (:func:`racer_lib.evaluate.area_above_random`), the covered cost range, and the mean and
    smallest per-run accuracy gap (points)."""
    racer, rand = runs[runs["method"] == "RACER"], runs[runs["method"] == "Random"]
    curve = racer.groupby("budget")[["cost", "accuracy"]].mean()
    gap = racer["accuracy"].to_numpy() - rand["accuracy"].to_numpy()
    return {**fixed, "area_above_random": evaluate.area_above_random(curve, records),
            "cost_low": curve["cost"].min(), "cost_high": curve["cost"].max(),
            "mean_gap_points": gap.mean(), "min_gap_points": gap.min()}


def selected_checkpoints(result: train.TrainResult) -> pd.DataFrame:
    """Each policy's best valid checkpoint (appendix B.3): its budget, seed, epoch, and the
    validation accuracy and cost at that epoch, from the training history."""
    configs = result.configs
    selected = pd.DataFrame({"budget": [c.budget for c in configs],
                             "seed": [c.seed for c in configs], "best_epoch": result.best_epoch})
    at = result.history[["budget", "seed", "epoch", "valid_accuracy", "valid_cost"]]
    return selected.merge(at, left_on=["budget", "seed", "best_epoch"],
                          right_on=["budget", "seed", "epoch"]).drop(columns="epoch")


def training_summary(history: pd.DataFrame) -> pd.DataFrame:
    """Per budget, the last epoch's multiplier, training cost and reward (means over seeds),
    the largest multiplier of any epoch, and how far the final training cost lies from the
    budget (appendix C.1's reading of the curves)."""
    last = history[history["epoch"] == history["epoch"].max()].groupby("budget").agg(
        final_lambda=("lambda", "mean"), final_train_cost=("train_cost", "mean"),
        final_train_reward=("train_reward", "mean"))
    peak = history.groupby("budget")["lambda"].max().rename("max_lambda_any_epoch")
    summary = last.join(peak).reset_index()
    summary["final_cost_minus_budget"] = summary["final_train_cost"] - summary["budget"]
    return summary


def budget_matching(runs: pd.DataFrame, set_name: str = "test") -> pd.DataFrame:
    """The thresholds the score baselines were given on validation (one row per judge,
    method, budget and seed; read from one set's rows of :func:`baseline_rows`): the
    validation reasoning rate and cost, and whether that cost is within the budget."""
    matching = runs[(runs["set"] == set_name) & (runs["method"] != "RACER")][
        ["provenance", "judge", "method", "budget", "seed", "valid_rate", "valid_cost"]].copy()
    matching["within_budget"] = matching["valid_cost"] <= matching["budget"]
    return matching.reset_index(drop=True)


def shifted_table(runs: pd.DataFrame, budget: float, sets: Sequence[str],
                  paper: Mapping[tuple[str, str], tuple[float, float]], judges: Sequence[str],
                  methods: Sequence[str]) -> pd.DataFrame:
    """The advanced-baselines table: each (judge, method) at ``budget``, accuracy and cost
    averaged over ``sets`` (each set's mean over seeds, then the mean of the sets), their sd
    over seeds of the per-seed set means, and the paper's value for ``(method, judge)``
    (``paper``; NaN where it has none)."""
    at = runs[(runs["budget"] == budget) & runs["set"].isin(sets)]
    mean = at.groupby(["judge", "method", "set"])[["accuracy", "cost"]].mean().groupby(
        ["judge", "method"]).mean()
    per_seed = at.groupby(["judge", "method", "seed"])[["accuracy", "cost"]].mean()
    spread = per_seed.groupby(["judge", "method"]).std()
    table = pd.DataFrame({"accuracy": mean["accuracy"], "accuracy_sd": spread["accuracy"],
                          "cost": mean["cost"], "cost_sd": spread["cost"],
                          "seeds": per_seed.groupby(["judge", "method"]).size()}).reset_index()
    values = [paper.get(key, (np.nan, np.nan)) for key in zip(table["method"], table["judge"])]
    table["paper_accuracy"] = [v[0] for v in values]
    table["paper_cost"] = [v[1] for v in values]
    table["method"] = pd.Categorical(table["method"], methods, ordered=True)
    table["judge"] = pd.Categorical(table["judge"], judges, ordered=True)
    return table.sort_values(["judge", "method"]).reset_index(drop=True)


def metric_summary(metrics: pd.DataFrame, shifted: Sequence[str], judges: Sequence[str],
                   methods: Sequence[str], in_distribution: str = "test") -> pd.DataFrame:
    """AUC, APGR and CPT (:func:`curve_metrics` rows) per judge and method: the mean over the
    ``shifted`` sets (``OOD mean``) next to the ``in_distribution`` set."""
    by_set = metrics.groupby(["judge", "method", "set"])[["auc", "apgr", "cpt"]].mean()
    ood = by_set[by_set.index.get_level_values("set").isin(shifted)]
    summary = pd.concat({"OOD mean": ood.groupby(["judge", "method"]).mean(),
                         in_distribution: by_set.xs(in_distribution, level="set")}, axis=1)
    return summary.reindex(pd.MultiIndex.from_product([judges, methods],
                                                      names=["judge", "method"]))


def baseline_findings(table: pd.DataFrame, budget: float) -> pd.DataFrame:
    """Two readings of :func:`shifted_table` per judge: is RACER the most accurate method (with
    its margin over the best baseline, and the paper's), and is every method's mean cost within
    the budget."""
    findings = []
    for judge in table["judge"].unique():
        t = table[table["judge"] == judge].astype({"method": str}).set_index("method")
        rivals = t.drop(index="RACER")
        best = rivals["accuracy"].idxmax()
        margin = t.loc["RACER", "accuracy"] - rivals.loc[best, "accuracy"]
        paper_margin = t.loc["RACER", "paper_accuracy"] - rivals["paper_accuracy"].max()
        findings.append({
            "finding": f"{judge}: RACER is the most accurate method at C = {budget:g}",
            "holds": bool(margin > 0),
            "detail": f"RACER {t.loc['RACER', 'accuracy']:.2f} % vs best baseline {best} "
                      f"{rivals.loc[best, 'accuracy']:.2f} % ({margin:+.2f} pts; "
                      + (f"paper {paper_margin:+.1f} pts)" if np.isfinite(paper_margin)
                         else "not in the paper)")})
        over = t[t["cost"] > budget]
        findings.append({
            "finding": f"{judge}: every method has mean OOD cost within C = {budget:g}",
            "holds": bool(over.empty),
            "detail": ", ".join(f"{m} {c:.2f}" for m, c in t["cost"].items())
                      + ("" if over.empty else f"; over budget: {', '.join(map(str, over.index))}")})
    return pd.DataFrame(findings)


def set_mean(rows: pd.DataFrame | Sequence[Mapping[str, Any]], sets: Sequence[str],
             by: Sequence[str]) -> pd.DataFrame:
    """Mean accuracy and cost over ``sets`` of each group ``by``: first the mean within each set
    (over seeds), then the mean of the sets, so every set weighs the same (e.g. the OOD mean
    of the advanced-baselines figure)."""
    rows = pd.DataFrame(rows)
    within = rows[rows["set"].isin(sets)].groupby([*by, "set"])[["accuracy", "cost"]].mean()
    return within.groupby(list(by)).mean().reset_index()
