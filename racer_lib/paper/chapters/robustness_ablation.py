"""Chapter 08_robustness_ablation, the paper's robustness ablation (§5.2): Table 1 and Fig. 3.

ACER, RACER-R and RACER-C (no reweighting, rewards reweighted at τ_R, costs reweighted at τ_C)
trained on one subset and deployed on another: the plan of runs (:func:`ablation_plan`), the
trainer's cost weights (:func:`trainer_cost_weights`), each policy's point in and out of
distribution (:func:`shift_rows`), the summary over seeds, the violation rates and the findings
(:func:`ablation_summary`, :func:`violation_rates`, :func:`ablation_findings`), the subsets'
statistics (:func:`subset_statistics`) and the figure (:func:`shift_panels`). The matched-spend
control, shared with chapter 15_llmbar_shift, stays in :mod:`racer_lib.paper.shift`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper.claims import add_status
from racer_lib.paper.experiments import BASIS_LEARNED, Fit
from racer_lib.records import schema as rec
from racer_lib.records.sets import judge_set
from racer_lib.records.summary import mode_summary
from racer_lib.routing import train


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
    :func:`racer_lib.evaluation.metrics.over_seeds`, the mean validation accuracy, cost and final
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
    routers respond to them: all four can fail (:func:`racer_lib.paper.claims.add_status`)."""
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
