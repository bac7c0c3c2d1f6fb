"""Chapter 08_robustness_ablation, the paper's robustness ablation (§5.2): Table 1 and Fig. 3.

ACER, RACER-R and RACER-C (no reweighting, rewards reweighted at τ_R, costs reweighted at τ_C)
trained on one subset and deployed on another: the plan of runs (:func:`ablation_plan`), the
trainer's cost weights (:func:`trainer_cost_weights`), each policy's point in and out of
distribution (:func:`shift_rows`), the summary over seeds, the violation rates and the findings
(:func:`ablation_summary`, :func:`violation_rates`, :func:`ablation_findings` with
:func:`highest_reward` and :func:`conservative_routing`), the verdict of the matched-spend
control for the variants that reweight the costs (:func:`control_verdicts`), the subsets'
statistics (:func:`subset_statistics`), the figure (:func:`shift_panels`) and the numbers the
page's sentences state (:func:`prose_reads`). The matched-spend control itself, shared with
chapter 15_llmbar_shift, stays in :mod:`racer_lib.paper.shift`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation.intervals import bootstrap_interval
from racer_lib.paper import shift
from racer_lib.paper.claims import add_status
from racer_lib.paper.experiments import BASIS_LEARNED, Fit
from racer_lib.records import schema as rec
from racer_lib.records.sets import judge_set
from racer_lib.records.summary import mode_summary
from racer_lib.routing import steps, train


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
        row = mode_summary(full).iloc[0]
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
    *_, w_c = steps.expected_terms(
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
    :func:`racer_lib.evaluation.metrics.over_seeds`, the mean validation accuracy, cost and final
    multiplier, the validation cost's sd over seeds, and the method's variant and temperature."""
    order = {name: i for i, name in enumerate(dict.fromkeys(runs["method"]))}
    summary = evaluate.over_seeds(runs, ["scenario", "method"])
    groups = runs.groupby(["scenario", "method"])
    valid = groups[["valid_accuracy", "valid_cost", "final_lambda"]].mean()
    valid["valid_cost_sd"] = groups["valid_cost"].std()
    summary = summary.merge(valid.reset_index(), on=["scenario", "method"])
    summary = summary.merge(runs[["method", "variant", "tau"]].drop_duplicates(), on="method")
    return summary.sort_values(
        ["scenario", "method"], key=lambda s: s.map(order) if s.name == "method" else s
    ).reset_index(drop=True)


def summary_view(summary: pd.DataFrame) -> pd.DataFrame:
    """The page's columns of :func:`ablation_summary`: per scenario and method, accuracy and
    cost on the shifted set (mean, sd), the violation rate, the validation cost (mean, sd) and
    the final multiplier."""
    cols = ["scenario", "method", "accuracy_mean", "accuracy_sd", "cost_mean", "cost_sd"]
    return summary[cols + ["violation_rate", "valid_cost", "valid_cost_sd", "final_lambda"]]


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


def _gain(mean: pd.DataFrame, scenario: str, method: str, other: str) -> tuple[float, float]:
    """``method``'s mean accuracy gain over ``other`` in ``scenario`` (points) and the standard
    error of that difference (infinite with one seed)."""
    sd, n = mean["accuracy_sd"], mean["seeds"]
    se = np.sqrt(sum(sd[(scenario, m)] ** 2 / n[(scenario, m)] for m in (method, other)))
    acc = mean["accuracy_mean"]
    return acc[(scenario, method)] - acc[(scenario, other)], (se if np.isfinite(se) else np.inf)


def highest_reward(summary: pd.DataFrame, scenario: str) -> dict[str, Any]:
    """Fig. 3(a), "RACER-R consistently achieves the highest reward": RACER-R's most accurate
    temperature in ``scenario`` against **every** other method run there (ACER and RACER-C at
    each temperature), each mean gain above its standard error."""
    mean = summary.set_index(["scenario", "method"])
    here = summary[summary["scenario"] == scenario]
    mine = here[here["variant"] == "RACER-R"]
    best = mine.loc[mine["accuracy_mean"].idxmax(), "method"]
    gains = {
        m: _gain(mean, scenario, best, m) for m in here["method"] if m not in set(mine["method"])
    }
    return {
        "finding": "cheaper shift: RACER-R has the highest reward of every method",
        "scenario": scenario,
        "observed": f"{best} (its best τ) vs "
        + ", ".join(f"{m}: {g:+.2f} ± {se:.2f} pts" for m, (g, se) in gains.items()),
        "holds": bool(gains) and all(g > se for g, se in gains.values()),
    }


def conservative_routing(runs: pd.DataFrame, taus_c: Sequence[float], seed: int = 0):
    """The conclusion's "overly large uncertainty can induce conservative routing": RACER-C's
    reasoning rate on the shifted set at its smallest ``taus_c`` (the largest uncertainty set,
    the strongest cost robustness) minus at its largest, paired on scenario and seed, with a
    95 % percentile bootstrap of the mean (drawn with ``seed``). Holds when the interval lies
    below zero: stronger cost robustness reasons less."""
    rc = runs[runs["variant"] == "RACER-C"]
    lo_tau, hi_tau = min(taus_c), max(taus_c)
    rate = rc.pivot_table(index=["scenario", "seed"], columns="tau", values="reasoning_rate")
    diff = (rate[lo_tau] - rate[hi_tau]).to_numpy() if lo_tau < hi_tau else np.array([np.nan])
    lo, hi = bootstrap_interval(diff, seed) if np.isfinite(diff).all() else (np.nan, np.nan)
    return {
        "finding": "conservative routing: stronger cost robustness (smaller τ_C) lowers "
        "RACER-C's reasoning rate",
        "scenario": "both",
        "observed": f"reasoning rate at τ_C = {lo_tau:g} minus at τ_C = {hi_tau:g}: "
        f"{np.mean(diff):+.3f} [{lo:+.3f}, {hi:+.3f}] (95 % bootstrap, {len(diff)} pairs)",
        "holds": bool(hi < 0),
    }


def ablation_findings(
    runs: pd.DataFrame,
    summary: pd.DataFrame,
    taus_r: Sequence[float],
    taus_c: Sequence[float],
    provenance: str,
    seed: int = 0,
) -> pd.DataFrame:
    """The paper's reading of Fig. 3 (§5.2) and its conclusion, each checked on the runs
    (``finding``, ``scenario``, ``observed``, ``holds``, ``status``, ``basis``): under the first
    scenario (the cheaper shift) no run exceeds the budget and RACER-R has the highest reward of
    every method (:func:`highest_reward`); under the second (the costlier shift) RACER-C is less
    accurate than ACER and RACER-R, and *consistently* stays within budget: no run of RACER-C,
    at any temperature of ``taus_c``, exceeds it; and :func:`conservative_routing`. The
    simulator is given the subsets' cost ratios (the direction of each shift), not how trained
    routers respond to them: all can fail (:func:`racer_lib.paper.claims.add_status`)."""
    mean = summary.set_index(["scenario", "method"])["accuracy_mean"]
    cheaper, costlier = list(dict.fromkeys(runs["scenario"]))[:2]
    racer_c = [f"RACER-C τ={t:g}" for t in taus_c]
    floor_of = ["ACER"] + [f"RACER-R τ={t:g}" for t in taus_r]
    best_c = max(mean[(costlier, m)] for m in racer_c)
    floor = min(mean[(costlier, m)] for m in floor_of)
    in_a = runs[runs["scenario"] == cheaper]
    in_b = runs[(runs["scenario"] == costlier) & (runs["variant"] == "RACER-C")]
    learned = {"calibrated": False, "basis": BASIS_LEARNED}
    rows = [
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
        highest_reward(summary, cheaper) | learned,
        {
            "finding": "costlier shift: RACER-C is less accurate than ACER and RACER-R",
            "scenario": costlier,
            "observed": f"best RACER-C {best_c:.2f} %, lowest of ACER and RACER-R {floor:.2f} %",
            "holds": bool(best_c < floor),
        }
        | learned,
        {
            "finding": "costlier shift: RACER-C consistently stays within budget",
            "scenario": costlier,
            "observed": f"{int(in_b['violated'].sum())} of {len(in_b)} RACER-C runs over budget "
            f"(every τ_C: {', '.join(f'{t:g}' for t in taus_c)})",
            "holds": bool(len(in_b)) and not in_b["violated"].any(),
        }
        | learned,
        conservative_routing(runs, taus_c, seed) | learned,
    ]
    return add_status(pd.DataFrame(rows), provenance)


def control_verdicts(
    runs: pd.DataFrame, controls: pd.DataFrame, provenance: str, seed: int = 0
) -> pd.DataFrame:
    """The rows that decide whether cost robustness is more than thrift: under the costlier
    shift (the runs' second scenario, the one where the paper claims cost robustness), each
    variant that reweights the costs (:data:`racer_lib.paper.shift.COST_ROBUST`; here RACER-C,
    its temperatures pooled) against its matched-spend controls
    (:func:`racer_lib.paper.shift.variant_comparison`, the rule of that module), as findings
    ``"costlier shift: RACER-C beats the matched-spend control"``, with their ``scenario``."""
    costlier = list(dict.fromkeys(runs["scenario"]))[1]
    here = runs[runs["scenario"] == costlier]
    compare = shift.variant_comparison(here, controls, ["scenario"], cost_col="cost", seed=seed)
    text = "costlier shift: {name} beats the matched-spend control"
    found = shift.control_findings(compare, provenance, ("variant",), text=text)
    return found.assign(scenario=costlier)


def shift_panels(runs, budget: float) -> plt.Figure:
    """Fig. 3, one panel per scenario of :func:`shift_rows`: every run's
    accuracy against cost on the shifted set (small points) and each method's mean ± one sd
    over seeds (large markers with bars), ACER in black, RACER-R in blues and RACER-C in
    oranges (darker for a smaller temperature, the stronger robustness), and the budget."""
    methods = runs.drop_duplicates("method")[["method", "variant", "tau"]]
    palette = {"ACER": "black"}
    for cmap, variant in ((plt.cm.Blues, "RACER-R"), (plt.cm.Oranges, "RACER-C")):
        mine = methods[methods["variant"] == variant].sort_values("tau", ascending=False)
        shades = cmap(np.linspace(0.45, 0.9, max(len(mine), 1)))
        palette.update(dict(zip(mine["method"], shades, strict=True)))
    markers = {"ACER": "o", "RACER-R": "s", "RACER-C": "D"}
    scenarios = list(dict.fromkeys(runs["scenario"]))
    fig, axes = plt.subplots(1, len(scenarios), figsize=(4.7 * len(scenarios), 4.2), squeeze=False)
    for ax, scenario in zip(axes[0], scenarios, strict=True):
        here = runs[runs["scenario"] == scenario]
        subset, shifted = here["train_subset"].iloc[0], here["test_subset"].iloc[0]
        for name, variant in zip(methods["method"], methods["variant"], strict=True):
            sub = here[here["method"] == name]
            ax.scatter(
                sub["cost"],
                sub["accuracy"],
                s=10,
                alpha=0.35,
                color=palette[name],
                marker=markers[variant],
                lw=0,
            )
            ax.errorbar(
                sub["cost"].mean(),
                sub["accuracy"].mean(),
                xerr=sub["cost"].std(),
                yerr=sub["accuracy"].std(),
                color=palette[name],
                marker=markers[variant],
                ms=7,
                capsize=3,
                lw=1.2,
                label=name,
                mec="white",
                mew=0.5,
            )
        ax.axvline(budget, color="#b22222", ls="--", lw=1.2, label=f"budget C = {budget:g}")
        ax.set(
            title=f"{scenario}: {subset} → {shifted}",
            xlabel=f"cost on {shifted} (realized ratio)",
            ylabel=f"accuracy on {shifted} (%)",
        )
    fig.subplots_adjust(wspace=0.25)  # the legend goes below the panels, to fit the page
    axes[0][-1].legend(
        loc="upper center",
        bbox_to_anchor=(0.5 - 0.5 * (len(scenarios) - 1) * 1.25, -0.16),
        ncol=4,
        frameon=False,
    )
    return fig


def prose_reads(scenarios: Sequence[str]) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """Every number the page's sentences state, as ``(name, csv, column, agg, where)`` for
    :meth:`racer_lib.book.chapter.Prose.value`: per scenario (``a`` and ``b``, the cheaper and
    the costlier shift of ``scenarios``) ACER's deployed and validation cost, their sds over
    seeds, its final multiplier and violations; under (b), RACER-C's (pooled over τ) violations,
    validation costs, cost and best accuracy, and the matched-spend comparison's range over
    the robust methods (``control_comparison.csv``); and the budget."""
    S, V, C, RC = (
        "ablation_summary.csv",
        "violation_rates.csv",
        "control_comparison.csv",
        "RACER-C (all τ)",
    )
    (A, B), reads = scenarios[:2], [("budget", "ablation_runs.csv", "budget", "max", {})]
    for s, scenario in (("a", A), ("b", B)):
        acer = {"scenario": scenario, "method": "ACER"}
        for column in ("cost_mean", "valid_cost", "final_lambda", "cost_sd", "valid_cost_sd"):
            reads.append((f"{s}_acer_{column}", S, column, "one", acer))
        reads.append((f"{s}_acer_viol", V, "violation_rate", "one", acer))
    for name, method in (("c", RC), ("acer", "ACER")):
        for column, short in (("violations", "k"), ("runs", "n")):
            reads.append((f"b_{name}_{short}", V, column, "one", {"scenario": B, "method": method}))
    b_c = {"scenario": B, "variant": "RACER-C"}
    reads += [(f"b_c_valid_{agg}", S, "valid_cost", agg, b_c) for agg in ("min", "max")]
    reads += [("b_c_cost", V, "cost_mean", "one", {"scenario": B, "method": RC})]
    reads += [("b_c_viol", V, "violation_rate", "one", {"scenario": B, "method": RC})]
    reads += [("b_c_acc", S, "accuracy_mean", "max", b_c)]
    reads += [("b_acer_acc", S, "accuracy_mean", "one", {"scenario": B, "method": "ACER"})]
    for column in ("robust_violations", "runs", "spend_share", "control_violations"):
        reads += [
            (f"ctl_{column}_{agg}", C, column, agg, {"scenario": B}) for agg in ("min", "max")
        ]
    return reads
