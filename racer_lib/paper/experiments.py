"""The sweeps the chapters run, as tidy rows: train a grid of routers, evaluate them on named
sets next to the fixed modes, Random and the oracle, and route with the score baselines at
budgets matched on validation.

A chapter's experiment reads in four steps::

    configs = experiments.grid(budgets, seeds, variant="RACER-R", tau_r=tau_r)
    fit = experiments.fit(records, embeddings, configs, settings)        # Algorithm 1
    rows = experiments.policy_rows(fit.result, sets, method="RACER", judge=judge)
    rows += experiments.baseline_rows(fit, sets, budgets, seeds, options)

Every function returns a list of dicts (one per run) whose keys are the CSV columns, so a
chapter concatenates them and writes them with :func:`racer_lib.book.chapter.save_table`. The
leading columns of each row follow ``lead``, a tuple of names taken from the row's own labels
(``set``, ``method``, ``budget``, ``seed``) and from the constant ``**fixed`` columns
(``judge=...``); a label missing from ``lead`` is left out of the row, a fixed column missing
from it comes first.

Accuracy and cost are expectations under the policy
(:func:`racer_lib.evaluation.metrics.policy_point`):
on an evaluation set the cost is the realized ratio against that set's own All-Instruct tokens,
on the validation split it is in the training unit
(:func:`racer_lib.evaluation.metrics.split_point`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from racer_lib.evaluation import metrics as evaluate
from racer_lib.records.sets import judge_set
from racer_lib.routing import baselines, train
from racer_lib.routing.store import PolicyStore, train_in_chunks, train_stored

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
    :class:`~racer_lib.routing.train.PolicyConfig` field, varied in the order given, outermost
    first),
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
    """Routers trained on one record set: the cost unit, the two splits, the result and the
    ``store`` they were trained through (:func:`fit`'s, resolved: routers trained later to
    match them, such as :func:`racer_lib.paper.shift.matched_controls`, go the same way)."""

    unit: Any
    train: train.Split
    valid: train.Split
    result: train.TrainResult
    store: PolicyStore | None = None


def fit(
    records: pd.DataFrame,
    embeddings: np.ndarray,
    configs: list[train.PolicyConfig],
    settings: train.TrainSettings,
    split: np.ndarray | None = None,
    progress: bool = False,
    store: PolicyStore | str | os.PathLike | None = None,
) -> Fit:
    """Train ``configs`` in one batched pass (:func:`racer_lib.routing.train.train_policies`; in
    equal
    chunks when the batch would not fit in :data:`racer_lib.routing.store.BATCH_MEMORY_BYTES`) on
    the rows of ``records`` whose split is ``train``, selecting checkpoints on ``valid``.

    ``split``: a split label per row to use instead of the records' ``split`` column (e.g. a
    fresh split per seed, :func:`racer_lib.records.sets.stratified_split`).
    ``store``: where trained policies are shared (:mod:`racer_lib.routing.store`): a
    :class:`~racer_lib.routing.store.PolicyStore` or its folder (what ``racer book build`` passes
    a notebook as ``policy_store``); ``None`` (or ``""``) trains everything here and stores
    nothing. Nothing else (no environment variable) decides it.
    """
    if split is not None:
        records = records.assign(split=split)
    unit, parts = train.splits(records, embeddings, ("train", "valid"))
    if store is not None and not isinstance(store, PolicyStore):
        store = PolicyStore(store) if str(store) else None
    if store:
        result, _ = train_stored(
            parts["train"], parts["valid"], configs, settings, unit, store, progress=progress
        )
    else:
        result = train_in_chunks(
            parts["train"], parts["valid"], configs, settings, unit, progress=progress
        )
    return Fit(unit, parts["train"], parts["valid"], result, store)


def fit_sets(
    sets: Sequence[tuple[pd.DataFrame, np.ndarray, list[train.PolicyConfig]]],
    settings: train.TrainSettings,
    progress: bool = False,
) -> list[Fit]:
    """:func:`fit` for several record sets, ``(records, embeddings, configs)`` each, with no
    store: the sets whose train splits have one size are trained in one pass
    (:func:`racer_lib.routing.train.train_sets`: each policy on its own set, the steps'
    matrix products shared), which costs far less than one pass per set where a step's
    fixed cost dominates (small linear routers). One :class:`Fit` per set, in order."""
    parts = [train.splits(records, emb, ("train", "valid")) for records, emb, _ in sets]
    by_size: dict[int, list[int]] = {}
    for k, (_, split) in enumerate(parts):
        by_size.setdefault(split["train"].n, []).append(k)
    fits: list[Fit | None] = [None] * len(sets)
    for members in by_size.values():
        jobs = [
            train.SetTraining(parts[k][1]["train"], parts[k][1]["valid"], list(sets[k][2]),
                              parts[k][0])
            for k in members
        ]  # fmt: skip
        for k, job, result in zip(members, jobs, train.train_sets(jobs, settings, progress)):
            fits[k] = Fit(job.unit, job.train, job.valid, result)
    return fits


def fit_together(jobs: Sequence[Generator], settings: train.TrainSettings) -> list[Any]:
    """Run ``jobs`` (generators, one per replicate, say) in lockstep, their fits shared: each job
    yields what it would pass :func:`fit`, ``(records, embeddings, configs)``, receives the
    :class:`Fit` back and at last returns its value. Every round's requests are trained
    together by :func:`fit_sets`, so that a loop over replicates costs about one pass per
    round instead of one per replicate and round. Returns the jobs' values, in order."""
    values: list[Any] = [None] * len(jobs)
    asked: dict[int, tuple] = {}

    def advance(k: int, sent: Fit | None) -> None:
        try:
            asked[k] = jobs[k].send(sent)
        except StopIteration as done:
            values[k] = done.value

    for k in range(len(jobs)):
        advance(k, None)
    while asked:
        keys, requests = list(asked), list(asked.values())
        asked.clear()
        for k, fitted in zip(keys, fit_sets(requests, settings)):
            advance(k, fitted)
    return values


def evaluation_sets(
    judge: str,
    records: pd.DataFrame,
    embeddings: np.ndarray,
    splits: Sequence[str] = ("test",),
    benchmarks: Sequence[str] = (),
    **source: Any,
) -> dict[str, tuple[pd.DataFrame, np.ndarray]]:
    """The named sets a judge's routers are evaluated on: ``splits`` of its training mixture
    (``records`` and ``embeddings``), then each of ``benchmarks`` as
    :func:`racer_lib.records.sets.judge_set` gives it with ``source`` (``records_dir``, or the
    simulator's ``seed``, ``dim`` and ``scale``)."""
    masks = {name: (records["split"] == name).to_numpy() for name in splits}
    sets = {name: (records[m], embeddings[m]) for name, m in masks.items()}
    for bench in benchmarks:
        sets[bench] = judge_set(judge, bench, **source)
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
    fit: Fit,
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
    """The score baselines at matched budgets: for each method and seed, fit on ``fit.train``,
    set one threshold per budget on ``fit.valid``
    (:func:`racer_lib.routing.baselines.match_budget`, the largest
    validation reasoning rate whose cost stays within the budget), and route every set.

    ``options`` are each method's constructor options. The KNN is deterministic, so it is
    fitted once for all seeds. After the set's accuracy, cost and rate, a row holds the
    threshold's validation ``valid_rate`` and ``valid_cost`` or, with ``valid_point``, the
    validation point of its decisions (``valid_accuracy``, ``valid_cost``, ``valid_rate``).
    """
    options = options or {}
    rows = []
    tr, valid = fit.train, fit.valid
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
    :func:`racer_lib.evaluation.metrics.oracle_frontier` at the lowest cost that reaches it."""
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


#: Why a finding about trained routers is evidence even on simulated records (the ``basis``
#: column of the findings tables): :mod:`racer_lib.records.simulate` draws judges' verdicts, costs
# and : embeddings, and knows nothing of routers, baselines or their training.
BASIS_LEARNED = "emerges: routers are trained; the simulator is given no router's result"


def embed_quietly(pairs: pd.DataFrame, encoder: str) -> np.ndarray:
    """:func:`racer_lib.records.embed.embed_pairs` without the progress bars that loading the
    encoder draws (tqdm's warning that a kernel lacks ipywidgets, Hugging Face's bar), for a
    page (chapter 14's)."""
    import warnings

    from racer_lib.records import embed

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        return embed.embed_pairs(pairs, encoder, progress=False)
