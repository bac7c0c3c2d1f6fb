"""Chapter 12_llama_family, the paper's Table 7: RACER on the Llama family against Random at
matched cost.

Random whose expected realized cost equals the router's
(:func:`racer_lib.evaluation.metrics.random_at_cost`), one row per run
(:func:`matched_random_rows`; a replicate seed re-draws the records and trains every budget
on them), the table per budget between the two modes (:func:`matched_random_table`), the
paper's reading of it decided over the replicate seeds (:func:`surpass_findings`,
:func:`random_findings`) and its page view and figure (:func:`matched_random_view`,
:func:`matched_random_figure`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.families import MOST, PER_SEED, Family, Test, from_rows
from racer_lib.claims.rules import Claim, Difference, Finding
from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import effects, experiments, files, numbers, plots, registry
from racer_lib.paper.claims import VERDICT_COLUMNS, add_status
from racer_lib.paper.engine import rule_findings
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.paper.rules import level, paper_list
from racer_lib.records.sets import judge_set
from racer_lib.routing import train


def train_replicates(
    judge: str,
    seeds: Sequence[int],
    budgets: Sequence[float],
    eval_split: str,
    settings: train.TrainSettings,
    source: Mapping[str, Any],
    **common: Any,
) -> tuple[pd.DataFrame, pd.DataFrame, experiments.Fit, pd.DataFrame]:
    """Every budget trained on each replicate seed of ``seeds``: the training mixture of
    ``judge`` drawn anew with the seed (:func:`racer_lib.records.sets.judge_set` with
    ``source``: ``records_dir``, ``dim``, ``scale``, ``simulator``), the budgets trained in one
    pass with policies of that seed (``common``: more
    :class:`~racer_lib.routing.train.PolicyConfig` fields), each evaluated on the seed's
    ``eval_split`` with its twins (:func:`matched_random_rows`). Returns the runs, and the last
    replicate's records, fit and evaluation set."""
    rows = []
    for s in seeds:
        records, embeddings = judge_set(judge, "training_mix", seed=s, **source)
        _check_split(records, eval_split)
        configs = experiments.grid(budgets, [s], **common)
        fit = experiments.fit(records, embeddings, configs, settings)
        sets = experiments.evaluation_sets(judge, records, embeddings, (eval_split,))
        evalset, eval_emb = sets[eval_split]
        rows += matched_random_rows(fit.result, evalset, eval_emb)
    return pd.DataFrame(rows), records, fit, evalset


def matched_random_rows(
    result: train.TrainResult, records: pd.DataFrame, embeddings: np.ndarray
) -> list[dict[str, Any]]:
    """Every router of ``result`` on ``records`` with its two Random twins and the two fixed
    modes on the same records (one record draw: a replicate seed): one row per policy with its
    budget, seed and ``best_epoch``, RACER's accuracy, cost and reasoning rate (``racer_*``),
    Random at matched cost (:func:`racer_lib.evaluation.metrics.random_at_cost`:
    ``random_at_cost_*``), Random at the
    router's reasoning rate (``random_at_rate_*``), and All-Instruct's and All-Reasoning's
    accuracy and cost (``all_instruct_*``, ``all_reasoning_*``)."""
    rows = []
    ends = evaluate.endpoints(records)
    fixed = {
        f"{prefix}_{q}": ends[mode][q]
        for prefix, mode in (("all_instruct", "All-Instruct"), ("all_reasoning", "All-Reasoning"))
        for q in ("accuracy", "cost")
    }
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
                **fixed,
            }
        )
    return rows


def matched_random_table(
    runs: pd.DataFrame,
    paper: Mapping[float, Sequence[float]],
    paper_ends: Mapping[str, tuple[float, float]],
    paper_columns: Sequence[str] = (
        "paper_accuracy",
        "paper_cost",
        "paper_random_accuracy",
        "paper_random_cost",
    ),
) -> pd.DataFrame:
    """:func:`matched_random_rows` per budget, between All-Instruct and All-Reasoning (their
    mean and sd over the replicate seeds, each on its own record draw): RACER's mean and sd over
    seeds of accuracy and cost, its reasoning rate, violation rate, both Random twins' means,
    RACER minus Random at matched cost, and the paper's ``paper_columns`` per budget (``paper``)
    and for the fixed modes (``paper_ends``; NaN where it has none)."""
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
    per_seed = runs.groupby("seed", sort=True)
    fixed = pd.DataFrame(
        [
            {
                "method": m,
                "seeds": per_seed.ngroups,
                **{
                    f"{q}_{name}": getattr(per_seed[f"{prefix}_{q}"].mean(), agg)()
                    for q in ("accuracy", "cost")
                    for name, agg in (("mean", "mean"), ("sd", "std"))
                },
                "reasoning_rate": rate,
                "paper_accuracy": paper_ends.get(m, (np.nan, np.nan))[0],
                "paper_cost": paper_ends.get(m, (np.nan, np.nan))[1],
            }
            for m, prefix, rate in (
                ("All-Instruct", "all_instruct", 0.0),
                ("All-Reasoning", "all_reasoning", 1.0),
            )
        ]
    )
    return pd.concat([fixed.iloc[[0]], racer, fixed.iloc[[1]]], ignore_index=True)[
        ["method", *racer.columns.drop("method")]
    ]


#: The finding's text and its key (column ``key``; the chapter's claim reads it), and the CSVs
#: the chapter's claims read: the runs (shared with chapter 16, :mod:`racer_lib.paper.files`)
#: and the findings.
SURPASSES = "RACER often surpasses All-Reasoning's accuracy at lower cost"
KEY_SURPASSES = "surpasses_all_reasoning"
RUNS_CSV, FINDINGS_CSV = files.LLAMA_RUNS_CSV, files.FINDINGS_CSV


def surpass_findings(runs: pd.DataFrame, provenance: str) -> pd.DataFrame:
    """The paper's "RACER often surpasses All-Reasoning's accuracy at lower cost", decided over
    the replicate seeds of :func:`matched_random_rows`: per budget (a member), per seed RACER's
    accuracy minus All-Reasoning's on the same record draw, a one-sided t-test that it is
    positive (:func:`racer_lib.evaluation.verdicts.directional`); "often" is a majority of the
    budgets after Holm's correction (:func:`racer_lib.evaluation.verdicts.most`). The cost side
    is reported, not tested: every budget lies below All-Reasoning's cost. One row: ``finding``,
    ``observed`` (each budget's mean gap and mean costs), ``interval``, the verdict's columns,
    ``status`` and ``basis``."""
    columns = ["racer_accuracy", "all_reasoning_accuracy", "racer_cost", "all_reasoning_cost"]
    # each budget's power is stated at the paper's own gap there (Table 7), else at the
    # accuracy effect the paper reads (Table 3)
    gain, ar = effects.ROUTER_ACCURACY, numbers.LLAMA_FAMILY_ENDPOINTS["All-Reasoning"][0]
    members, parts = (), []
    for budget, sub in runs.groupby("budget", sort=True):
        per = sub.groupby("seed")[columns].mean()
        gap = per["racer_accuracy"] - per["all_reasoning_accuracy"]
        paper_gap = numbers.LLAMA_FAMILY.get(float(budget), (gain.expected() + ar,))[0] - ar
        test = Test(1, 0.0, gain.sesoi, paper_gap)
        members += from_rows("", {f"C = {budget:g}": gap}, test)
        parts.append(
            f"C = {budget:g}: {gap.mean():+.2f} pts at cost {per['racer_cost'].mean():.2f} "
            f"(All-Reasoning {per['all_reasoning_cost'].mean():.2f})"
        )
    family = Family(members, combine={"": MOST})
    verdict = family.decide()
    row = {
        "finding": SURPASSES,
        "key": KEY_SURPASSES,
        "observed": "; ".join(parts),
        "interval": verdict.interval_text(" pts"),
        **{k: v for k, v in verdict.columns().items() if k in VERDICT_COLUMNS},
        "basis": BASIS_LEARNED,
        PER_SEED: family.to_json(),
    }
    return add_status([row], provenance, registry.LLAMA, FINDINGS_CSV)


#: The file :func:`random_findings` is written as (not a findings file: the report decides its
#: claim from :data:`RUNS_CSV`).
RANDOM_CSV = "random_comparison.csv"


def random_findings(folder: str | Path, provenance: str) -> pd.DataFrame:
    """The paper's "RACER beats Random at matched cost" on the :data:`RUNS_CSV` in ``folder``,
    decided by the reproduction report's own rule (this chapter's difference claims of
    :data:`CLAIMS`: per budget and replicate seed RACER minus
    Random at matched cost, a one-sided t-test, Holm over the budgets), so that the page and
    the report cannot disagree; empty when the run cannot test it. Columns ``finding`` (the
    claim), ``observed``, the verdict's, ``status`` and ``basis``."""
    rows = rule_findings(CLAIMS, folder, ("difference",), BASIS_LEARNED)
    return add_status(rows, provenance, registry.LLAMA, RANDOM_CSV)


def matched_random_view(table, digits: int = 1, cost_digits: int = 2):
    """A :func:`matched_random_table` to read (the paper's Table 7):
    one row
    per fixed mode and per RACER budget; under each group of two header rows, this build's
    ``mean ± sd`` cells next to the paper's values, then both Random twins (blank where a row
    has none). Accuracies get ``digits`` decimals, cost ratios ``cost_digits``."""
    import pandas as pd

    def cells(mean, sd, places):
        return [plots.mean_sd(m, s, places) for m, s in zip(table[mean], table[sd], strict=True)]

    def plain(column, places):  # blank where the row has none (a fixed mode's Random twin)
        return [f"{v:.{places}f}" if np.isfinite(v) else "" for v in table[column]]

    paper_places = 2  # the paper's Table 7 prints two decimals
    return pd.DataFrame(
        {
            ("RACER or mode", "acc."): cells("accuracy_mean", "accuracy_sd", digits),
            ("RACER or mode", "paper"): plain("paper_accuracy", paper_places),
            ("RACER or mode", "cost"): cells("cost_mean", "cost_sd", cost_digits),
            ("RACER or mode", "paper cost"): plain("paper_cost", paper_places),
            ("Random, matched cost", "acc."): plain("random_at_cost_accuracy_mean", digits),
            ("Random, matched cost", "paper"): plain("paper_random_accuracy", paper_places),
            ("Random, matched cost", "paper cost"): plain("paper_random_cost", paper_places),
            ("Random, RACER's rate", "acc."): plain("random_at_rate_accuracy_mean", digits),
            ("Random, RACER's rate", "cost"): plain("random_at_rate_cost_mean", cost_digits),
        },
        index=[
            m if m != "RACER" else f"RACER, C = {b:g}"
            for m, b in zip(table["method"], table["budget"], strict=True)
        ],
    )


#: Short labels of :func:`matched_random_rows`' columns for a page table
#: (Random at matched cost spends RACER's cost by construction, so its cost is left out).
MATCHED_RANDOM_RUNS = {
    "best_epoch": "epoch",
    "racer_accuracy": ("RACER", "acc."),
    "racer_cost": ("RACER", "cost"),
    "racer_reasoning_rate": ("RACER", "rate"),
    "random_at_cost_accuracy": ("Random, matched cost", "acc."),
    "random_at_cost_rate": ("Random, matched cost", "rate"),
    "random_at_rate_accuracy": ("Random, RACER's rate", "acc."),
    "random_at_rate_cost": ("Random, RACER's rate", "cost"),
}


def matched_random_figure(table, xlabel: str, title: str) -> plt.Figure:
    """RACER against the fixed modes and Random (a
    :func:`matched_random_table`): the two modes and their chord,
    RACER's
    means over seeds with their 95 % t-intervals over the seeds in both directions (the
    interval the claims are decided on, :func:`racer_lib.paper.plots.seed_interval`), labelled
    by budget, Random at matched cost
    right below each of them and Random at RACER's rate further along the chord."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ends = table[table["method"] != "RACER"].set_index("method")
    plots.endpoints(ax, ends["cost_mean"].to_dict(), ends["accuracy_mean"].to_dict())
    racer = table[table["method"] == "RACER"].reset_index(drop=True)
    ax.errorbar(
        racer["cost_mean"],
        racer["accuracy_mean"],
        xerr=plots.seed_interval(racer, "cost"),
        yerr=plots.seed_interval(racer, "accuracy"),
        color=plots.METHOD_COLORS["RACER"],
        marker="o",
        ms=5,
        lw=1.2,
        capsize=3,
        zorder=4,
        label="RACER",
    )
    ax.scatter(
        racer["random_at_cost_cost_mean"],
        racer["random_at_cost_accuracy_mean"],
        marker="D",
        s=30,
        color=plots.METHOD_COLORS["Random"],
        zorder=3,
        label="Random at matched cost",
    )
    ax.scatter(
        racer["random_at_rate_cost_mean"],
        racer["random_at_rate_accuracy_mean"],
        marker="o",
        s=30,
        facecolors="none",
        edgecolors=plots.METHOD_COLORS["Random"],
        zorder=3,
        label="Random at RACER's rate",
    )
    for k, row in racer.iterrows():  # labels alternate above and below
        ax.annotate(
            f"C={row['budget']:g}",
            (row["cost_mean"], row["accuracy_mean"]),
            textcoords="offset points",
            xytext=(-6, 8) if k % 2 == 0 else (6, -14),
            fontsize=9,
            ha="right" if k % 2 == 0 else "left",
        )
    ax.set(xlabel=xlabel, ylabel="accuracy (%)", title=title)
    ax.legend(fontsize=9, loc="lower right")
    return fig


def paper_pairs() -> pd.DataFrame:
    """The paper's two fixed modes of the Llama pair (its Table 7) beside Qwen3-4B's (its
    self-routing table), for a reader to compare the pairs: accuracy (%) of each mode and the
    cost ratio of All-Reasoning."""
    qwen = dict(zip(numbers.SELF_ROUTING_COLUMNS, numbers.SELF_ROUTING["qwen3-4b"], strict=True))
    llama = numbers.LLAMA_FAMILY_ENDPOINTS
    return pd.DataFrame(
        {
            "All-Instruct accuracy": [llama["All-Instruct"][0], qwen["paper_acc_all_instruct"]],
            "All-Reasoning accuracy": [llama["All-Reasoning"][0], qwen["paper_acc_all_reasoning"]],
            "cost ratio": [llama["All-Reasoning"][1], qwen["paper_cost_ratio"]],
        },
        index=pd.Index(["Llama pair", "Qwen3-4B"], name="the paper"),
    )


def _check_split(records: pd.DataFrame, eval_split: str) -> None:
    """Stop the chapter when ``eval_split`` is not a split of ``records``."""
    if eval_split not in set(records["split"]):
        raise ValueError(
            f"eval_split {eval_split!r} is not a split of the records; "
            f"splits are {', '.join(sorted(set(records['split'])))}"
        )


_TABLE7, _ENDS = numbers.LLAMA_FAMILY, numbers.LLAMA_FAMILY_ENDPOINTS
#: The paper's claims this chapter tests (the reproduction report decides them; the page the
#: comparison with Random, :func:`random_findings`).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Table 7",
        "Llama pair: RACER is more accurate than Random at matched cost at every budget",
        registry.LLAMA,
        Difference(
            RUNS_CSV,
            "racer_accuracy",
            second_column="random_at_cost_accuracy",
            members=("budget",),
            effect=effects.SELECTION_GAIN,
        ),  # fmt: skip
        sensitivity="llama_vs_random",
        null="embedding",
        planted=True,
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER often surpasses All-Reasoning's accuracy at lower cost (at most "
        "budgets)",
        registry.LLAMA,
        Finding(KEY_SURPASSES),
    ),
    *(
        Claim(
            "Table 7",
            f"Llama pair: {mode}'s {quantity} "
            + format(_ENDS[mode][k], "g")
            + (" %" if k == 0 else "")
            + " (on each seed's record draw)",
            registry.LLAMA,
            level(RUNS_CSV, f"{prefix}_{quantity}", (({}, _ENDS[mode][k]),), accuracy=k == 0),
        )
        for mode, prefix, k, quantity in (
            ("All-Instruct", "all_instruct", 0, "accuracy"),
            ("All-Reasoning", "all_reasoning", 0, "accuracy"),
            ("All-Reasoning", "all_reasoning", 1, "cost"),
        )
    ),
    *(
        Claim(
            "Table 7",
            f"Llama pair: {name} "
            + paper_list(v[k] for v in _TABLE7.values())
            + (" %" if "accuracy" in name else "")
            + " at C = "
            + paper_list(_TABLE7)
            + ("" if k < 2 else " (here: Random at RACER's reasoning rate)"),
            registry.LLAMA,
            level(
                RUNS_CSV,
                column,
                tuple(({"budget": c}, v[k]) for c, v in _TABLE7.items()),
                accuracy="accuracy" in name,
            ),
        )
        for k, name, column in (
            (0, "RACER's accuracy", "racer_accuracy"),
            (1, "RACER's cost", "racer_cost"),
            (2, "Random's accuracy", "random_at_rate_accuracy"),
            (3, "Random's cost", "random_at_rate_cost"),
        )
    ),
)
