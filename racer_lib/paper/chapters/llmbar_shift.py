"""Chapter 15, robustness under a real shift (the paper's §5.2 and Fig. 3 on LLMBar's judges):
the shifts made from LLMBar's subsets, the routers trained on one side and deployed on the
other, and the runs read as violations and reasoning rates.

The paper's robust variants (§3, Eq. (2): the KL ball ``U(rho_n, delta)``; Thm. 3.1: its
tilted worst case; Algorithm 1) should keep the cost of Eq. (1) within the budget ``C`` (in
the training unit) after a shift of the inputs. This module runs that claim on real subsets:

* :func:`shift_plan` — the shifts made from the subsets present (read from the records'
  ``subset`` column, never a fixed list): ``natural->adversarial`` (train on the natural
  subsets, test on every other), ``adversarial->natural`` (the reverse) and a
  ``leave-one-out`` rotation (train on all subsets but one, test on that one);
* :func:`run_shift` — for one judge and shift, per replicate seed
  (:func:`racer_lib.evaluation.verdicts.replicate_seeds`: it re-draws the validation share, the
  routers' initialisation and their batch order; the records are the release's): a fresh
  validation share of the training subsets (:func:`racer_lib.records.sets.stratified_split`),
  ACER / RACER-R / RACER-C / RACER at every budget trained in one batched pass
  (:func:`racer_lib.paper.experiments.fit`), evaluated on a resample of the shifted subsets
  (:func:`test_draw`) with the cost **in the training unit** (``train_cost``), then the
  matched-spend controls of the robust runs (:func:`racer_lib.paper.shift.matched_controls`,
  shared with the robustness ablation);
* :func:`violation_table`, :func:`reasoning_rates` — the runs read: runs over budget with
  Wilson intervals, and the reasoning rate before and after the shift.

The chapter's findings, whether RACER-C and RACER beat their matched-spend controls, are
decided over the seeds by :func:`racer_lib.paper.shift.control_family` (every judge, shift,
budget and temperature of a variant pooled within its seed). The shifted subsets are one fixed
set of pairs, so the pairs are a level of variation more seeds cannot average away: each seed
tests on its own resample of them, drawn with replacement (:func:`test_draw`), and the tests
use Nadeau and Bengio's corrected standard error with :data:`TEST_OVERLAP` (issue 40: on the
real null of :mod:`racer_lib.paper.real_null`, seeds testing on the fixed subsets read a
robust router and its exchangeable control as different 14 % of the time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from racer_lib.claims.rules import Claim, Finding
from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation.intervals import wilson_interval
from racer_lib.paper import experiments, files, registry
from racer_lib.paper.shift import (
    COST_ROBUST,
    KEY_MATCHED,
    control_comparison,
    control_findings,
    matched_controls,
    rate_cell,
    valid_points,
    variant_comparison,
)
from racer_lib.records import llmbar, sets
from racer_lib.records import schema as rec
from racer_lib.records.summary import mode_summary
from racer_lib.routing import train

#: The share of each training subset held out for validation, per seed (:func:`split_labels`).
VALID_SHARE = 0.25
#: Nadeau and Bengio's correction for seeds whose test sets are resamples of one fixed set of
#: pairs (:func:`test_draw`): two resamples share the set's own sampling variation, about as
#: much as each adds, so the correlation of two seeds' results is at most one half and
#: ``rho / (1 - rho)`` at most 1 (conservative where training adds variation of its own).
TEST_OVERLAP = 1.0
#: The stream of a seed's generator that draws its test resample (the split draws stream 0).
_TEST_STREAM = 1
#: The shift kinds :func:`shift_plan` knows.
SHIFT_KINDS = ("natural->adversarial", "adversarial->natural", "leave-one-out")
#: The findings' CSV (read by the reproduction report) and the groups of the per-cell control
#: comparison (:func:`control_tables`).
FINDINGS_CSV = files.FINDINGS_CSV
#: The key of the findings per shift construction (:func:`control_tables`; the claim reads the
#: pooled ones, :data:`racer_lib.paper.shift.KEY_MATCHED`).
KEY_BY_SHIFT = "matched_spend_control_by_shift"
CONTROL_CELLS = ["method", "judge", "budget"]
#: A glued value of the page, ``(name, csv, column, agg, where)`` for
#: :meth:`racer_lib.book.chapter.Prose.value` (``agg`` ``text``: a word, for
#: :meth:`~racer_lib.book.chapter.Prose.text`).
Read = tuple[str, str, str, str, dict[str, Any]]


@dataclass(frozen=True)
class Shift:
    """One shift: train (and validate) on ``train`` subsets, test on ``test`` subsets."""

    name: str
    train: tuple[str, ...]
    test: tuple[str, ...]


def _subsets_of(subsets: Sequence[str] | pd.Series) -> list[str]:
    """The subsets present, in order of first appearance."""
    return list(dict.fromkeys(np.asarray(subsets, dtype=object).tolist()))


def shift_plan(
    subsets: Sequence[str] | pd.Series,
    kinds: Sequence[str] = SHIFT_KINDS,
    natural: Sequence[str] = ("natural",),
) -> list[Shift]:
    """The shifts of ``kinds`` over the subsets present in ``subsets`` (a subset column):
    ``natural->adversarial`` trains on the present subsets named in ``natural`` and tests on
    every other, ``adversarial->natural`` the reverse, ``leave-one-out`` adds one shift per
    subset (``without <s>``: train on the others, test on ``s``)."""
    present = _subsets_of(subsets)
    nat = tuple(s for s in present if s in natural)
    adv = tuple(s for s in present if s not in natural)
    if unknown := sorted(set(kinds) - set(SHIFT_KINDS)):
        raise ValueError(f"unknown shift kinds {unknown}; kinds are {', '.join(SHIFT_KINDS)}")
    plan = []
    if {"natural->adversarial", "adversarial->natural"} & set(kinds) and not (nat and adv):
        raise ValueError(f"need natural ({list(natural)}) and other subsets among {present}")
    if "natural->adversarial" in kinds:
        plan.append(Shift("natural->adversarial", nat, adv))
    if "adversarial->natural" in kinds:
        plan.append(Shift("adversarial->natural", adv, nat))
    if "leave-one-out" in kinds:
        if len(present) < 2:
            raise ValueError(f"a leave-one-out rotation needs two subsets or more: {present}")
        plan += [Shift(f"without {s}", tuple(o for o in present if o != s), (s,)) for s in present]
    return plan


def plan_table(plan: Sequence[Shift], subsets: Sequence[str] | pd.Series) -> pd.DataFrame:
    """One row per shift: its training and test subsets and their numbers of pairs."""
    counts = pd.Series(np.asarray(subsets, dtype=object)).value_counts()
    return pd.DataFrame(
        [
            {
                "shift": sh.name,
                "train_subsets": " + ".join(sh.train),
                "test_subsets": " + ".join(sh.test),
                "train_valid_pairs": int(sum(counts[s] for s in sh.train)),
                "test_pairs": int(sum(counts[s] for s in sh.test)),
            }
            for sh in plan
        ]
    )


def release_records(judges: Sequence[str]) -> tuple[dict[str, pd.DataFrame], str]:
    """Each judge's records of the LLMBar release
    (:func:`racer_lib.records.llmbar.llmbar_records`) and their combined provenance."""
    records = {j: llmbar.llmbar_records(j) for j in judges}
    return records, rec.combined_provenance(rec.provenance(r) for r in records.values())


def split_labels(
    subsets: Sequence[str] | pd.Series, shift: Shift, seed: int, valid_share: float = VALID_SHARE
) -> np.ndarray:
    """Per row: ``train`` / ``valid`` (a random ``valid_share`` of each training subset, drawn
    with ``seed``), ``test`` (the shift's test subsets) or ``unused``."""
    subsets = np.asarray(subsets, dtype=object)
    used = np.isin(subsets, shift.train + shift.test)
    labels = np.full(len(subsets), "unused", dtype=object)
    labels[used] = sets.stratified_split(
        subsets[used],
        seed,
        [1 - valid_share, valid_share],
        order=[*shift.train, *shift.test],
        test_groups=shift.test,
    )
    return labels


def test_draw(labels: np.ndarray, seed: int) -> np.ndarray:
    """The rows a seed tests on: as many rows as ``labels`` marks ``test``, drawn from them
    with replacement (``seed``'s own generator), in row order."""
    rows = np.flatnonzero(np.asarray(labels) == "test")
    rng = np.random.default_rng([seed, _TEST_STREAM])
    return np.sort(rng.choice(rows, size=rows.size, replace=True))


def shift_sides(records: dict[str, pd.DataFrame], plan: Sequence[Shift]) -> pd.DataFrame:
    """The shift itself, per judge, shift and side (``train``: the training subsets, ``test``:
    the shifted ones): pairs, both modes' accuracy, mean tokens, and All-Reasoning's cost
    ratio (:func:`racer_lib.records.summary.mode_summary`,
    :func:`racer_lib.evaluation.metrics.with_mean_tokens`)."""
    parts = []
    for judge, recs in records.items():
        for sh in plan:
            for side, names in (("train", sh.train), ("test", sh.test)):
                part = recs[recs["subset"].isin(names)].assign(
                    judge=judge, shift=sh.name, side=side
                )
                summary = mode_summary(part, ["judge", "shift", "side"])
                parts.append(evaluate.with_mean_tokens(summary, part, ["judge", "shift", "side"]))
    cols = ["judge", "shift", "side", "n", "acc_instruct", "acc_reasoning", "delta_accuracy"]
    cols += ["mean_tokens_instruct", "mean_tokens_reasoning", "cost_ratio"]
    return pd.concat(parts, ignore_index=True)[cols]


def _variant_plan(
    budgets: Sequence[float], seed: int, tau_r: float, taus_c: Sequence[float]
) -> tuple[list[str], list[train.PolicyConfig]]:
    """Method labels and configurations, in batch order: ACER and RACER-R (``tau_r``) at every
    budget, then RACER-C and RACER at every ``tau_c`` of ``taus_c`` (``"RACER-C τ_C=1"``)."""
    plan = [("ACER", "ACER", 1.0), ("RACER-R", "RACER-R", 1.0)]
    plan += [(f"{v} τ_C={t:g}", v, t) for v in ("RACER-C", "RACER") for t in taus_c]
    labels, configs = [], []
    for name, variant, tau_c in plan:
        for b in budgets:
            labels.append(name)
            configs.append(
                train.PolicyConfig(b, seed=seed, variant=variant, tau_r=tau_r, tau_c=tau_c)
            )
    return labels, configs


def policy_rows(
    fit: experiments.Fit,
    names: Sequence[str],
    test: tuple[pd.DataFrame, np.ndarray],
    **fixed: Any,
) -> list[dict[str, Any]]:
    """One row per policy of ``fit`` (labelled by ``names``): ``fixed`` columns, method,
    variant, ``tau_c`` (NaN where the variant does not reweight costs), seed, budget, its
    validation accuracy, cost (training unit) and reasoning rate, its accuracy, cost (the test
    set's own unit), ``train_cost`` and reasoning rate on the shifted ``test`` set, and
    ``violated`` (``train_cost`` above the budget)."""
    recs, emb = test
    p_test = fit.result.p_reasoning(emb)
    rows = []
    for name, cfg, pv, pt in zip(names, fit.result.configs, valid_points(fit), p_test, strict=True):
        point = evaluate.policy_point(recs, pt, fit.unit)
        rows.append(
            {
                **fixed,
                "method": name,
                "variant": cfg.variant,
                "tau_c": cfg.tau_c if cfg.variant in ("RACER-C", "RACER") else np.nan,
                "seed": cfg.seed,
                "budget": cfg.budget,
                "unit_tokens": fit.unit.tokens_per_unit,
                "valid_accuracy": pv["accuracy"],
                "valid_cost": pv["cost"],
                "valid_rate": pv["reasoning_rate"],
                **point,
                "violated": bool(point["train_cost"] > cfg.budget),
            }
        )
    return rows


def run_shift(
    records: pd.DataFrame,
    embeddings: np.ndarray,
    shift: Shift,
    seeds: Sequence[int],
    budgets: Sequence[float],
    settings: train.TrainSettings,
    *,
    tau_r: float = 1.0,
    taus_c: Sequence[float] = (1.0,),
    **fixed: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One judge on one shift: per seed, :func:`split_labels`, the :func:`_variant_plan`
    trained in one batched pass (:func:`racer_lib.paper.experiments.fit`), :func:`policy_rows` on
    the shifted subsets, and the :func:`racer_lib.paper.shift.matched_controls` of the robust
    runs. Returns the runs and the controls, each row with ``fixed`` and ``shift``."""
    runs, controls = [], []
    for s in seeds:
        labels = split_labels(records["subset"], shift, s, VALID_SHARE)
        names, configs = _variant_plan(budgets, s, tau_r, taus_c)
        fit = experiments.fit(records, embeddings, configs, settings, split=labels)
        test = test_draw(labels, s)
        pair = (records.iloc[test], embeddings[test])
        runs += policy_rows(fit, names, pair, **fixed, shift=shift.name)
        controls += matched_controls(
            fit, names, records, embeddings, settings, pair, split=labels, **fixed, shift=shift.name
        )
    return runs, controls


def run_plan(
    records: dict[str, pd.DataFrame],
    embeddings: np.ndarray,
    plan: Sequence[Shift],
    seeds: Sequence[int],
    budgets: Sequence[float],
    settings: train.TrainSettings,
    **options: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`run_shift` for every judge of ``records`` (judge: records, rows aligned with
    ``embeddings``) and every shift of ``plan``; ``options`` go to :func:`run_shift`. Returns
    the runs and the controls, each with a ``judge`` column."""
    runs, controls = [], []
    for judge, recs in records.items():
        for sh in plan:
            r, c = run_shift(recs, embeddings, sh, seeds, budgets, settings, **options, judge=judge)
            runs, controls = runs + r, controls + c
    return pd.DataFrame(runs), pd.DataFrame(controls)


def violation_table(
    runs: pd.DataFrame, by: Sequence[str], violated: str = "violated", level: float = 0.95
) -> pd.DataFrame:
    """Per group ``by``: runs, violations (``violated`` true), their rate and its Wilson
    interval (:func:`wilson_interval`, ``rate_lo`` / ``rate_hi``)."""
    rows = []
    for key, g in runs.groupby(list(by), sort=False, dropna=False):
        k, n = int(g[violated].astype(bool).sum()), len(g)
        lo, hi = wilson_interval(k, n, level)
        key = key if isinstance(key, tuple) else (key,)
        rows.append(
            {
                **dict(zip(by, key)),
                "runs": n,
                "violations": k,
                "rate": k / n,
                "rate_lo": lo,
                "rate_hi": hi,
            }
        )
    return pd.DataFrame(rows)


def reasoning_rates(runs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Before and after the shift, per group ``by`` (means over runs): the reasoning rate on
    the validation split (in distribution) and on the shifted set, and both costs in the
    training unit."""
    return (
        runs.groupby(list(by), sort=False)
        .agg(
            runs=("seed", "size"),
            rate_before=("valid_rate", "mean"),
            rate_after=("reasoning_rate", "mean"),
            cost_before=("valid_cost", "mean"),
            cost_after=("train_cost", "mean"),
        )
        .reset_index()
    )


def violation_view(table: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The page's view of :func:`violation_table`: ``k/n [95 % Wilson interval]`` per group."""
    return pd.DataFrame(
        [
            {
                **{c: r[c] for c in by},
                "over budget [95 %]": rate_cell(
                    r["violations"], r["runs"], r["rate_lo"], r["rate_hi"]
                ),
            }
            for r in table.to_dict("records")
        ]
    )


def control_tables(
    runs: pd.DataFrame, controls: pd.DataFrame, provenance: str
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The robust runs against their matched-spend controls, the seeds as replicates
    (:func:`racer_lib.paper.shift.control_comparison`): per :data:`CONTROL_CELLS`, per method
    (the sweep over the temperatures), and the findings, each variant that reweights the
    costs with its runs pooled within each seed (:func:`racer_lib.paper.shift.variant_comparison`,
    :func:`racer_lib.paper.shift.control_findings`; key :data:`KEY_MATCHED`, the claim's), then
    the same per shift construction, each decided on its own (key :data:`KEY_BY_SHIFT`: the
    test subsets are one fixed draw per construction, so a finding that holds on one shift
    only is a finding about that shift)."""
    by_cell = control_comparison(runs, controls, CONTROL_CELLS, overlap=TEST_OVERLAP)
    sweep = control_comparison(runs, controls, ["method"], overlap=TEST_OVERLAP)
    found = [
        control_findings(
            variant_comparison(runs, controls, by, overlap=TEST_OVERLAP),
            provenance, registry.LLMBAR_SHIFT,
            FINDINGS_CSV, (*by, "variant"), key=key,
        )
        for by, key in (((), KEY_MATCHED), (("shift",), KEY_BY_SHIFT))
    ]  # fmt: skip
    return by_cell, sweep, pd.concat(found, ignore_index=True)


def side_reads(first: str) -> list[Read]:
    """The sentence on the shift itself: the ``first`` shift's name and the instruct mode's
    mean tokens on its training side and its shifted side."""
    reads = [("first_shift", "shift_plan.csv", "shift", "text", {"shift": first})]
    return reads + [
        (f"tokens_{side}", "shift_modes.csv", "mean_tokens_instruct", "mean",
         {"shift": first, "side": side})
        for side in ("train", "test")
    ]  # fmt: skip


#: ACER's reasoning rate before and after the shift.
RATE_READS: list[Read] = [
    (f"acer_{when}", "reasoning_rates.csv", f"rate_{when}", "mean", {"method": "ACER"})
    for when in ("before", "after")
]
#: The closing sentences: ACER's runs over budget and its runs, the most runs of a robust
#: method, each cost-reweighting variant's status, and the range over the robust methods of
#: the matched-spend comparison (``control_sweep.csv``).
CONTROL_READS: list[Read] = [
    (name, "violations_pooled.csv", column, "one", {"method": "ACER"})
    for name, column in (("acer_k", "violations"), ("acer_n", "runs"))
]
CONTROL_READS += [("robust_runs", "control_sweep.csv", "runs", "max", {})]
CONTROL_READS += [
    (
        f"beats_{variant.replace('-', '_')}",
        FINDINGS_CSV,
        "status",
        "text",
        {"variant": variant, "key": KEY_MATCHED},
    )
    for variant in COST_ROBUST
]
CONTROL_READS += [  # the findings per shift construction: how many, how many reproduced
    (f"by_shift_{name}", FINDINGS_CSV, "finding", "count", {"key": KEY_BY_SHIFT, **where})
    for name, where in (("n", {}), ("reproduced", {"status": "reproduced"}))
]
CONTROL_READS += [
    (f"{column}_{agg}", "control_sweep.csv", column, agg, {})
    for column in ("robust_violations", "control_violations", "spend_share", "accuracy_difference")
    for agg in ("min", "max")
]


#: The paper's claim this chapter tests (the reproduction report decides it): each variant that
#: reweights the costs beats its matched-spend control (the findings' key
#: :data:`racer_lib.paper.shift.KEY_MATCHED`).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 3 (LLMBar's released judges, real shift)",
        "the variants that reweight cost (RACER-C, RACER) beat the matched-spend control under a "
        "real subset shift: tested on real judges other than the paper's",
        registry.LLMBAR_SHIFT,
        Finding(KEY_MATCHED),
    ),
)
