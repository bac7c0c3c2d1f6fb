"""Chapter 10_advanced_baselines, the paper's Table 2: RACER against three published LLM
routers (RouterBench-KNN, RouteLLM-MF, M-IRT) at budgets matched on validation.

RouteLLM's AUC, APGR and CPT per method and set (:func:`curve_metrics`,
:func:`metric_summary`), the check that each baseline met its budget (:func:`budget_matching`),
the table on the shifted benchmarks next to the paper's (:func:`shifted_table`,
:func:`set_mean`), and its reading "RACER is the most accurate method", decided over the
replicate seeds by the book's protocol (:func:`most_accurate`). Each replicate seed re-draws the
records, the split, the routers' initialisation and their batch order; RACER's routers are
chapter 07's, loaded from the router store when the records and settings are the same
(:func:`_fit_racer` counts them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.families import PER_SEED, Family, Test, from_rows
from racer_lib.claims.rules import RATIO_TOLERANCE, Claim, Difference, Finding
from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper import effects, experiments, files, plots, registry
from racer_lib.paper import numbers as paper
from racer_lib.paper.claims import add_status
from racer_lib.paper.experiments import BASIS_LEARNED, Sets
from racer_lib.paper.rules import MarginOverBest, level, paper_list
from racer_lib.records import schema as rec
from racer_lib.records import simulate
from racer_lib.records.sets import judge_set
from racer_lib.routing import baselines, train
from racer_lib.routing.store import PolicyStore, inputs_hash

#: The CSVs the chapter writes that its claims read: the runs and the findings, with the key of
#: its finding (column ``key``).
RUNS_CSV, FINDINGS_CSV = "baselines_runs.csv", files.FINDINGS_CSV
KEY_MOST_ACCURATE = "most_accurate"
#: The columns of the findings (and members) table the page shows.
SHOWN = ["finding", "observed", "effect", "lo", "hi", "p", "n", "test", "note", "status"]
MEMBER_SHOWN = ["member", "effect", "lo", "hi", "p", "decision"]


def curve_metrics(
    runs: pd.DataFrame, sets: Sets, by: Sequence[str] = ("method", "seed"), **fixed: Any
) -> list[dict[str, Any]]:
    """RouteLLM's AUC, APGR and CPT (:func:`racer_lib.evaluation.metrics.routing_metrics`) of each
    group ``by`` of ``runs`` on each set (``runs`` has a ``set`` column)."""
    rows = []
    for name, (recs, *_) in sets.items():
        for key, pts in runs[runs["set"] == name].groupby(list(by)):
            rows.append(
                {**fixed, "set": name, **dict(zip(by, key)), **evaluate.routing_metrics(pts, recs)}
            )
    return rows


def budget_matching(runs: pd.DataFrame, set_name: str = "test") -> pd.DataFrame:
    """The thresholds the score baselines were given on validation (one row per judge,
    method, budget and seed; read from one set's rows of :func:`baseline_rows`): the
    validation reasoning rate and cost, and whether that cost is within the budget."""
    matching = runs[(runs["set"] == set_name) & (runs["method"] != "RACER")][
        ["provenance", "judge", "method", "budget", "seed", "valid_rate", "valid_cost"]
    ].copy()
    matching["within_budget"] = matching["valid_cost"] <= matching["budget"]
    return matching.reset_index(drop=True)


def shifted_table(
    runs: pd.DataFrame,
    budget: float,
    sets: Sequence[str],
    paper: Mapping[tuple[str, str], tuple[float, float]],
    judges: Sequence[str],
    methods: Sequence[str],
) -> pd.DataFrame:
    """The advanced-baselines table: each (judge, method) at ``budget``, accuracy and cost
    averaged over ``sets`` (each set's mean over seeds, then the mean of the sets), their sd
    over seeds of the per-seed set means, and the paper's value for ``(method, judge)``
    (``paper``; NaN where it has none)."""
    at = runs[(runs["budget"] == budget) & runs["set"].isin(sets)]
    mean = (
        at.groupby(["judge", "method", "set"])[["accuracy", "cost"]]
        .mean()
        .groupby(["judge", "method"])
        .mean()
    )
    per_seed = at.groupby(["judge", "method", "seed"])[["accuracy", "cost"]].mean()
    spread = per_seed.groupby(["judge", "method"]).std()
    table = pd.DataFrame(
        {
            "accuracy": mean["accuracy"],
            "accuracy_sd": spread["accuracy"],
            "cost": mean["cost"],
            "cost_sd": spread["cost"],
            "seeds": per_seed.groupby(["judge", "method"]).size(),
        }
    ).reset_index()
    values = [paper.get(key, (np.nan, np.nan)) for key in zip(table["method"], table["judge"])]
    table["paper_accuracy"] = [v[0] for v in values]
    table["paper_cost"] = [v[1] for v in values]
    table["method"] = pd.Categorical(table["method"], methods, ordered=True)
    table["judge"] = pd.Categorical(table["judge"], judges, ordered=True)
    return table.sort_values(["judge", "method"]).reset_index(drop=True)


def metric_summary(
    metrics: pd.DataFrame,
    shifted: Sequence[str],
    judges: Sequence[str],
    methods: Sequence[str],
    in_distribution: str = "test",
) -> pd.DataFrame:
    """AUC, APGR and CPT (:func:`curve_metrics` rows) per judge and method: the mean over the
    ``shifted`` sets (``OOD mean``) next to the ``in_distribution`` set."""
    by_set = metrics.groupby(["judge", "method", "set"])[["auc", "apgr", "cpt"]].mean()
    ood = by_set[by_set.index.get_level_values("set").isin(shifted)]
    summary = pd.concat(
        {
            "OOD mean": ood.groupby(["judge", "method"]).mean(),
            in_distribution: by_set.xs(in_distribution, level="set"),
        },
        axis=1,
    )
    return summary.reindex(pd.MultiIndex.from_product([judges, methods], names=["judge", "method"]))


def in_distribution(
    runs: pd.DataFrame, budget: float, methods: Sequence[str], judges: Sequence[str]
) -> pd.DataFrame:
    """The test split at ``budget``: per method (rows) and judge, accuracy and cost, mean over
    the seeds."""
    at = runs[(runs["budget"] == budget) & (runs["set"] == "test")]
    table = at.pivot_table(index="method", columns="judge", values=["accuracy", "cost"])
    return table.swaplevel(axis=1).reindex(methods)[judges]


def baselines_figure(
    runs: pd.DataFrame,
    ends: pd.DataFrame,
    benchmarks: Sequence[str],
    judges: Sequence[str],
    methods: Sequence[str],
    budget: float,
) -> plt.Figure:
    """One panel per judge: each method's OOD-mean accuracy against cost across the budgets
    (each seed's :func:`set_mean` of ``runs``, then their mean over the seeds with its 95 %
    t-interval as bars: the interval the claims are decided on), the two fixed modes (of
    ``ends``) and the table's ``budget`` dotted."""
    fig, axes = plt.subplots(1, len(judges), figsize=(3.1 * len(judges), 3.4), squeeze=False)
    fig.subplots_adjust(wspace=0.28)
    per_seed = set_mean(runs, benchmarks, ["judge", "method", "budget", "seed"])
    ood = per_seed.groupby(["judge", "method", "budget"], sort=True).agg(
        accuracy_mean=("accuracy", "mean"),
        accuracy_sd=("accuracy", "std"),
        cost_mean=("cost", "mean"),
        cost_sd=("cost", "std"),
        seeds=("accuracy", "size"),
    )
    ood = ood.reset_index()
    ood_ends = set_mean(ends, benchmarks, ["judge", "method"]).set_index("method")
    for ax, judge in zip(axes[0], judges):
        e = ood_ends[ood_ends["judge"] == judge]
        plots.endpoints(ax, e["cost"].to_dict(), e["accuracy"].to_dict())
        plots.method_curves(ax, ood[ood["judge"] == judge], methods)
        ax.axvline(budget, color="black", ls=":", lw=1)
        ax.set(title=judge, xlabel="realized cost ratio (OOD mean)")
    axes[0][0].set_ylabel("accuracy (%), OOD mean")
    fig.legend(
        *axes[0][0].get_legend_handles_labels(),
        loc="upper center",
        frameon=False,
        bbox_to_anchor=(0.5, -0.04),
        ncol=3,
    )  # below: the stamp takes the space above
    return fig


def _most_accurate_text(budget: float) -> str:
    """The finding's text."""
    return (
        f"RACER is the most accurate method at C = {budget:g} "
        "(every judge and baseline; mean over the OOD benchmarks)"
    )


def prose_reads(budget: float) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """The numbers and words the closing sentence states, as ``(name, csv, column, agg,
    where)`` for :meth:`racer_lib.book.chapter.Prose.value` (``agg`` ``text``: a word, for
    :meth:`~racer_lib.book.chapter.Prose.text`): the seeds of the finding at ``budget``, its
    decision, note and status, then the range of RACER's lead over the members."""
    finding = {"finding": _most_accurate_text(budget)}
    reads = [("seeds", FINDINGS_CSV, "n", "one", finding)]
    reads += [(c, FINDINGS_CSV, c, "text", finding) for c in ("decision", "note", "status")]
    return reads + [
        (f"lead_{end}", "most_accurate_members.csv", "effect", agg, {})
        for end, agg in (("lo", "min"), ("hi", "max"))
    ]


def most_accurate(
    runs: pd.DataFrame, budget: float, benchmarks: Sequence[str], provenance: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 2's reading "RACER is the most accurate method at C" as ONE finding: each (judge,
    baseline) a member whose per-seed difference, RACER's accuracy minus the baseline's, each
    averaged over ``benchmarks`` at ``budget`` on the same records, is tested above zero
    (``verdicts.directional``), Holm over the members (``verdicts.every``). Returns the findings
    table with its status (:func:`racer_lib.paper.claims.add_status`; no simulator parameter
    fixes a router's result) and the members' own verdicts, before Holm."""
    at = runs[np.isclose(runs["budget"], budget) & runs["set"].isin(benchmarks)]
    per_seed = at.groupby(["judge", "method", "seed"], sort=False)["accuracy"].mean()
    gain, found = effects.ROUTER_ACCURACY, ()
    for judge in at["judge"].unique():
        mine = per_seed.loc[judge]
        racer = mine.loc["RACER"]
        # power at the paper's margin over its strongest baseline for this judge (§5.4; each
        # other baseline lies further behind), else the accuracy effect it reads (Table 3)
        lead = paper.ADVANCED_BASELINES_MARGINS.get(str(judge), gain.expected())
        test = Test(1, 0.0, gain.sesoi, lead)
        for method in [m for m in mine.index.unique("method") if m != "RACER"]:
            gap = {f"{judge}, {method}": (racer - mine.loc[method]).dropna()}
            found += from_rows("", gap, test)
    family = Family(found)
    found = family.verdicts()
    members, verdict = found[""], family.join(found)
    gaps = [v.effect for v in members.values()]
    row = {
        "finding": _most_accurate_text(budget),
        "key": KEY_MOST_ACCURATE,
        "family": "judge x baseline",
        "budget": budget,
        "observed": f"RACER minus each baseline, OOD mean: {min(gaps):+.2f} to "
        f"{max(gaps):+.2f} pts over {len(members)} judge x baseline members",
        **verdict.columns(),
        "basis": BASIS_LEARNED,
        PER_SEED: family.to_json(),
    }
    table = pd.DataFrame([{"member": k, **v.columns()} for k, v in members.items()])
    return add_status([row], provenance, registry.BASELINES, FINDINGS_CSV), table


def _fit_racer(
    records: pd.DataFrame,
    embeddings: np.ndarray,
    configs: Sequence[train.PolicyConfig],
    settings: train.TrainSettings,
    store: str | None,
) -> tuple[experiments.Fit, int]:
    """RACER's routers (:func:`racer_lib.paper.experiments.fit`) with how many of them the
    router store (:mod:`racer_lib.routing.store`, the folder ``store``) already held: those
    chapter 07 trained on the same records with the same settings (0 without a store)."""
    store = PolicyStore(store) if store else None
    loaded = 0
    if store is not None:
        unit, parts = train.splits(records, embeddings, ("train", "valid"))
        inputs = inputs_hash(parts["train"], parts["valid"], unit)
        loaded = sum(store.path(store.key(c, settings, inputs)).is_file() for c in configs)
    return experiments.fit(records, embeddings, list(configs), settings, store=store), loaded


def set_mean(
    rows: pd.DataFrame | Sequence[Mapping[str, Any]], sets: Sequence[str], by: Sequence[str]
) -> pd.DataFrame:
    """Mean accuracy and cost over ``sets`` of each group ``by``: first the mean within each set
    (over seeds), then the mean of the sets, so every set weighs the same (e.g. the OOD mean
    of the advanced-baselines figure)."""
    rows = pd.DataFrame(rows)
    within = rows[rows["set"].isin(sets)].groupby([*by, "set"])[["accuracy", "cost"]].mean()
    return within.groupby(list(by)).mean().reset_index()


def run_replicates(
    judges: Sequence[str],
    seeds: Sequence[int],
    budgets: Sequence[float],
    settings: train.TrainSettings,
    source: Mapping[str, Any],
    benchmarks: Sequence[str],
    options: Mapping[str, Mapping[str, Any]],
) -> BaselineTables:
    """Every judge's replicates: for each seed, the records (:func:`judge_set` with ``source``:
    ``records_dir``, ``dim``, ``scale``, ``simulator``, ``split_shares``), the test split and
    ``benchmarks`` (at ``source["benchmark_scale"]``, never re-split) drawn with that seed,
    RACER-R's routers at ``budgets`` (``options["RACER"]``: its ``tau_r``, and the router
    ``store`` whose routers chapter 07 trained, :func:`_fit_racer`) and the baselines
    (:meth:`BaselineTables.add`, each with its ``options``)."""
    tables = BaselineTables()
    racer = {"tau_r": 1.0, "store": None, **options.get("RACER", {})}
    sizes = {k: v for k, v in source.items() if k != "benchmark_scale"}
    benchmark_sizes = {
        **{k: v for k, v in sizes.items() if k != "split_shares"},
        "scale": source["benchmark_scale"],
    }
    for judge in judges:
        for s in seeds:  # a replicate: records, split, initialisation and batch order anew
            records, embeddings = judge_set(judge, "training_mix", seed=s, **sizes)
            sets = experiments.evaluation_sets(
                judge, records, embeddings, ("test",), benchmarks, seed=s, **benchmark_sizes
            )
            configs = experiments.grid(budgets, [s], variant="RACER-R", tau_r=racer["tau_r"])
            fitted = _fit_racer(records, embeddings, configs, settings, racer["store"])
            tables.add(judge, s, fitted, sets, budgets, options)
    return tables


def check_parameters(budgets: Sequence[float], table_budget: float, benchmarks: Sequence[str]):
    """Stop the chapter on parameters it cannot use: the table is read from the runs at
    ``table_budget``, which must be one of ``budgets``, and the benchmarks must be simulated
    ones."""
    if table_budget not in budgets:
        raise ValueError(
            f"table_budget = {table_budget} is not one of budgets {list(budgets)}: the table is "
            "read from the runs at that budget, so add it to budgets"
        )
    if not set(benchmarks) <= set(simulate.OOD_BENCHMARKS):
        raise ValueError(f"benchmarks {benchmarks} must be among {simulate.OOD_BENCHMARKS}")


@dataclass
class BaselineTables:
    """The chapter's tables, gathered judge by judge and seed by seed (:meth:`add`): the runs of
    RACER and of the baselines (``runs``, one frame per judge and seed), the two fixed modes
    (``ends``), RouteLLM's curve metrics (``metrics``), the sets' sizes (``sizes``), the
    records' provenances, and per judge the RACER routers loaded from the store (``loaded``)
    and the training pairs of each seed (``trained``). Every row carries its replicate
    ``seed``."""

    runs: list[pd.DataFrame] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[dict[str, Any]] = field(default_factory=list)
    provenances: set[str] = field(default_factory=set)
    loaded: dict[str, int] = field(default_factory=dict)
    trained: dict[str, list[int]] = field(default_factory=dict)

    def add(
        self,
        judge: str,
        seed: int,
        fitted: tuple[experiments.Fit, int],
        sets: Sets,
        budgets: Sequence[float],
        options: Mapping[str, Mapping[str, Any]],
    ) -> None:
        """RACER's routers of ``fitted`` (:func:`_fit_racer` on replicate ``seed``'s records)
        and each baseline (fitted on the same training split with ``seed``, its threshold
        matched on the validation split for every budget, with ``options`` per method)
        evaluated on ``sets`` (drawn with the same seed); appends the rows."""
        fit, loaded = fitted
        mine = pd.DataFrame(
            experiments.policy_rows(fit.result, sets, method="RACER", judge=judge)
            + experiments.baseline_rows(fit, sets, budgets, [seed], options, judge=judge)
        )
        self.runs.append(mine)
        self.ends += experiments.reference_rows(
            sets, lead=("judge", "set", "seed", "method"), judge=judge, seed=seed
        )
        self.metrics += curve_metrics(mine, sets, judge=judge)
        self.provenances |= {rec.provenance(r) for r, _ in sets.values()}
        self.sizes += [
            {"judge": judge, "set": name, "seed": seed, "pairs": len(r)}
            for name, (r, _) in sets.items()
        ]
        self.loaded[judge] = self.loaded.get(judge, 0) + loaded
        self.trained.setdefault(judge, []).append(fit.train.n)

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        """The runs and the fixed modes as tables, and the pairs of each set (columns) per
        judge, mean over the seeds."""
        sizes = pd.DataFrame(self.sizes).pivot_table(index="judge", columns="set", values="pairs")
        return pd.concat(self.runs, ignore_index=True), pd.DataFrame(self.ends), sizes

    def note(self, judge: str, n_budgets: int) -> str:
        """A line on ``judge``'s routers: RACER's (how many the store held), the baselines,
        the seeds and the training pairs."""
        n = len(self.trained[judge])
        return (
            f"{judge}: {n_budgets * n} RACER routers ({self.loaded[judge]} loaded from the "
            f"store), {len(baselines.METHODS)} baselines x {n} seeds, "
            f"{self.pairs(judge):,.0f} training pairs (mean over seeds)"
        )

    def pairs(self, judge: str) -> float:
        """``judge``'s training pairs, mean over the seeds."""
        return float(np.mean(self.trained[judge]))


_C, _OOD = paper.ADVANCED_BASELINES_BUDGET, ["judgebench", "rewardbench", "rewardbench2"]
_QWEN3, _BASELINES = (
    ("qwen3-1.7b", "qwen3-4b", "qwen3-8b"),
    ("RouterBench-KNN", "RouteLLM-MF", "M-IRT"),
)
#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Table 2",
        f"RACER is the most accurate method at C = {_C:g} for every judge",
        registry.BASELINES,
        Finding(KEY_MOST_ACCURATE),
        sensitivity="baselines_most_accurate",
    ),
    Claim(
        "Table 2",
        f"RACER stays within C = {_C:g} (mean OOD cost at most {100 * RATIO_TOLERANCE:g} % "
        "over C, every judge)",
        registry.BASELINES,
        Difference(
            RUNS_CSV,
            "cost",
            second_column="budget",
            relative=True,
            where={"method": "RACER", "budget": _C, "set": _OOD},
            members=("judge",),
            sign=-1,
            unit=" (cost / C - 1)",
            effect=effects.OVERSPEND,
            bound=True,
        ),  # fmt: skip
    ),
    *(
        Claim(
            "Table 2",
            f"{m}'s {quantity}: "
            + paper_list(paper.ADVANCED_BASELINES[m, j][k] for j in _QWEN3)
            + (" %" if k == 0 else "")
            + " (Qwen3-1.7B / 4B / 8B; mean over the three OOD benchmarks)",
            registry.BASELINES,
            level(
                RUNS_CSV,
                quantity,
                tuple(
                    (
                        {"method": m, "judge": j, "budget": _C, "set": _OOD},
                        paper.ADVANCED_BASELINES[m, j][k],
                    )
                    for j in _QWEN3
                ),
                accuracy=k == 0,
            ),
        )
        for m in ("RACER", *_BASELINES)
        for k, quantity in enumerate(("accuracy", "cost"))
    ),
    Claim(
        "§5.4 text",
        "RACER improves over the strongest baseline by "
        + paper_list(paper.ADVANCED_BASELINES_MARGINS.values(), ".2f")
        + " points (1.7B / 4B / 8B)",
        registry.BASELINES,
        MarginOverBest(RUNS_CSV, where={"budget": _C, "set": _OOD}),
    ),
)
