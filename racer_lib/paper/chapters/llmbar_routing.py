"""Chapter 14, routing real judges: RACER on LLMBar's released evaluators (the paper's §5
routing question, Fig. 4's accuracy against cost, on judgments real models produced).

Per judge and replicate seed (:func:`racer_lib.evaluation.verdicts.replicate_seeds`: the seed
re-draws the split, the routers' initialisation and the batch order; the records are the fixed
release), a fresh split of LLMBar's 419 pairs trains ACER and RACER at every budget in one
batched pass (Algorithm 1 on Eq. (1) and its KL-robust form, Eq. (2)), fits the three score
baselines matched to each budget on validation, and evaluates all of them, Random, the fixed
modes and the oracle on the test split (:func:`_route_judge`). It reads the runs: training
(:func:`training_check`), findings over the seeds (:func:`routing_findings`), tables, the
figure (:func:`accuracy_and_gain`), the sentences' numbers (:func:`prose_reads`); its claim
(:data:`CLAIMS`). :mod:`racer_lib.paper.real_null` measures its rule on a real-data null.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.claims.rules import SEED, Claim, Difference
from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation import verdicts
from racer_lib.paper import effects, experiments, files, plots, registry
from racer_lib.paper.claims import EMERGENT_STATUSES, add_status
from racer_lib.paper.experiments import BASIS_LEARNED
from racer_lib.paper.experiments import embed_quietly as embed_quietly  # the page's
from racer_lib.records import llmbar, sets
from racer_lib.records import schema as rec
from racer_lib.records.summary import mode_summary
from racer_lib.routing import baselines, train

#: The two router variants trained against the budget, the baselines and Random.
VARIANTS = ("ACER", "RACER")
METHODS = [*VARIANTS, *baselines.METHODS, "Random"]
#: The first columns of the runs.
LEAD = ("judge", "seed", "unit_tokens", "method", "budget")
#: The validation share of the training subsets, for subset splits.
SUBSET_VALID_SHARE = 0.25


def check_parameters(judges: Sequence[str], n_seeds: int, budgets: Sequence[float]) -> None:
    """Stop on judges that LLMBar did not release, no seed or no budget."""
    if not judges or set(judges) - set(llmbar.LLMBAR_JUDGES):
        raise ValueError(
            f"judges must be among {', '.join(llmbar.LLMBAR_JUDGES)}; got {list(judges)}"
        )
    if n_seeds < 1 or not budgets:
        raise ValueError("need at least one seed and one budget")


def describe_split(
    split_by: str,
    seeds: Sequence[int],
    shares: Sequence[float],
    train_subsets: Sequence[str],
    test_subsets: Sequence[str],
) -> str:
    """One line on the split rule this run uses (:func:`racer_lib.records.sets.split_rule`)."""
    n = len(seeds)
    if split_by == "random":
        return (
            f"split_by = 'random': a fresh split of the 419 pairs for each of the {n} seeds "
            f"{list(seeds)}, stratified by subset, train/valid/test shares "
            f"{'/'.join(f'{s:g}' for s in shares)}"
        )
    return (
        f"split_by = {split_by!r}: subset (shift): train and valid from "
        f"{', '.join(train_subsets)} (valid a random {SUBSET_VALID_SHARE:.0%} of each, per "
        f"seed), test on {', '.join(test_subsets)} for all {n} seeds {list(seeds)}"
    )


def describe_source(source: Mapping[str, Any], location: Any) -> str:
    """One line naming where the data are read from and the pinned LLMBar release."""
    return (
        f"reading data from: {location}\nLLMBar release: {source['repository']} at commit "
        f"{source['commit']} ({source['license']}), sha256 verified"
    )


def _check_aligned(records: Mapping[str, pd.DataFrame], pairs: pd.DataFrame) -> None:
    """Every judge's records list the pairs in the order of ``pairs`` (so that rows of
    records, pairs and embeddings line up); raises otherwise."""
    for judge, recs in records.items():
        if not (recs["id"].to_numpy() == pairs["id"].to_numpy()).all():
            raise AssertionError(f"{judge}: record ids are not in the order of the pairs")


def load_release(judges: Sequence[str], manifest) -> tuple[pd.DataFrame, dict, str]:
    """LLMBar's pairs, each judge's records of them (tokens counted by one tokenizer) checked
    to list the pairs in their order (:func:`_check_aligned`), and the records' provenance."""
    pairs, tokenizer = llmbar.llmbar_pairs(manifest), llmbar.load_tokenizer()
    records = {j: llmbar.llmbar_records(j, tokenizer=tokenizer, manifest=manifest) for j in judges}
    _check_aligned(records, pairs)
    return pairs, records, rec.provenance(pd.concat(records.values()))


def modes_table(records: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each judge's two modes on all pairs (:func:`racer_lib.records.summary.mode_summary`),
    the oracle's headroom and both modes' mean tokens."""
    every = pd.concat(records.values())
    overall = mode_summary(every, ["judge"])
    overall["headroom"] = evaluate.headroom(overall)
    return evaluate.with_mean_tokens(overall, every, ["judge"])


def prose_reads(first_seed: int) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """The numbers the data section's sentences state, as ``(name, csv, column, agg, where)``
    for :meth:`racer_lib.book.chapter.Prose.value`: the range over judges of each mode's
    accuracy, mean tokens, cost ratio and headroom (``llmbar_modes.csv``), and the first seed's
    split sizes (``llmbar_splits.csv``)."""
    M, S = "llmbar_modes.csv", "llmbar_splits.csv"
    columns = ("acc_instruct", "acc_reasoning", "mean_tokens_reasoning", "mean_tokens_instruct")
    reads = [
        (f"{c}_{agg}", M, c, agg, {})
        for c in (*columns, "cost_ratio", "headroom")
        for agg in ("min", "max")
    ]
    reads.append(("split_seed", S, "seed", "min", {}))
    where = [{"seed": first_seed, "split": part} for part in ("train", "valid", "test")]
    return reads + [(f"n_{w['split']}", S, "id", "count", w) for w in where]


def validation_view(runs: pd.DataFrame) -> pd.DataFrame:
    """Per judge and method, the validation reasoning rate (baselines) and cost (every method
    but Random) at each budget (columns), mean over seeds. Checks first that every baseline
    meets its budget on validation (``baselines.match_budget``'s promise)."""
    is_baseline = runs["method"].isin(baselines.METHODS)
    over = runs[is_baseline & (runs["valid_cost"] > runs["budget"] + 1e-9)]
    if not over.empty:
        raise AssertionError(f"baselines over budget on validation:\n{over}")
    at = {"index": ["judge", "method"], "columns": "budget"}
    rate = runs[is_baseline].pivot_table(values="valid_rate", **at)
    cost = runs[runs["method"] != "Random"].pivot_table(values="valid_cost", **at)
    return pd.concat({"valid rate": rate, "valid cost": cost}, axis=1)


def references_view(ends: pd.DataFrame, judges: Sequence[str]) -> pd.DataFrame:
    """The fixed modes and the oracle on the test split, per judge: accuracy and cost, mean and
    sd over seeds."""
    refs = ends.groupby(["judge", "method"])[["accuracy", "cost"]].agg(["mean", "std"])
    refs.columns = [f"{q}_{s}" for q, s in refs.columns]
    order = pd.MultiIndex.from_product([judges, ["All-Instruct", "All-Reasoning", "Oracle"]])
    return refs.reindex(order)


def split_table(pairs: pd.DataFrame, splits: Mapping[int, np.ndarray]) -> pd.DataFrame:
    """One row per seed and pair: its subset and its split (``train``, ``valid``, ``test``)."""
    frames = [
        pd.DataFrame({"seed": s, "id": pairs["id"], "subset": pairs["subset"], "split": lab})
        for s, lab in splits.items()
    ]
    return pd.concat(frames, ignore_index=True)


def split_sizes(table: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The pairs of each subset in each split of ``seed`` (a :func:`split_table`)."""
    sizes = table.pivot_table(
        index=["seed", "subset"], columns="split", values="id", aggfunc="count", fill_value=0
    )
    sizes = sizes.reindex(columns=[s for s in sets.SPLITS if s in sizes.columns])
    return sizes.loc[seed].reindex(list(llmbar.LLMBAR_SUBSETS))


@dataclass(frozen=True)
class RoutingSpec:
    """What every (judge, seed) of the chapter is routed with: the budgets ``C`` (training
    unit), the trainer's settings, the baselines' options and RACER's temperatures."""

    budgets: Sequence[float]
    settings: train.TrainSettings
    options: Mapping[str, dict] = field(default_factory=dict)
    tau_r: float = 1.0
    tau_c: float = 1.0


@dataclass
class Routed:
    """One judge routed over seeds: the runs, the references of each test split, each test
    split's oracle frontier, the training checks and the test sets by ``(judge, seed)``."""

    runs: list = field(default_factory=list)
    ends: list = field(default_factory=list)
    frontiers: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    tests: dict = field(default_factory=dict)
    note: str = ""


def _route_judge(
    spec: RoutingSpec,
    records: pd.DataFrame,
    embeddings: np.ndarray,
    splits: Mapping[int, np.ndarray],
    judge: str,
) -> Routed:
    """For each seed of ``splits`` (seed: split labels): ACER and RACER at every budget in one
    batched pass (:func:`racer_lib.paper.experiments.fit`), each baseline fitted once and
    matched to every budget on validation, all evaluated on the test split with Random at
    each RACER run's reasoning rate, the references and oracle frontier of that split, and
    the :func:`training_check` of every policy."""
    out, t0 = Routed(), time.time()
    for s, split in splits.items():
        configs = experiments.grid(
            spec.budgets, [s], outer={"variant": VARIANTS}, tau_r=spec.tau_r, tau_c=spec.tau_c
        )
        fit = experiments.fit(records, embeddings, configs, spec.settings, split=split)
        is_test = split == "test"
        test = out.tests[judge, s] = {"test": (records[is_test], embeddings[is_test])}
        key = {"judge": judge, "seed": s, "unit_tokens": fit.unit.tokens_per_unit}
        rows = experiments.policy_rows(
            fit.result, test, random=("RACER",), valid=fit.valid, lead=LEAD, **key
        ) + experiments.baseline_rows(
            fit, test, spec.budgets, [s], spec.options, valid_point=True, lead=LEAD, **key
        )
        instruct = evaluate.policy_point(test["test"][0], 0.0)["accuracy"]
        out.runs += [{**row, "instruct_accuracy": instruct} for row in rows]
        out.ends += experiments.reference_rows(test, oracle=True, lead=LEAD[:4], **key)
        frontier = evaluate.oracle_frontier(test["test"][0]).assign(judge=judge, seed=s)
        out.frontiers.append(frontier)
        out.checks += training_check(fit.result, test["test"][1], judge=judge)
    out.note = (
        f"{judge}: {len(splits)} seeds x ({len(configs)} ACER/RACER routers + "
        f"{len(baselines.METHODS)} baselines), about {fit.train.n} training, {fit.valid.n} "
        f"validation and {is_test.sum()} test pairs per seed, {time.time() - t0:.0f} s"
    )
    return out


def route_judges(
    spec: RoutingSpec,
    records: Mapping[str, pd.DataFrame],
    embeddings: np.ndarray,
    splits: Mapping[int, np.ndarray],
) -> Routed:
    """:func:`_route_judge` for every judge of ``records`` (judge: records, rows aligned with
    ``embeddings``), in order, its rows and notes gathered into one :class:`Routed`."""
    out = Routed()
    for judge, recs in records.items():
        one = _route_judge(spec, recs, embeddings, splits, judge)
        for rows in ("runs", "ends", "frontiers", "checks"):
            getattr(out, rows).extend(getattr(one, rows))
        out.tests |= one.tests
        out.note = "\n".join(n for n in (out.note, one.note) if n)
    return out


def metrics_per_seed(runs: pd.DataFrame, tests: Mapping[tuple, dict]) -> list[dict[str, Any]]:
    """RouteLLM's AUC, APGR and CPT (:func:`racer_lib.evaluation.metrics.routing_metrics`) per
    judge, method and seed, from that seed's points over the budgets and its test split."""
    return [
        {
            "judge": j,
            "method": m,
            "seed": s,
            **evaluate.routing_metrics(
                runs[(runs["judge"] == j) & (runs["seed"] == s) & (runs["method"] == m)],
                tests[j, s]["test"][0],
            ),
        }
        for j, s in sorted(tests)
        for m in METHODS
    ]


def training_check(
    result: train.TrainResult, x_eval: np.ndarray, *, method: str | None = None, **fixed: Any
) -> list[dict[str, Any]]:
    """Is each policy trained at all? One row per policy of ``result``: ``fixed`` columns,
    seed, method (default: its variant), budget, ``best_epoch``, the validation accuracy and
    cost over the epochs, the largest multiplier, and ``p_test_sd``, the sd of ``pi(1|z)`` over
    the rows of ``x_eval`` (0: the same probability for every pair, i.e. Random)."""
    p_eval = result.p_reasoning(x_eval)
    hist = result.history
    rows = []
    for i, (cfg, best) in enumerate(zip(result.configs, result.best_epoch, strict=True)):
        h = hist[hist["policy"] == i].set_index("epoch")
        rows.append(
            {
                **fixed,
                "seed": cfg.seed,
                "method": method or cfg.variant,
                "budget": cfg.budget,
                "best_epoch": best,
                "valid_accuracy_epoch1": h.loc[1, "valid_accuracy"],
                "valid_accuracy_min": h["valid_accuracy"].min(),
                "valid_accuracy_max": h["valid_accuracy"].max(),
                "valid_accuracy_best": h.loc[best, "valid_accuracy"],
                "valid_cost_epoch1": h.loc[1, "valid_cost"],
                "valid_cost_best": h.loc[best, "valid_cost"],
                "lambda_max": h["lambda"].max(),
                "p_test_sd": float(np.std(p_eval[i])),
            }
        )
    return rows


def training_check_summary(
    checks: pd.DataFrame, by: Sequence[str] = ("judge", "method", "budget")
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`training_check` rows read two ways: the mean over seeds of each group ``by``, and
    one row: by how much validation accuracy moved over training (``moved_points``, the median
    over policies), the share of policies whose selected validation cost meets the budget
    (``within_budget``, percent), and the share of runs (``by`` without ``budget``, plus
    ``seed``, named in ``runs``) whose selected cost grows with the budget (``grows_with_budget``,
    percent)."""
    view = checks.groupby(list(by))[list(TRAINING_CHECK_LABELS)].mean()
    moved = (checks["valid_accuracy_max"] - checks["valid_accuracy_min"]).median()
    runs = [c for c in by if c != "budget"] + ["seed"]
    by_budget = checks.sort_values("budget", kind="stable").groupby(runs)["valid_cost_best"]
    tracks = by_budget.apply(lambda cost: cost.is_monotonic_increasing).mean()
    within = (checks["valid_cost_best"] <= checks["budget"]).mean()
    reading = {
        "moved_points": moved,
        "within_budget": 100 * within,
        "grows_with_budget": 100 * tracks,
        "runs": ", ".join(runs),
    }
    return view, pd.DataFrame([reading])


#: The non-inferiority margin of "at least as accurate" (accuracy points), fixed before any
#: run: RACER counts as at least as accurate as a rival when its per-seed paired difference is
#: shown above ``-AT_LEAST_AS_ACCURATE_POINTS`` (the book's margin for "alike", half a point).
AT_LEAST_AS_ACCURATE_POINTS = 0.5
FINDINGS_CSV, RUNS_CSV = files.FINDINGS_CSV, "llmbar_routing_runs.csv"
#: The findings' texts, per judge (the chapter's claim reads the runs, not these).
OVER_RANDOM = "{judge}: RACER is more accurate than Random at every budget"
OVER_ACER = "{judge}: RACER is at least as accurate as ACER on average"
OVER_BEST = "{judge}: at C={budget:g}, RACER is at least as accurate as the best baseline"
#: The claims (the findings' ``claim`` column) by the name the page glues their counts under,
#: and those counts, as for :func:`prose_reads`: each claim's findings and those of each status.
FINDING_CLAIMS = {"random": "over Random", "acer": "over ACER", "best": "over the best baseline"}
FINDING_READS = [
    (f"{key}_{s.replace(' ', '_')}", FINDINGS_CSV, "finding", "count", {"claim": claim, **where})
    for key, claim in FINDING_CLAIMS.items()
    for s, where in [("n", {}), *((s, {"status": s}) for s in EMERGENT_STATUSES)]
]


def _paired_differences(runs: pd.DataFrame, judge: str, first: str, second: str) -> pd.Series:
    """``first``'s test accuracy minus ``second``'s for ``judge``, paired on budget and seed
    (the replicate: its split, initialisation and batch order), indexed by both."""
    mine = runs[runs["judge"] == judge].set_index(["method", "budget", "seed"])["accuracy"]
    return (mine.loc[first] - mine.loc[second]).dropna().sort_index()


def _ahead(d: pd.Series) -> str:
    return f"ahead in {int((d > 0).sum())} of {len(d)} seeds"


def over_random(runs: pd.DataFrame, judge: str, budgets: Sequence[float], test) -> dict:
    """:data:`OVER_RANDOM`: per budget, RACER minus Random above the SESOI of a gain over
    Random (``test``: :func:`finding_test`), every budget (a findings row)."""
    d = _paired_differences(runs, judge, "RACER", "Random")
    sesoi = effects.SELECTION_GAIN.sesoi
    members = {f"C={b:g}": test(d.loc[b], sesoi=sesoi) for b in budgets}
    observed = "; ".join(
        f"{k}: {v.interval_text(' pts')}, {_ahead(d.loc[b])}"
        for (k, v), b in zip(members.items(), budgets)
    )
    verdict = verdicts.every(members)
    return _row(OVER_RANDOM.format(judge=judge), verdict, observed, FINDING_CLAIMS["random"])


def _over_acer(runs: pd.DataFrame, judge: str, margin: float, test) -> dict:
    """:data:`OVER_ACER`: per seed, RACER minus ACER averaged over the budgets, shown above
    ``-margin`` (non-inferiority: ``test(d, threshold=-margin)``)."""
    d = _paired_differences(runs, judge, "RACER", "ACER").groupby("seed").mean()
    mine = runs[runs["judge"] == judge]
    racer, acer = (mine[mine["method"] == m] for m in ("RACER", "ACER"))
    observed = (
        f"RACER {racer['accuracy'].mean():.2f} % at mean cost {racer['cost'].mean():.2f}, ACER "
        f"{acer['accuracy'].mean():.2f} % at {acer['cost'].mean():.2f}; per seed (mean over "
        f"budgets) {_ahead(d)}; margin {margin:g} pts"
    )
    verdict = test(d, threshold=-margin)
    return _row(OVER_ACER.format(judge=judge), verdict, observed, FINDING_CLAIMS["acer"])


def _over_best(summary, runs, judge: str, budget: float, rivals, margin: float, test):
    """:data:`OVER_BEST` at ``budget``: RACER's per-seed difference from the rival of ``rivals``
    most accurate on average (``summary``), shown above ``-margin`` (non-inferiority)."""
    acc = summary.set_index(["judge", "method", "budget"])
    others = acc.loc[(judge, list(rivals), budget)].reset_index("method")
    best = others.loc[others["accuracy_mean"].idxmax()]
    r = acc.loc[(judge, "RACER", budget)]
    d = _paired_differences(runs, judge, "RACER", best["method"]).loc[budget]
    observed = (
        f"RACER {r['accuracy_mean']:.2f} % at cost {r['cost_mean']:.2f}; best baseline "
        f"{best['method']} {best['accuracy_mean']:.2f} % at cost {best['cost_mean']:.2f}; "
        f"{_ahead(d)}; margin {margin:g} pts"
    )
    verdict = test(d, threshold=-margin)
    text = OVER_BEST.format(judge=judge, budget=budget)
    return _row(text, verdict, observed, FINDING_CLAIMS["best"], budget=budget)


def _row(finding: str, verdict, observed: str, claim: str, budget: float = np.nan) -> dict:
    judge = finding.split(":", 1)[0]
    return {"judge": judge, "budget": budget, "claim": claim, "finding": finding,
            "observed": observed, **verdict.columns(), "basis": BASIS_LEARNED}  # fmt: skip


def finding_test(min_n: int = verdicts.MIN_SEEDS, overlap: float = 0.0):
    """Every finding's test: :func:`~racer_lib.evaluation.verdicts.directional` over the seeds
    (``overlap``: :func:`racer_lib.records.sets.split_overlap`, Nadeau and Bengio's correction;
    :mod:`racer_lib.paper.real_null` measures its false-positive rate on a real-data null)."""
    return partial(verdicts.directional, sign=1, min_n=min_n, overlap=overlap)


def routing_findings(
    runs: pd.DataFrame,
    summary: pd.DataFrame,
    judges: Sequence[str],
    budgets: Sequence[float],
    provenance: str,
    rivals: Sequence[str] = baselines.METHODS,
    min_n: int = verdicts.MIN_SEEDS,
    overlap: float = 0.0,
) -> pd.DataFrame:
    """The chapter's findings per judge, each decided over the replicate seeds by the book's
    protocol (:mod:`racer_lib.evaluation.verdicts`), whatever their answer: RACER more
    accurate than Random at every budget (:func:`over_random`), at least as accurate as ACER
    averaged over budgets (:func:`_over_acer`) and, at each budget, at least as accurate as
    the best of ``rivals`` (:func:`_over_best`), the last two within
    :data:`AT_LEAST_AS_ACCURATE_POINTS`. Columns: ``judge``, ``budget``, ``claim``,
    ``finding``, ``observed``, the verdict's, ``status``
    (:func:`racer_lib.paper.claims.add_status`: nothing about a trained router is given to a
    simulator), ``basis``. ``runs`` has one row per judge, method, budget and seed;
    ``summary`` is its :func:`racer_lib.evaluation.metrics.over_seeds` table; ``min_n``,
    ``overlap``: :func:`finding_test`'s."""
    margin, rows, test = AT_LEAST_AS_ACCURATE_POINTS, [], finding_test(min_n, overlap)
    for judge in judges:
        rows.append(over_random(runs, judge, budgets, test))
        rows.append(_over_acer(runs, judge, margin, test))
        rows += [_over_best(summary, runs, judge, b, rivals, margin, test) for b in budgets]
    return add_status(rows, provenance, registry.LLMBAR_ROUTING, FINDINGS_CSV)


#: The two fixed modes (chord of the figure's panels).
FIXED_MODES = ("All-Instruct", "All-Reasoning")


def accuracy_and_gain(summary, runs, ends, frontiers, judges, methods) -> plt.Figure:
    """The LLMBar routing figure: one column per judge, each method's mean over seeds at each
    budget against its realized cost, with one sd over seeds in both directions.

    Top row: accuracy on the test split, with the two fixed modes and their chord (means over
    the seeds' test splits) and the dotted oracle frontier (the mean over seeds of each test
    split's frontier). Bottom row: the same points as a gain over All-Instruct on the same
    test split, per seed, which removes what all methods of a seed share.

    ``summary``: :func:`racer_lib.evaluation.metrics.over_seeds` of ``runs`` by judge, method
    and budget; ``runs``: one row per judge, method, budget and seed with ``accuracy`` and
    ``instruct_accuracy`` (All-Instruct on that seed's test split); ``ends``: the fixed modes
    per judge and seed (``cost``, ``accuracy``); ``frontiers``: each judge and seed's oracle
    frontier (:func:`racer_lib.evaluation.metrics.oracle_frontier` with ``judge`` and ``seed``).
    """
    gains = (
        runs.assign(gain=runs["accuracy"] - runs["instruct_accuracy"])
        .groupby(["judge", "method", "budget"])["gain"]
        .agg(["mean", "std"])
    )
    fig, axes = plt.subplots(
        2, len(judges), figsize=(max(3.1 * len(judges), 5.0), 6.8), squeeze=False, sharex="col"
    )
    fig.subplots_adjust(wspace=0.32, hspace=0.12, top=0.95)
    for j, judge in enumerate(judges):
        per_seed = ends[ends["judge"] == judge].pivot(
            index="seed", columns="method", values=["cost", "accuracy"]
        )
        right = per_seed[("cost", "All-Reasoning")].mean() * 1.04
        grid = np.linspace(0.0, right, 400)
        curves = {
            s: np.interp(grid, f["cost"], f["accuracy"])
            for s, f in frontiers[frontiers["judge"] == judge].groupby("seed")
        }
        for row, ax in enumerate(axes[:, j]):
            # per seed: 0, or that split's All-Instruct accuracy
            base = per_seed[("accuracy", "All-Instruct")] * row
            cost = {m: per_seed[("cost", m)].mean() for m in FIXED_MODES}
            accuracy = {m: (per_seed[("accuracy", m)] - base).mean() for m in FIXED_MODES}
            oracle = np.mean([curves[s] - base[s] for s in curves], axis=0)
            ax.plot(grid, oracle, ls=":", color="black", lw=1.2, label="oracle frontier")
            plots.endpoints(ax, cost, accuracy)
            tops, bottoms = _method_points(ax, summary, gains, judge, methods, row)
            tops = [oracle.max(), *accuracy.values(), *tops]
            ax.set_ylim(min(*accuracy.values(), *bottoms) - 1.0, max(tops) + 1.0)
            ax.set_xlim(0, right)
            if row == 0:
                ax.set_title(judge)
            else:
                ax.axhline(0, color="black", lw=0.6, zorder=0)
                ax.set_xlabel("realized cost ratio (test split)")
    axes[0][0].set_ylabel("accuracy on the test split (%)")
    axes[1][0].set_ylabel("gain over All-Instruct (points)")
    _legend(fig, axes, judges)
    return fig


def mean_sd_by_budget(
    summary, index, budgets, quantities=(("acc", "accuracy"), ("cost", "cost")), digits: int = 1
):
    """An :func:`racer_lib.evaluation.metrics.over_seeds` table to read: one row per ``index`` group
    (e.g. judge and method) and, for each of ``budgets`` in turn, a ``"m ± s"`` cell
    (:func:`racer_lib.paper.plots.mean_sd`) per quantity, named ``"C=<budget> <label>"`` from
    ``quantities``' ``(label, column)`` pairs (the columns ``<column>_mean`` and
    ``<column>_sd``)."""
    cells = summary[[*index, "budget"]].copy()
    for label, column in quantities:
        means, sds = summary[f"{column}_mean"], summary[f"{column}_sd"]
        cells[label] = [plots.mean_sd(m, s, digits) for m, s in zip(means, sds, strict=True)]
    wide = cells.pivot(index=list(index), columns="budget", values=[q for q, _ in quantities])
    wide.columns = [f"C={b:g} {q}" for q, b in wide.columns]
    return wide[[f"C={b:g} {q}" for b in budgets for q, _ in quantities]]


#: The modes of each judge routed in this chapter: accuracies, cost ratio, the pairs only one mode
#: gets right and the oracle.
ROUTED_MODE_LABELS = {
    k: {**plots.MODE_LABELS, **plots.AGREEMENT_LABELS}[k]
    for k in "acc_instruct acc_reasoning delta_accuracy cost_ratio only_reasoning only_instruct "
    "oracle_accuracy headroom".split()
}


#: The columns of :func:`training_check_summary` for a page table.
TRAINING_CHECK_LABELS = {
    "valid_accuracy_epoch1": ("validation accuracy (%)", "epoch 1"),
    "valid_accuracy_best": ("validation accuracy (%)", "selected"),
    "valid_accuracy_min": ("validation accuracy (%)", "min"),
    "valid_accuracy_max": ("validation accuracy (%)", "max"),
    "valid_cost_epoch1": ("validation cost", "epoch 1"),
    "valid_cost_best": ("validation cost", "selected"),
    "best_epoch": "selected epoch",
    "lambda_max": "max λ",
    "p_test_sd": "sd of p on test",
}


def _method_points(ax: plt.Axes, summary, gains, judge, methods, row: int):
    """Each method of ``judge`` on one panel of :func:`accuracy_and_gain`: its mean accuracy
    (``row`` 0) or gain over All-Instruct (``row`` 1) at its mean cost, with one sd over seeds
    in both directions. Returns the tops and bottoms of the error bars."""
    tops, bottoms = [], []
    for method in methods:
        m = summary[(summary["judge"] == judge) & (summary["method"] == method)]
        m = m.sort_values("budget")
        if row == 0:
            y, yerr = m["accuracy_mean"].to_numpy(), m["accuracy_sd"].fillna(0).to_numpy()
        else:
            g = gains.loc[(judge, method)].loc[m["budget"]]
            y, yerr = g["mean"].to_numpy(), g["std"].fillna(0).to_numpy()
        ax.errorbar(
            m["cost_mean"],
            y,
            xerr=m["cost_sd"].fillna(0),
            yerr=yerr,
            color=plots.METHOD_COLORS[method],
            marker=plots.METHOD_MARKERS[method],
            ms=8 if method == "Random" else 5,
            elinewidth=0.8,
            lw=1.6 if method == "RACER" else 1,
            capsize=1.5,
            alpha=0.85,
            label=method,
            zorder=4 if method == "RACER" else 3,
        )
        tops.append((y + yerr).max())
        bottoms.append((y - yerr).min())
    return tops, bottoms


def _legend(fig: plt.Figure, axes, judges) -> None:
    """One legend for :func:`accuracy_and_gain`: right of a single column, else below in two
    rows (one row would be wider than the page)."""
    handles, labels = axes[0][0].get_legend_handles_labels()
    below = {"loc": "upper center", "bbox_to_anchor": (0.5, 0.05), "ncol": (len(labels) + 1) // 2}
    right = {"loc": "center left", "bbox_to_anchor": (0.92, 0.5)}
    fig.legend(handles, labels, frameon=False, **(right if len(judges) == 1 else below))


#: The paper's claim this chapter tests (the reproduction report decides it).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 4 (LLMBar's released judges)",
        "RACER is more accurate than Random: tested on real judges other than the paper's",
        registry.LLMBAR_ROUTING,
        Difference(RUNS_CSV, "accuracy", {"method": "RACER"}, {"method": "Random"},
                   pair_on=("split_by", "judge", "budget", SEED), effect=effects.SELECTION_GAIN),
    ),
)  # fmt: skip
