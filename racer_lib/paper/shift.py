"""Robustness under a real distribution shift, and the matched-spend control that tells it from
thrift.

The paper's routers solve the budget-constrained problem of Eq. (1): maximise the expected
reward subject to ``E[c(z, a)] <= C``, with ``C`` in the training unit (one unit = the mean
instruct tokens of the training split, :class:`racer_lib.records.schema.CostUnit`). Its robust
variants
(§3, Eq. (2): the KL ball ``U(rho_n, delta)``; Thm. 3.1: its tilted worst case; Algorithm 1)
replace the rewards (RACER-R, temperature ``tau_r``), the costs (RACER-C, ``tau_c``) or both
(RACER) by their worst case over that ball around the training distribution, so that the
constraint should keep holding after a shift of the inputs (the paper's §5.2, Fig. 3).

This module holds the control that the shift chapters (the robustness ablation and the
real LLMBar shift, :mod:`racer_lib.paper.chapters.llmbar_shift`, which makes the shifts and
trains the routers) check that claim against:

* :func:`matched_controls` — for every robust run, ACER trained on the same split with the same
  seed at the budget that run actually spent on validation (:func:`control_budget`), evaluated
  on the same shifted set. A robust variant that stays within budget only because it spends
  less than its budget (thrift) is matched by its control; one that is robust does better;
* :func:`control_comparison` — the two compared, paired over seeds: violation counts with
  95 % Wilson intervals (:func:`wilson_interval`) and the accuracy difference with a 95 %
  percentile-bootstrap interval (:func:`racer_lib.evaluation.intervals.bootstrap_interval`).

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

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation.intervals import bootstrap_interval, sign_test, wilson_interval
from racer_lib.paper import experiments
from racer_lib.paper.claims import add_status
from racer_lib.routing import train

#: The robust variants, each compared with its matched-spend control.
ROBUST = ("RACER-R", "RACER-C", "RACER")
#: The variants that reweight the costs (Algorithm 1's cost adversary, §3): the ones whose cost
#: robustness the paper claims (Fig. 3(b)), so the ones whose findings the control decides.
#: RACER-R reweights only the rewards; its control rows are shown, never read as a finding.
COST_ROBUST = ("RACER-C", "RACER")
#: The text of a control finding: ``name`` is the finding's label columns joined.
FINDING_TEXT = "{name}: beats the matched-spend control"
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


# ----------------------------------------------------------------------------------------
# The matched-spend control


def valid_points(fit: experiments.Fit) -> list[dict[str, float]]:
    """Each policy of ``fit`` on its validation split: accuracy, expected cost in the training
    unit and reasoning rate (:func:`racer_lib.evaluation.metrics.split_point`)."""
    p = fit.result.p_reasoning(fit.valid.x.numpy())
    return [evaluate.split_point(fit.valid.r.numpy(), fit.valid.c.numpy(), pi) for pi in p]


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
    :func:`racer_lib.paper.experiments.fit`) at :func:`control_budget` of that policy's validation
    spend, evaluated on ``test``. One row per robust policy: ``fixed`` columns, the robust
    run's method, seed and budget (the budget its violations are judged against),
    ``robust_valid_cost``, ``control_budget``, then the control's validation cost, its accuracy,
    cost, ``train_cost`` and reasoning rate on ``test``. Identical control configurations are
    trained once."""
    cheapest = float(fit.train.c.min(dim=1).values.mean())
    wanted = []
    for name, cfg, pv in zip(names, fit.result.configs, valid_points(fit), strict=True):
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
    valid = valid_points(control)
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


# ----------------------------------------------------------------------------------------
# Reading the runs


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


def variant_comparison(
    runs: pd.DataFrame,
    controls: pd.DataFrame,
    by: Sequence[str] = (),
    cost_col: str = "train_cost",
    seed: int = 0,
) -> pd.DataFrame:
    """:func:`control_comparison` of the :data:`COST_ROBUST` runs only, per group ``by`` and
    ``variant``, every temperature of a variant pooled (each run still paired with its own
    control): the rows that decide whether cost robustness is more than thrift (Fig. 3(b))."""
    mine = runs[runs["variant"].isin(COST_ROBUST)]
    return control_comparison(mine, controls, [*by, "variant"], cost_col, seed)


def control_findings(
    comparison: pd.DataFrame,
    provenance: str,
    label: Sequence[str] = ("method",),
    calibrated: bool = False,
    basis: str = BASIS,
    text: str = FINDING_TEXT,
) -> pd.DataFrame:
    """One finding per row of a :func:`control_comparison` table: ``text`` with ``name`` the
    ``label`` columns joined (``"<label>: beats the matched-spend control"``), ``holds``,
    ``status``
    (:func:`racer_lib.paper.claims.add_status` on the records' ``provenance``; ``calibrated``: the
    simulator was given the result), ``detail`` (both violation counts with Wilson intervals,
    the spend and the paired accuracy difference) and ``basis``."""
    rows = []
    for r in comparison.itertuples(index=False):
        d = r._asdict()
        name = ", ".join(str(d[c]) for c in label)
        rows.append(
            {
                **{c: d[c] for c in label},
                "finding": text.format(name=name),
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


def rate_cell(k: float, n: float, lo: float, hi: float) -> str:
    """A table cell ``k/n [lo, hi]``: a count of runs over budget and its interval."""
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
                "robust over budget": rate_cell(
                    r["robust_violations"], r["runs"], r["robust_lo"], r["robust_hi"]
                ),
                "control over budget": rate_cell(
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
