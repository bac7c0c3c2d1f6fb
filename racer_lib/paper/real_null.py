"""The false-positive rate of the real-judge rule, measured on LLMBar's released judgments.

Chapter 14 (:mod:`racer_lib.paper.chapters.llmbar_routing`) decides "RACER is more accurate
than Random at every budget" over replicate seeds that re-draw a split of one fixed set of 419
pairs, with Nadeau and Bengio's corrected resampled t (``overlap``,
:func:`racer_lib.records.sets.split_overlap`). Its pairs are a level of variation that more
seeds cannot average away: a router whose decisions carry no signal but persist from seed to
seed is ahead of Random on this set of pairs by luck, in every seed alike.

This module builds that null on the real records and runs the chapter's own rule on it:

* **the null router**: the decisions of a router permuted across the pairs (so no signal), a
  random ranking of the pairs drawn once per null replicate and kept for every seed (the least
  favourable case: the decisions persist across seeds entirely), reasoning on the top
  ``rate`` share of all pairs at each rate (the rates nested, as one router's scores
  thresholded at several budgets);
* **the chapter's design**: per null replicate, its own master seed, whose
  :func:`racer_lib.evaluation.verdicts.replicate_seeds` re-draw the splits as the chapter does
  (:func:`racer_lib.records.sets.stratified_split`, stratified by subset);
* **the difference** per seed and rate: the null router's expected test accuracy minus
  Random's at the same reasoning rate on the same test split
  (:func:`racer_lib.evaluation.metrics.random_point`), in points, all replicates at once
  (:func:`null_differences`);
* **the decision**: the chapter's ``llmbar_routing.over_random`` with its
  ``llmbar_routing.finding_test`` (:func:`false_positive_rate`). A ``shift`` added to every
  difference puts the null at the rule's boundary (the smallest effect of interest), where a
  minimum-effect rule can fail.

Chapter 15 (:mod:`racer_lib.paper.chapters.llmbar_shift`) tests on fixed subsets, so its seeds
cannot re-draw the test pairs from the population; each tests on its own resample of them, with
the corrected standard error (``llmbar_shift.TEST_OVERLAP``). :func:`shift_false_positive_rate`
runs its rule
(:func:`racer_lib.paper.shift.control_family`) on a robust router and a matched-spend control
that are exchangeable (both rankings without signal, persisting across seeds), and measures how
often it declares that the robust one beats its control.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from racer_lib.evaluation import verdicts
from racer_lib.evaluation.intervals import wilson_interval
from racer_lib.evaluation.metrics import correct_matrix
from racer_lib.paper import shift as shift_rules
from racer_lib.paper.chapters import llmbar_routing, llmbar_shift
from racer_lib.records import llmbar, sets

__all__ = ["NullDesign", "false_positive_rate", "null_differences", "shift_false_positive_rate"]


@dataclass(frozen=True)
class NullDesign:
    """One real-data null: the null router's reasoning ``rates`` (one per budget of the rule),
    the chapter's ``n_seeds`` and split ``shares``, the number of null ``replicates``, a
    ``shift`` (points) added to every difference (0: the permutation null; the smallest effect
    of interest: its boundary), whether the rule uses Nadeau and Bengio's correction
    (``corrected``), the master ``seed`` of the draws, and a planted ``signal`` (0: the null;
    above it, the ranking prefers the pairs where reasoning is right and instruct wrong)."""

    rates: Sequence[float] = (0.5,)
    n_seeds: int = verdicts.MIN_SEEDS
    shares: Sequence[float] = (0.6, 0.2, 0.2)
    replicates: int = 200
    shift: float = 0.0
    corrected: bool = True
    seed: int = 0
    signal: float = 0.0


def _test_masks(subsets: np.ndarray, design: NullDesign, replicate: int) -> np.ndarray:
    """The test split of each replicate seed of null replicate ``replicate`` (its own master
    seed, as a rebuild of the chapter with another seed), ``(n_seeds, n_pairs)`` booleans."""
    master = design.seed * verdicts.REPLICATE_STRIDE + replicate
    seeds = verdicts.replicate_seeds(master, design.n_seeds)
    order = llmbar.LLMBAR_SUBSETS
    return np.stack(
        [sets.stratified_split(subsets, s, design.shares, order=order) == "test" for s in seeds]
    )


def null_differences(records: pd.DataFrame, design: NullDesign) -> tuple[np.ndarray, float]:
    """The null router's test accuracy minus Random's at its own test reasoning rate, in
    points, shape ``(replicates, rates, n_seeds)`` (``design.shift`` added), and the splits'
    ``overlap``
    (:func:`racer_lib.records.sets.split_overlap`). ``records``: one judge's records of all
    pairs (``subset`` column). On a test split ``T`` with decisions ``D`` (0/1 per pair) and
    each pair's gain ``g`` (reasoning's correctness minus instruct's), the difference is
    ``100 (mean_T(D g) - mean_T(D) mean_T(g))``: Random reasons at ``mean_T(D)`` on every pair
    (:func:`racer_lib.evaluation.metrics.random_point`)."""
    correct = correct_matrix(records)
    gain = correct[:, 1] - correct[:, 0]
    subsets = records["subset"].to_numpy(dtype=object)
    n = len(records)
    rng = np.random.default_rng(design.seed)
    tops = np.round(np.asarray(design.rates, dtype=float) * n).astype(int)
    out = np.empty((design.replicates, len(tops), design.n_seeds))
    overlaps = []
    for k in tqdm(range(design.replicates), desc="null replicates", leave=False):
        # one ranking per replicate, kept for every seed: the decisions persist
        ranks = np.argsort(np.argsort(rng.random(n) - design.signal * gain))
        decide = (ranks[None, :] < tops[:, None]).astype(float)  # (rates, pairs)
        test = _test_masks(subsets, design, k).astype(float)  # (seeds, pairs)
        m = test.sum(axis=1)
        rate = decide @ test.T / m  # (rates, seeds)
        mean_gain = test @ gain / m
        out[k] = 100 * ((decide * gain) @ test.T / m - rate * mean_gain)
        overlaps.append(float(np.mean(m / (n - m))))
    return out + design.shift, float(np.mean(overlaps))


def _runs(diffs: np.ndarray, budgets: Sequence[float], judge: str) -> pd.DataFrame:
    """One replicate's differences as the chapter's runs: RACER at the difference, Random at
    zero, per budget and seed (the rule reads only their paired difference)."""
    b, s = np.meshgrid(budgets, np.arange(diffs.shape[1]), indexing="ij")
    racer = pd.DataFrame(
        {"judge": judge, "method": "RACER", "budget": b.ravel(), "seed": s.ravel(),
         "accuracy": diffs.ravel()}
    )  # fmt: skip
    return pd.concat([racer, racer.assign(method="Random", accuracy=0.0)], ignore_index=True)


def false_positive_rate(
    records: pd.DataFrame, design: NullDesign, judge: str = "null"
) -> dict[str, float]:
    """How often the chapter's rule declares "RACER is more accurate than Random at every
    budget" (decision ``holds``: status *reproduced*) on the null of ``design``
    (:func:`null_differences`), each replicate decided by
    :func:`racer_lib.paper.chapters.llmbar_routing.over_random` with the chapter's
    :func:`~racer_lib.paper.chapters.llmbar_routing.finding_test` (its ``overlap`` the splits'
    when ``design.corrected``, else 0). Returns the replicates, the count that holds, its rate
    and 95 % Wilson interval, the mean difference and the mean sd over seeds."""
    diffs, overlap = null_differences(records, design)
    test = llmbar_routing.finding_test(overlap=overlap if design.corrected else 0.0)
    budgets = [float(i + 1) for i in range(len(design.rates))]
    held = 0
    for one in tqdm(diffs, desc="null decisions", leave=False):
        row = llmbar_routing.over_random(_runs(one, budgets, judge), judge, budgets, test)
        held += row["decision"] == verdicts.HOLDS
    lo, hi = wilson_interval(held, len(diffs))
    return {
        "replicates": len(diffs),
        "held": held,
        "rate": held / len(diffs),
        "rate_lo": lo,
        "rate_hi": hi,
        "overlap": overlap,
        "mean_difference": float(diffs.mean()),
        "sd_over_seeds": float(diffs.std(axis=2, ddof=1).mean()),
    }


def _shift_runs(records: pd.DataFrame, shift, design: NullDesign, budgets, rankings, k: int):
    """Chapter 15's paired runs on one shift under the null: per seed (its validation share
    re-drawn, :func:`racer_lib.paper.chapters.llmbar_shift.split_labels`, setting the training
    unit) and budget, a "robust" router and its "control", each a fixed ranking of the pairs
    (``rankings``, persisting across seeds) reasoning at the rate whose expected training cost
    is the budget (matched spend), evaluated as the chapter does on the seed's resample of the
    shift's test subsets (:func:`racer_lib.paper.chapters.llmbar_shift.test_draw`): accuracy
    and ``train_cost`` over budget, as :func:`racer_lib.paper.shift.paired_runs` pairs them."""
    tokens = records[["tokens_instruct", "tokens_reasoning"]].to_numpy(dtype=float)
    correct = correct_matrix(records).astype(float)
    subsets, n = records["subset"].to_numpy(dtype=object), len(records)
    master = design.seed * verdicts.REPLICATE_STRIDE + k
    rows = []
    for s in verdicts.replicate_seeds(master, design.n_seeds):
        labels = llmbar_shift.split_labels(subsets, shift, s)
        test = llmbar_shift.test_draw(labels, s)
        unit = tokens[labels == "train", 0].mean()
        ratio = tokens[np.isin(subsets, shift.train), 1].mean() / unit
        for b, budget in enumerate(budgets):
            rate = float(np.clip((budget - 1) / (ratio - 1), 0.0, 1.0))
            point = {}
            for side, ranks in zip(("", "_control"), rankings[b], strict=True):
                d = (ranks < round(rate * n))[test]
                right = np.where(d, correct[test, 1], correct[test, 0])
                point[f"accuracy{side}"] = 100 * right.mean()
                cost = np.where(d, tokens[test, 1], tokens[test, 0]).mean() / unit
                point[f"{'robust' if not side else 'control'}_violated"] = cost > budget
            rows.append({"seed": s, "budget": budget, **point})
    return rows


def shift_false_positive_rate(
    records: pd.DataFrame, design: NullDesign, budgets: Sequence[float], shifts: Sequence
) -> dict[str, float]:
    """How often chapter 15's rule (:func:`racer_lib.paper.shift.control_family`, "beats
    the matched-spend control": fewer runs over budget and accuracy alike, seeds as
    replicates, every shift and budget pooled within the seed) holds when the robust router and
    its control are exchangeable: two rankings of the pairs with no signal, drawn per null
    replicate and budget and kept for every seed, at the same (matched) spend
    (:func:`_shift_runs`). ``shifts``: :func:`racer_lib.paper.chapters.llmbar_shift.shift_plan`'s.
    Returns the replicates, the count that holds, its rate and 95 % Wilson interval."""
    rng, n, held = np.random.default_rng(design.seed), len(records), 0
    for k in tqdm(range(design.replicates), desc="shift null", leave=False):
        rows = []
        for sh in shifts:
            rankings = [(rng.permutation(n), rng.permutation(n)) for _ in budgets]
            rows += _shift_runs(records, sh, design, budgets, rankings, k)
        found = shift_rules.control_family(pd.DataFrame(rows), overlap=llmbar_shift.TEST_OVERLAP)
        found = found.decide()
        held += found.decision == verdicts.HOLDS
    lo, hi = wilson_interval(held, design.replicates)
    return {"replicates": design.replicates, "held": held, "rate": held / design.replicates,
            "rate_lo": lo, "rate_hi": hi}  # fmt: skip
