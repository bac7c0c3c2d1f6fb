"""Robustness under a real distribution shift, and the matched-spend control that tells it from
thrift.

The paper's routers solve the budget-constrained problem of Eq. (1): maximise the expected
reward subject to ``E[c(z, a)] <= C``, with ``C`` in the training unit (one unit = the mean
instruct tokens of the training split, :class:`racer_lib.records.CostUnit`). Its robust variants
(§3, Eq. (2): the KL ball ``U(rho_n, delta)``; Thm. 3.1: its tilted worst case; Algorithm 1)
replace the rewards (RACER-R, temperature ``tau_r``), the costs (RACER-C, ``tau_c``) or both
(RACER) by their worst case over that ball around the training distribution, so that the
constraint should keep holding after a shift of the inputs (the paper's §5.2, Fig. 3).

This module runs that claim on real subsets and checks it against a control:

* :func:`shift_plan` — the shifts made from the subsets present (read from the records'
  ``subset`` column, never a fixed list): ``natural->adversarial`` (train on the natural
  subsets, test on every other), ``adversarial->natural`` (the reverse) and a
  ``leave-one-out`` rotation (train on all subsets but one, test on that one);
* :func:`run_shift` — for one judge and shift, per seed: a fresh validation share of the
  training subsets (:func:`racer_lib.sets.stratified_split`), ACER / RACER-R / RACER-C / RACER
  at every budget trained in one batched pass (:func:`racer_lib.experiments.fit`), evaluated on
  the shifted subsets with the cost **in the training unit** (``train_cost``); then
* :func:`matched_controls` — for every robust run, ACER trained on the same split with the same
  seed at the budget that run actually spent on validation (:func:`control_budget`), evaluated
  on the same shifted set. A robust variant that stays within budget only because it spends
  less than its budget (thrift) is matched by its control; one that is robust does better;
* :func:`control_comparison` — the two compared, paired over seeds: violation counts with
  95 % Wilson intervals (:func:`wilson_interval`) and the accuracy difference with a 95 %
  percentile-bootstrap interval (:func:`racer_lib.report.bootstrap_interval`).

**Beats the control** (the rule of :func:`control_comparison`): the robust runs exceed the
budget on the shifted set **significantly less often** than their controls, paired run by run:
of the pairs where exactly one of the two exceeds it, the robust run is the one in so few that
an exact one-sided sign test (McNemar's exact test, :func:`sign_test`) gives
``p < SIGNIFICANCE`` (0.05); **at equal accuracy**: the 95 % bootstrap interval of the mean
paired accuracy difference (robust minus control, points) lies above
``-EQUAL_ACCURACY_POINTS`` (1 point), i.e. the robust runs are not less accurate than their
controls by more than a point. A tie in violations (e.g. none on either side), or a difference
of a run or two, does not beat the control.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from . import evaluate, experiments, sets, train
from .claims import add_status

#: The robust variants, each compared with its matched-spend control.
ROBUST = ("RACER-R", "RACER-C", "RACER")
#: The shift kinds :func:`shift_plan` knows.
SHIFT_KINDS = ("natural->adversarial", "adversarial->natural", "leave-one-out")
#: "Equal accuracy": the robust runs are not less accurate than their controls by more than this
#: many points (lower end of the 95 % bootstrap interval of the mean paired difference).
EQUAL_ACCURACY_POINTS = 1.0
#: Level of the one-sided sign test that "fewer violations" must pass.
SIGNIFICANCE = 0.05
#: A control budget is at least this factor above the cheapest cost on the training split
#: (Eq. (1) has no feasible policy at or below it).
FEASIBLE_MARGIN = 1.001
BASIS = (
    "emerges: routers are trained, then tested after a shift; no simulator or input is given "
    "the routers' response to the shift"
)


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n`` at confidence ``level``
    (Wilson, 1927): ``(p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``. ``n = 0`` gives
    ``(0, 1)``."""
    if n == 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # k = 0 and k = n give exactly 0 and 1 (the formula's value, up to rounding)
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def sign_test(fewer: int, more: int) -> float:
    """One-sided exact sign test (McNemar's exact test) on paired binary outcomes: ``fewer``
    pairs where only the first of the two has the outcome, ``more`` where only the second
    does. The p-value of seeing ``fewer`` or less of the ``fewer + more`` discordant pairs under
    a fair coin, ``sum_{i <= fewer} C(n, i) / 2^n``; 1 without discordant pairs."""
    n = fewer + more
    return float(sum(math.comb(n, i) for i in range(fewer + 1)) / 2**n)


# ----------------------------------------------------------------------------------------
# The plan of shifts, from the subsets present


@dataclass(frozen=True)
class Shift:
    """One shift: train (and validate) on ``train`` subsets, test on ``test`` subsets."""

    name: str
    train: tuple[str, ...]
    test: tuple[str, ...]


def subsets_of(subsets: Sequence[str] | pd.Series) -> list[str]:
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
    present = subsets_of(subsets)
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


def split_labels(
    subsets: Sequence[str] | pd.Series, shift: Shift, seed: int, valid_share: float = 0.25
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


def shift_sides(records: dict[str, pd.DataFrame], plan: Sequence[Shift]) -> pd.DataFrame:
    """The shift itself, per judge, shift and side (``train``: the training subsets, ``test``:
    the shifted ones): pairs, both modes' accuracy, mean tokens, and All-Reasoning's cost
    ratio (:func:`racer_lib.evaluate.mode_summary`, :func:`racer_lib.evaluate.with_mean_tokens`)."""
    parts = []
    for judge, recs in records.items():
        for sh in plan:
            for side, names in (("train", sh.train), ("test", sh.test)):
                part = recs[recs["subset"].isin(names)].assign(
                    judge=judge, shift=sh.name, side=side
                )
                summary = evaluate.mode_summary(part, ["judge", "shift", "side"])
                parts.append(evaluate.with_mean_tokens(summary, part, ["judge", "shift", "side"]))
    cols = ["judge", "shift", "side", "n", "acc_instruct", "acc_reasoning", "delta_accuracy"]
    cols += ["mean_tokens_instruct", "mean_tokens_reasoning", "cost_ratio"]
    return pd.concat(parts, ignore_index=True)[cols]


# ----------------------------------------------------------------------------------------
# Training and evaluation


def variant_plan(
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


def _valid_points(fit: experiments.Fit) -> list[dict[str, float]]:
    p = fit.result.p_reasoning(fit.valid.x.numpy())
    return [evaluate.split_point(fit.valid.r.numpy(), fit.valid.c.numpy(), pi) for pi in p]


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
    for name, cfg, pv, pt in zip(
        names, fit.result.configs, _valid_points(fit), p_test, strict=True
    ):
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


def control_budget(spent: float, budget: float, cheapest: float) -> float:
    """The matched-spend control's budget rule: ACER is trained at the budget the robust run
    actually spent on validation (``spent``, its selected checkpoint's expected validation cost
    in the training unit), never above that run's own ``budget`` (a run that overspent on
    validation is matched by plain ACER at its budget) and never at or below ``cheapest``, the
    cost of the cheaper mode on every training pair (no policy of Eq. (1) is cheaper; the
    budget is then ``FEASIBLE_MARGIN`` times it)."""
    return float(min(budget, max(spent, FEASIBLE_MARGIN * cheapest)))


def matched_controls(
    fit: experiments.Fit,
    names: Sequence[str],
    records: pd.DataFrame,
    embeddings: np.ndarray,
    settings: train.TrainSettings,
    test: tuple[pd.DataFrame, np.ndarray],
    split: np.ndarray | None = None,
    robust: Sequence[str] = ROBUST,
    **fixed: Any,
) -> list[dict[str, Any]]:
    """For every policy of ``fit`` whose variant is in ``robust``: ACER with the same seed,
    trained on the same split (``records``, ``embeddings`` and ``split`` as given to
    :func:`racer_lib.experiments.fit`) at :func:`control_budget` of that policy's validation
    spend, evaluated on ``test``. One row per robust policy: ``fixed`` columns, the robust
    run's method, seed and budget (the budget its violations are judged against),
    ``robust_valid_cost``, ``control_budget``, then the control's validation cost, its accuracy,
    cost, ``train_cost`` and reasoning rate on ``test``. Identical control configurations are
    trained once."""
    cheapest = float(fit.train.c.min(dim=1).values.mean())
    wanted = []
    for name, cfg, pv in zip(names, fit.result.configs, _valid_points(fit), strict=True):
        if cfg.variant in robust:
            c = control_budget(pv["cost"], cfg.budget, cheapest)
            wanted.append(
                (name, cfg, pv["cost"], train.PolicyConfig(c, seed=cfg.seed, variant="ACER"))
            )
    if not wanted:
        return []
    configs = list(dict.fromkeys(w[-1] for w in wanted))
    control = experiments.fit(records, embeddings, configs, settings, split=split)
    at = {cfg: i for i, cfg in enumerate(control.result.configs)}
    p_test = control.result.p_reasoning(test[1])
    valid = _valid_points(control)
    rows = []
    for name, cfg, spent, ctrl in wanted:
        i = at[ctrl]
        rows.append(
            {
                **fixed,
                "method": name,
                "seed": cfg.seed,
                "budget": cfg.budget,
                "robust_valid_cost": spent,
                "control_budget": ctrl.budget,
                "control_valid_cost": valid[i]["cost"],
                **evaluate.policy_point(test[0], p_test[i], control.unit),
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
    valid_share: float = 0.25,
    **fixed: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One judge on one shift: per seed, :func:`split_labels`, the :func:`variant_plan`
    trained in one batched pass (:func:`racer_lib.experiments.fit`), :func:`policy_rows` on
    the shifted subsets, and the :func:`matched_controls` of the robust runs. Returns the
    runs and the controls, each row with ``fixed`` and ``shift``."""
    runs, controls = [], []
    for s in seeds:
        labels = split_labels(records["subset"], shift, s, valid_share)
        names, configs = variant_plan(budgets, s, tau_r, taus_c)
        fit = experiments.fit(records, embeddings, configs, settings, split=labels)
        test = labels == "test"
        pair = (records[test], embeddings[test])
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


# ----------------------------------------------------------------------------------------
# Reading the runs


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


def control_comparison(
    runs: pd.DataFrame,
    controls: pd.DataFrame,
    by: Sequence[str],
    cost_col: str = "train_cost",
    seed: int = 0,
    n_boot: int = 2000,
    level: float = 0.95,
) -> pd.DataFrame:
    """Each robust run against its matched-spend control (paired on every column the two
    tables share among the fixed columns, ``method``, ``seed`` and ``budget``), per group
    ``by``: runs, both violation counts (``cost_col`` above the budget) with rates and Wilson
    intervals, the runs where only one of the two violates, the robust runs' validation spend
    (training unit, and as a share of the budget), the controls' budget, both mean costs,
    the mean paired accuracy difference (robust minus control, points) with its
    percentile-bootstrap interval (seeded with ``seed``), ``equal_accuracy``, ``violations_p``
    (:func:`sign_test` of the runs where only the robust one violates against those where only
    its control does), ``fewer_violations`` (``violations_p < SIGNIFICANCE``) and ``holds``
    (the module's rule: significantly fewer violations at equal accuracy;
    :func:`control_findings` turns the rows into findings with a status).
    """
    from .report import bootstrap_interval

    keys = [
        c
        for c in controls.columns
        if c in runs.columns
        and c not in ("accuracy", "cost", "train_cost", "reasoning_rate", "provenance")
    ]
    both = runs.merge(controls, on=keys, suffixes=("", "_control"), validate="one_to_one")
    both["robust_violated"] = both[cost_col] > both["budget"]
    both["control_violated"] = both[f"{cost_col}_control"] > both["budget"]
    rows = []
    for key, g in both.groupby(list(by), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        n = len(g)
        kr, kc = int(g["robust_violated"].sum()), int(g["control_violated"].sum())
        diff = (g["accuracy"] - g["accuracy_control"]).to_numpy()
        lo, hi = bootstrap_interval(diff, seed, n_boot, level)
        equal = bool(lo >= -EQUAL_ACCURACY_POINTS)
        row = {**dict(zip(by, key)), "runs": n, "robust_violations": kr, "robust_rate": kr / n}
        row["robust_lo"], row["robust_hi"] = wilson_interval(kr, n, level)
        row |= {"control_violations": kc, "control_rate": kc / n}
        row["control_lo"], row["control_hi"] = wilson_interval(kc, n, level)
        only_robust = int((g["robust_violated"] & ~g["control_violated"]).sum())
        only_control = int((g["control_violated"] & ~g["robust_violated"]).sum())
        p = sign_test(only_robust, only_control)
        row |= {
            "only_robust": only_robust,
            "only_control": only_control,
            "robust_spend": g["robust_valid_cost"].mean(),
            "spend_share": (g["robust_valid_cost"] / g["budget"]).mean(),
            "control_budget": g["control_budget"].mean(),
            "robust_cost": g[cost_col].mean(),
            "control_cost": g[f"{cost_col}_control"].mean(),
            "robust_accuracy": g["accuracy"].mean(),
            "control_accuracy": g["accuracy_control"].mean(),
            "accuracy_difference": float(diff.mean()),
            "difference_lo": lo,
            "difference_hi": hi,
            "equal_accuracy": equal,
            "violations_p": p,
            "fewer_violations": p < SIGNIFICANCE,
            "holds": bool(equal and p < SIGNIFICANCE),
        }
        rows.append(row)
    return pd.DataFrame(rows)


def control_findings(
    comparison: pd.DataFrame,
    provenance: str,
    label: Sequence[str] = ("method",),
    calibrated: bool = False,
    basis: str = BASIS,
) -> pd.DataFrame:
    """One finding per row of a :func:`control_comparison` table: ``"<label>: beats the
    matched-spend control"`` (``label`` columns joined), ``holds``, ``status``
    (:func:`racer_lib.claims.add_status` on the records' ``provenance``; ``calibrated``: the
    simulator was given the result), ``detail`` (both violation counts with Wilson intervals,
    the spend and the paired accuracy difference) and ``basis``."""
    rows = []
    for r in comparison.itertuples(index=False):
        d = r._asdict()
        name = ", ".join(str(d[c]) for c in label)
        rows.append(
            {
                **{c: d[c] for c in label},
                "finding": f"{name}: beats the matched-spend control",
                "holds": bool(d["holds"]),
                "detail": (
                    f"{name}: violations {d['robust_violations']} of {d['runs']} runs "
                    f"[{d['robust_lo']:.2f}, {d['robust_hi']:.2f}] vs control "
                    f"{d['control_violations']} of {d['runs']} "
                    f"[{d['control_lo']:.2f}, {d['control_hi']:.2f}] (95 % Wilson), only the "
                    f"robust run over in {d['only_robust']}, only the control in "
                    f"{d['only_control']} (sign test p = {d['violations_p']:.2g}); spent "
                    f"{d['spend_share']:.0%} of the budget on validation; accuracy "
                    f"{d['accuracy_difference']:+.2f} pts "
                    f"[{d['difference_lo']:+.2f}, {d['difference_hi']:+.2f}] (95 % bootstrap), "
                    f"equal accuracy: {'yes' if d['equal_accuracy'] else 'no'}"
                ),
                "calibrated": calibrated,
                "basis": basis,
            }
        )
    return add_status(rows, provenance)


def _rate_cell(k: float, n: float, lo: float, hi: float) -> str:
    return f"{k:.0f}/{n:.0f} [{lo:.2f}, {hi:.2f}]"


def control_view(compare: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The page's view of :func:`control_comparison`: per group ``by``, each side's runs over
    budget as ``k/n [95 % Wilson interval]``, the share of the budget the robust runs spent on
    validation, the paired accuracy difference with its interval, the sign test's p and
    whether the robust method beats its control. The CSV keeps every column."""
    rows = []
    for r in compare.to_dict("records"):
        rows.append(
            {
                **{c: r[c] for c in by},
                "robust over budget": _rate_cell(
                    r["robust_violations"], r["runs"], r["robust_lo"], r["robust_hi"]
                ),
                "control over budget": _rate_cell(
                    r["control_violations"], r["runs"], r["control_lo"], r["control_hi"]
                ),
                "spent on valid.": f"{r['spend_share']:.0%}",
                "Δ acc. [95 %]": f"{r['accuracy_difference']:+.2f} "
                f"[{r['difference_lo']:+.2f}, {r['difference_hi']:+.2f}]",
                "p (fewer)": r["violations_p"],
                "beats control": bool(r["holds"]),
            }
        )
    return pd.DataFrame(rows)


def violation_view(table: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The page's view of :func:`violation_table`: ``k/n [95 % Wilson interval]`` per group."""
    return pd.DataFrame(
        [
            {
                **{c: r[c] for c in by},
                "over budget [95 %]": _rate_cell(
                    r["violations"], r["runs"], r["rate_lo"], r["rate_hi"]
                ),
            }
            for r in table.to_dict("records")
        ]
    )
