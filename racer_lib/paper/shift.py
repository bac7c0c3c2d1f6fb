"""Robustness under a real distribution shift, and the matched-spend control that tells it from
thrift.

The paper's routers solve the budget-constrained problem of Eq. (1): maximise the expected
reward subject to ``E[c(z, a)] <= C``, with ``C`` in the training unit (one unit = the mean
instruct tokens of the training split, :class:`racer_lib.records.schema.CostUnit`). Its robust
variants (§3, Eq. (2): the KL ball ``U(rho_n, delta)``; Thm. 3.1: its tilted worst case;
Algorithm 1) replace the rewards (RACER-R, temperature ``tau_r``), the costs (RACER-C,
``tau_c``) or both (RACER) by their worst case over that ball around the training distribution,
so that the constraint should keep holding after a shift of the inputs (the paper's §5.2,
Fig. 3).

This module holds the control that the shift chapters (the robustness ablation,
:mod:`racer_lib.paper.chapters.robustness_ablation`, and the real LLMBar shift,
:mod:`racer_lib.paper.chapters.llmbar_shift`, which make the shifts and train the routers) check
that claim against:

* :func:`matched_controls` — for every robust run, ACER trained on the same split with the same
  seed at the budget that run actually spent on validation (:func:`control_budget`), evaluated
  on the same shifted set. A robust variant that stays within budget only because it spends
  less than its budget (thrift) is matched by its control; one that is robust does better;
* :func:`control_comparison` — the two compared with the book's protocol
  (:mod:`racer_lib.evaluation.verdicts`), **the replicate being a seed**: within a seed, the
  share of the robust runs over budget on the shifted set and the share of their controls (the
  runs of that seed in the group: temperatures, budgets, judges pooled), and the mean paired
  accuracy difference; the tests run over the seeds. Violation counts keep their 95 % Wilson
  intervals (:func:`wilson_interval`) as a description of the runs, not as the test.

**Beats the control** (the rule of :func:`control_family`): *fewer violations* (the per-seed
difference of the shares over budget, robust minus control, below zero by its SESOI: a one-sided
test, :func:`racer_lib.evaluation.verdicts.directional`) and *equal accuracy* (the per-seed mean
paired difference within ``±EQUAL_ACCURACY_POINTS``, fixed before any run: TOST,
:func:`racer_lib.evaluation.verdicts.equivalent`), both holding; it fails when either fails. A tie
in violations in every seed is no effect and fails; too few seeds are inconclusive.

**Fig. 3** (the robustness ablation, decided alike wherever it is run: its chapter 08 and the
simulator sweep of chapter 16): the plan of one replicate's runs (:func:`ablation_plan`), each
policy's row on the shifted set (:func:`shift_rows`) and the two findings the chapter decides
itself, "RACER-R has the highest reward" (:func:`highest_reward`, :func:`ablation_findings`)
and "RACER-C beats the matched-spend control" (:func:`matched_spend_finding`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from racer_lib.claims.families import PER_SEED, Family, Test, from_rows
from racer_lib.evaluation import intervals, verdicts
from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation.intervals import wilson_interval
from racer_lib.paper import effects, experiments, registry
from racer_lib.paper.claims import VERDICT_COLUMNS, add_status
from racer_lib.paper.files import ABLATION_FINDINGS_CSV as ABLATION_FINDINGS_CSV
from racer_lib.paper.files import ABLATION_RUNS_CSV as ABLATION_RUNS_CSV
from racer_lib.paper.files import CONTROL_FINDINGS_CSV as CONTROL_FINDINGS_CSV
from racer_lib.paper.files import CONTROL_RUNS_CSV as CONTROL_RUNS_CSV
from racer_lib.routing import train

__all__ = [
    "BASIS",
    "CHEAPER",
    "COSTLIER",
    "COST_ROBUST",
    "EQUAL_ACCURACY_POINTS",
    "FEASIBLE_MARGIN",
    "FINDING_TEXT",
    "HIGHEST",
    "MATCHED",
    "ROBUST",
    "ablation_findings",
    "ablation_plan",
    "control_budget",
    "control_comparison",
    "control_configs",
    "control_findings",
    "control_plan",
    "control_rows",
    "control_family",
    "control_view",
    "highest_reward",
    "matched_controls",
    "matched_spend_finding",
    "paired_runs",
    "per_seed_shares",
    "rate_cell",
    "shift_rows",
    "valid_points",
    "variant_comparison",
    "wilson_interval",
]

#: The robust variants, each compared with its matched-spend control.
ROBUST = ("RACER-R", "RACER-C", "RACER")
#: The variants that reweight the costs (Algorithm 1's cost adversary, §3): the ones whose cost
#: robustness the paper claims (Fig. 3(b)), so the ones whose findings the control decides.
#: RACER-R reweights only the rewards; its control rows are shown, never read as a finding.
COST_ROBUST = ("RACER-C", "RACER")
#: The text of a control finding: ``name`` is the finding's label columns joined.
FINDING_TEXT = "{name}: beats the matched-spend control"
#: "Equal accuracy": the margin (points) of the TOST on the per-seed mean paired accuracy
#: difference, robust minus control; fixed before any run: the SESOI of an accuracy difference
#: between routers (:data:`racer_lib.paper.effects.ROUTER_ACCURACY`), as every claim on it.
EQUAL_ACCURACY_POINTS = effects.ROUTER_ACCURACY.sesoi
#: A control budget is at least this factor above the cheapest cost on the training split
#: (Eq. (1) has no feasible policy at or below it).
FEASIBLE_MARGIN = 1.001
#: Fig. 3's two scenarios (chapter 08's claims read these labels in :data:`ABLATION_RUNS_CSV`).
CHEAPER, COSTLIER = "(a) cheaper shift", "(b) costlier shift"
#: The texts of Fig. 3's two findings (``MATCHED``: ``name`` the variant).
HIGHEST = "cheaper shift: RACER-R has the highest reward of every method"
MATCHED = "costlier shift: {name} beats the matched-spend control"
#: The keys of Fig. 3's two findings (column ``key``; chapter 08's claims read them) and of a
#: cost-robust variant's control finding (chapter 15's claim reads it).
KEY_HIGHEST, KEY_MATCHED = "racer_r_highest", "matched_spend_control"
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
    trained once, through the store ``fit``'s routers were (``fit.store``).
    :func:`control_plan` and :func:`control_rows` are its two halves, for a caller that trains
    the controls of several record sets together."""
    wanted = control_plan(fit, names, robust)
    if not wanted:
        return []
    configs = control_configs(wanted)
    control = experiments.fit(records, embeddings, configs, settings, split=split, store=fit.store)
    return control_rows(wanted, control, test, **fixed)


def control_plan(
    fit: experiments.Fit, names: Sequence[str], robust: Sequence[str] = ROBUST
) -> list[tuple[str, train.PolicyConfig, float, train.PolicyConfig]]:
    """The controls :func:`matched_controls` trains: per policy of ``fit`` whose variant is in
    ``robust``, its name, configuration, validation spend and its control's configuration
    (ACER, same seed, at :func:`control_budget`)."""
    cheapest = float(fit.train.c.min(dim=1).values.mean())
    wanted = []
    for name, cfg, pv in zip(names, fit.result.configs, valid_points(fit), strict=True):
        if cfg.variant in robust:
            c = control_budget(pv["cost"], cfg.budget, cheapest)
            wanted.append(
                (name, cfg, pv["cost"], train.PolicyConfig(c, seed=cfg.seed, variant="ACER"))
            )
    return wanted


def control_configs(wanted) -> list[train.PolicyConfig]:
    """The distinct control configurations of a :func:`control_plan`, in its order."""
    return list(dict.fromkeys(w[-1] for w in wanted))


def control_rows(
    wanted, control: experiments.Fit, test: tuple[pd.DataFrame, np.ndarray], **fixed: Any
) -> list[dict[str, Any]]:
    """:func:`matched_controls`'s rows from its :func:`control_plan` ``wanted`` and the fit of
    its :func:`control_configs` (``control``), evaluated on ``test``."""
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
# Reading the runs: seeds as replicates


def paired_runs(runs: pd.DataFrame, controls: pd.DataFrame, cost_col: str) -> pd.DataFrame:
    """Each robust run beside its matched-spend control (joined on every column the two
    tables share among the fixed columns, ``method``, ``seed`` and ``budget``; the control's
    columns suffixed ``_control``), with ``robust_violated`` and ``control_violated``
    (``cost_col`` above the robust run's budget)."""
    keys = [
        c
        for c in controls.columns
        if c in runs.columns
        and c not in ("accuracy", "cost", "train_cost", "reasoning_rate", "provenance")
    ]
    both = runs.merge(controls, on=keys, suffixes=("", "_control"), validate="one_to_one")
    both["robust_violated"] = both[cost_col] > both["budget"]
    both["control_violated"] = both[f"{cost_col}_control"] > both["budget"]
    return both


def per_seed_shares(both: pd.DataFrame) -> pd.DataFrame:
    """Per replicate seed of :func:`paired_runs` rows: the share of the robust runs over
    budget, their controls' share, ``violation_difference`` (robust minus control) and
    ``accuracy_difference`` (the mean paired difference, robust minus control, points)."""
    g = both.assign(
        robust_share=both["robust_violated"].astype(float),
        control_share=both["control_violated"].astype(float),
        accuracy_difference=both["accuracy"] - both["accuracy_control"],
    ).groupby("seed", sort=True)
    out = g[["robust_share", "control_share", "accuracy_difference"]].mean()
    out["violation_difference"] = out["robust_share"] - out["control_share"]
    return out.reset_index()


def control_family(
    both: pd.DataFrame, min_n: int = verdicts.MIN_SEEDS, overlap: float = 0.0
) -> Family:
    """The rule of the module on :func:`paired_runs` rows, seeds as replicates
    (:func:`per_seed_shares`), as a family of two parts: ``fewer violations`` (directional,
    below zero by the SESOI; its power stated at twice it, the paper printing no number) and
    ``equal accuracy`` (TOST within ``±EQUAL_ACCURACY_POINTS``; power at no difference).
    ``overlap``: Nadeau and Bengio's correction where the seeds test on resamples of one fixed
    set of pairs (chapter 15; :func:`verdicts.directional`)."""
    seeds, kw = per_seed_shares(both), {"min_n": min_n, "overlap": overlap}
    fewer = Test(-1, 0.0, effects.VIOLATIONS.sesoi, -effects.VIOLATIONS.expected(), **kw)
    alike = Test(0, 0.0, EQUAL_ACCURACY_POINTS, 0.0, **kw)
    return Family(
        from_rows("fewer violations", {"share": seeds["violation_difference"]}, fewer)
        + from_rows("equal accuracy", {"accuracy": seeds["accuracy_difference"]}, alike)
    )


def _describe(g: pd.DataFrame, cost_col: str) -> dict[str, Any]:
    """The runs of one group of :func:`paired_runs`, described (no test): counts over budget
    with 95 % Wilson intervals, the discordant pairs, the spend and both sides' means."""
    n = len(g)
    kr, kc = int(g["robust_violated"].sum()), int(g["control_violated"].sum())
    row: dict[str, Any] = {"runs": n, "seeds": int(g["seed"].nunique())}
    row |= {"robust_violations": kr, "robust_rate": kr / n}
    row["robust_lo"], row["robust_hi"] = wilson_interval(kr, n)
    row |= {"control_violations": kc, "control_rate": kc / n}
    row["control_lo"], row["control_hi"] = wilson_interval(kc, n)
    return row | {
        "only_robust": int((g["robust_violated"] & ~g["control_violated"]).sum()),
        "only_control": int((g["control_violated"] & ~g["robust_violated"]).sum()),
        "robust_spend": g["robust_valid_cost"].mean(),
        "spend_share": (g["robust_valid_cost"] / g["budget"]).mean(),
        "control_budget": g["control_budget"].mean(),
        "robust_cost": g[cost_col].mean(),
        "control_cost": g[f"{cost_col}_control"].mean(),
        "robust_accuracy": g["accuracy"].mean(),
        "control_accuracy": g["accuracy_control"].mean(),
    }


def control_comparison(
    runs: pd.DataFrame,
    controls: pd.DataFrame,
    by: Sequence[str],
    cost_col: str = "train_cost",
    min_n: int = verdicts.MIN_SEEDS,
    overlap: float = 0.0,
) -> pd.DataFrame:
    """Each robust run against its matched-spend control (:func:`paired_runs`), per group
    ``by``: the runs described (:func:`_describe`: runs, seeds, both violation counts with
    rates and Wilson intervals, the discordant runs, the robust runs' validation spend in the
    training unit and as a share of the budget, the controls' budget, both mean costs and
    accuracies), then the protocol's tests over the seeds (:func:`control_family`):
    ``violation_difference`` (mean over seeds of the robust share over budget minus the
    control's) with its 95 % t-interval ``violation_lo``/``violation_hi``, ``violations_p``
    and ``violations_decision``; ``accuracy_difference`` (points) with ``difference_lo``/
    ``difference_hi``, ``accuracy_p`` and ``accuracy_decision``; then the conjunction's verdict
    columns (:meth:`racer_lib.evaluation.verdicts.Verdict.columns`: ``effect`` ... ``decision``,
    ``note``, ``p_other``; ``decision`` ``holds``: the group beats its control), which
    :func:`control_findings` turns into findings with a status (``overlap``: as there)."""
    both = paired_runs(runs, controls, cost_col)
    rows = []
    for key, g in both.groupby(list(by), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        family = control_family(g, min_n, overlap)
        found = family.verdicts()
        parts, beats = family.part_verdicts(found), family.join(found)
        fewer, alike = parts["fewer violations"], parts["equal accuracy"]
        rows.append(
            {
                **dict(zip(by, key)),
                **_describe(g, cost_col),
                "violation_difference": fewer.effect,
                "violation_lo": fewer.lo,
                "violation_hi": fewer.hi,
                "violations_p": fewer.p,
                "violations_decision": fewer.decision,
                "accuracy_difference": alike.effect,
                "difference_lo": alike.lo,
                "difference_hi": alike.hi,
                "accuracy_p": alike.p,
                "accuracy_decision": alike.decision,
                **beats.columns(),
                PER_SEED: family.to_json(),
            }
        )
    return pd.DataFrame(rows)


def variant_comparison(
    runs: pd.DataFrame,
    controls: pd.DataFrame,
    by: Sequence[str] = (),
    cost_col: str = "train_cost",
    min_n: int = verdicts.MIN_SEEDS,
    overlap: float = 0.0,
) -> pd.DataFrame:
    """:func:`control_comparison` of the :data:`COST_ROBUST` runs only, per group ``by`` and
    ``variant``, every temperature of a variant pooled within its seed (each run still paired
    with its own control): the rows that decide whether cost robustness is more than thrift
    (Fig. 3(b))."""
    mine = runs[runs["variant"].isin(COST_ROBUST)]
    return control_comparison(mine, controls, [*by, "variant"], cost_col, min_n, overlap)


def _span(effect: float, lo: float, hi: float, unit: str = "") -> str:
    """``+0.12 [-0.05, +0.30]`` (the interval left out where no test ran)."""
    text = intervals.interval_text(effect, lo, hi)
    return text.replace(" [", f"{unit} [", 1) if " [" in text else f"{text}{unit}"


def _detail(d: Mapping[str, Any], name: str) -> str:
    """One comparison row in words: both violation counts (Wilson intervals), the discordant
    runs, the spend, and the two tests' intervals over the seeds."""
    return (
        f"{name}: over budget in {d['robust_violations']} of {d['runs']} runs "
        f"[{d['robust_lo']:.2f}, {d['robust_hi']:.2f}] vs control {d['control_violations']} of "
        f"{d['runs']} [{d['control_lo']:.2f}, {d['control_hi']:.2f}] (95 % Wilson), only the "
        f"robust run over in {d['only_robust']}, only the control in {d['only_control']}; spent "
        f"{d['spend_share']:.0%} of the budget on validation; per seed (n = {d['seeds']}): "
        "share over budget minus the control's "
        f"{_span(d['violation_difference'], d['violation_lo'], d['violation_hi'])} "
        f"({d['violations_decision']}), accuracy minus the control's "
        f"{_span(d['accuracy_difference'], d['difference_lo'], d['difference_hi'], ' pts')} "
        f"within ±{EQUAL_ACCURACY_POINTS:g} ({d['accuracy_decision']})"
    )


def control_findings(
    comparison: pd.DataFrame,
    provenance: str,
    chapter: str,
    csv: str,
    label: Sequence[str] = ("method",),
    basis: str = BASIS,
    text: str = FINDING_TEXT,
    key: str = KEY_MATCHED,
) -> pd.DataFrame:
    """One finding per row of a :func:`control_comparison` table, written by ``chapter`` (its
    registry stem) as ``csv``: the ``label`` columns, ``finding`` (``text`` with ``name`` the
    ``label`` columns joined), its ``key`` (a claim's :class:`racer_lib.claims.rules.Finding`
    reads it), ``observed`` (the row in words), the row's verdict (its
    conjunction, :func:`control_family`; its ``per_seed`` family), ``status``
    (:func:`racer_lib.paper.claims.add_status`) and ``basis``."""
    rows = []
    for d in comparison.to_dict("records"):
        name = ", ".join(str(d[c]) for c in label)
        rows.append(
            {
                **{c: d[c] for c in label},
                "finding": text.format(name=name),
                "key": key,
                "observed": _detail(d, name),
                **{c: d[c] for c in (*VERDICT_COLUMNS, "p_other", PER_SEED) if c in d},
                "basis": basis,
            }
        )
    return add_status(rows, provenance, chapter, csv)


def rate_cell(k: float, n: float, lo: float, hi: float) -> str:
    """A table cell ``k/n [lo, hi]``: a count of runs over budget and its interval."""
    return f"{k:.0f}/{n:.0f} [{lo:.2f}, {hi:.2f}]"


def control_view(compare: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The page's view of :func:`control_comparison`: per group ``by``, each side's runs over
    budget as ``k/n [95 % Wilson interval]``, the share of the budget the robust runs spent on
    validation, the two tests over the seeds (the difference of the shares over budget and
    the accuracy difference, each with its 95 % t-interval and decision) and the verdict. The
    CSV keeps every column."""
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
                "seeds": r["seeds"],
                "Δ share over [95 %]": _span(
                    r["violation_difference"], r["violation_lo"], r["violation_hi"]
                ),
                "Δ acc. [95 %]": _span(
                    r["accuracy_difference"], r["difference_lo"], r["difference_hi"]
                ),
                "beats control": r["decision"],
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------
# Fig. 3: the robustness ablation's runs and its two findings


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
    fitted: experiments.Fit,
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


def highest_reward(runs: pd.DataFrame, min_n: int = verdicts.MIN_SEEDS) -> dict[str, Any]:
    """Fig. 3(a), "RACER-R consistently achieves the highest reward": under the cheaper shift,
    per replicate seed, RACER-R's accuracy (every τ_R pooled within the seed: no τ chosen after
    the run) minus each other method's (ACER and RACER-C at each τ_C); each difference a
    one-sided t-test over the seeds, Holm over the methods
    (:func:`racer_lib.evaluation.verdicts.every`). A findings row (``finding``, ``scenario``,
    ``observed``, the verdict's columns, ``basis``)."""
    here = runs[runs["scenario"] == CHEAPER]
    racer_r = here[here["variant"] == "RACER-R"].groupby("seed")["accuracy"].mean()
    others = here[here["variant"] != "RACER-R"]
    acc = others.pivot_table(index="seed", columns="method", values="accuracy", sort=False)
    gain = effects.ROUTER_ACCURACY
    test = Test(1, 0.0, gain.sesoi, gain.expected(), min_n=min_n)
    family = Family(from_rows("", {m: racer_r - acc[m] for m in acc.columns}, test))
    members = family.verdicts()[""]
    found = family.join({"": members})
    return {
        "finding": HIGHEST,
        "key": KEY_HIGHEST,
        "scenario": CHEAPER,
        "observed": "RACER-R (every τ pooled) minus "
        + ", ".join(f"{m}: {v.effect:+.2f} pts" for m, v in members.items()),
        **found.columns(),
        "basis": experiments.BASIS_LEARNED,
        PER_SEED: family.to_json(),
    }


def ablation_findings(
    runs: pd.DataFrame, provenance: str, min_n: int = verdicts.MIN_SEEDS
) -> pd.DataFrame:
    """The finding of Fig. 3 that chapter 08 decides on its runs and writes as
    :data:`ABLATION_FINDINGS_CSV`: :func:`highest_reward`, with its status
    (:func:`racer_lib.paper.claims.add_status`). The other readings of Fig. 3 are decided by
    the chapter's claims on :data:`ABLATION_RUNS_CSV`."""
    rows = [highest_reward(runs, min_n)]
    return add_status(rows, provenance, registry.ROBUSTNESS, ABLATION_FINDINGS_CSV)


def matched_spend_finding(
    runs: pd.DataFrame,
    controls: pd.DataFrame,
    provenance: str,
    min_n: int = verdicts.MIN_SEEDS,
) -> pd.DataFrame:
    """The finding that decides whether cost robustness is more than thrift, written by chapter
    08 as :data:`CONTROL_FINDINGS_CSV`: under the costlier shift, RACER-C (every τ_C pooled within
    its seed, each run paired with its own control, :func:`matched_controls`) against its
    matched-spend controls, by the rule of :func:`control_family` (fewer runs over budget per
    seed **and** accuracy alike within ``EQUAL_ACCURACY_POINTS``, a conjunction), as the
    finding ``"costlier shift: RACER-C beats the matched-spend control"`` with its
    ``scenario``."""
    here = runs[(runs["scenario"] == COSTLIER) & (runs["variant"] == "RACER-C")]
    mine = controls[controls["scenario"] == COSTLIER]
    compare = variant_comparison(here, mine, ["scenario"], cost_col="cost", min_n=min_n)
    found = control_findings(
        compare, provenance, registry.ROBUSTNESS, CONTROL_FINDINGS_CSV, ("variant",),
        text=MATCHED,
    )  # fmt: skip
    return found.assign(scenario=COSTLIER)
