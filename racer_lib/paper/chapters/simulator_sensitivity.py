"""Chapter 16_simulator_sensitivity: how the verdicts on the paper's emergent claims depend on
the simulator's uncalibrated choices (:data:`racer_lib.records.choices.CHOICES`).

The book's routing chapters run on records drawn by :mod:`racer_lib.records.simulate`. Its
calibrated numbers come from the paper; its other choices (how much of a pair's difficulty the
embedding carries, how unequal the cells' reasoning gains are, ...) are ours, and an emergent
verdict such as "RACER beats Random" (Fig. 4) could hold only because of them. This chapter
re-runs seven emergent claims (:data:`CLAIMS`) over a designed set of simulators
(:func:`design`: one-at-a-time sweeps of every knob across its plausible range, a small Latin
hypercube over all of them, and two negative controls), at cheap sizes (:class:`Sizes`) with
several seeds per simulator (:func:`run_design`), and reports per claim the share of simulators
in which it holds, the knob it depends on most and where it flips (:func:`claim_robustness`).

**Effects.** Every claim is a comparison whose effect is positive on the claimed side:

* accuracy claims (Fig. 4, Table 2, Table 3): per-pair paired differences of expected
  correctness under the two policies, ``(p_i - q_i) (r_i1 - r_i0)`` in points (the policies'
  expected correctness, :func:`racer_lib.evaluation.metrics.policy_point`, differ by exactly
  the mean of these), with a normal 95 % interval (:func:`paired`);
* budget claims (Fig. 3): the difference of two violation rates over the training runs
  (seeds), the comparator's minus RACER-C's, with Newcombe's hybrid-score 95 % interval built
  from the two Wilson intervals (:func:`newcombe`).

A point's seeds are pooled (:func:`pool`); a claim compared against several methods (every
score baseline, Random at two budgets) takes its weakest comparison. **Holds** at a simulator:
the pooled 95 % interval lies entirely above zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats
from scipy.stats import qmc

from racer_lib.evaluation import metrics as evaluate
from racer_lib.evaluation.intervals import wilson_interval
from racer_lib.paper import experiments, shift
from racer_lib.records import choices, simulate
from racer_lib.records.schema import correct_matrix
from racer_lib.routing import baselines, train

#: The emergent claims, by the key the reproduction report reads (its ``robustness`` column).
CLAIMS: dict[str, str] = {
    "racer_vs_random_id": "Fig. 4: RACER is more accurate than Random at its own reasoning "
    "rate on the in-distribution test split",
    "racer_vs_random_ood": "Fig. 4: RACER is more accurate than Random at its own reasoning "
    "rate on the OOD benchmarks",
    "racer_most_accurate": "Table 2: RACER is more accurate than every score baseline at C",
    "beta_zero_lowers": "Table 3: β = 0 lowers accuracy at C = 2 (against β = 0.005)",
    "beta_large_lowers": "Table 3: β = 0.05 lowers accuracy at C = 2 (against β = 0.005)",
    "costlier_within_budget": "Fig. 3(b): RACER-C exceeds the budget less often than ACER "
    "under the costlier shift",
    "matched_spend_control": "Fig. 3: RACER-C exceeds the budget less often than ACER "
    "retrained at the budget RACER-C spent (the matched-spend control)",
}
#: Unit of each claim's effect: accuracy points or a difference of violation rates.
UNITS = {
    k: ("rate" if k in ("costlier_within_budget", "matched_spend_control") else "pts")
    for k in CLAIMS
}
#: Panel titles of :func:`sweep_panels`: each claim's comparison and the effect's unit.
SHORT = {
    "racer_vs_random_id": "RACER − Random, ID (pts)",
    "racer_vs_random_ood": "RACER − Random, OOD (pts)",
    "racer_most_accurate": "RACER − baselines (pts)",
    "beta_zero_lowers": "β 0.005 − β 0 (pts)",
    "beta_large_lowers": "β 0.005 − β 0.05 (pts)",
    "costlier_within_budget": "ACER − RACER-C (rate)",
    "matched_spend_control": "control − RACER-C (rate)",
}
#: The claims the two negative controls are run on (the router's signal; nothing is trained
#: under a shift there).
CONTROL_CLAIMS = ("racer_vs_random_id", "racer_vs_random_ood")
CONTROLS = {"null simulator": choices.null_simulator(), "null gain": choices.null_gain()}
LEVEL = 0.95
#: Every record of this chapter is drawn by the simulator (it has no real-data mode).
PROVENANCE = "simulated"
NO_FLIP = "no flip in range"


@dataclass(frozen=True)
class Sizes:
    """What one simulator point draws, trains and tests on: small sets, the paper's budgets and
    methods (RACER is the benchmark protocol's ``RACER-R`` at ``tau_R = 1``, Appendix B.5); the
    routers' training settings are passed beside it (:class:`racer_lib.routing.train.
    TrainSettings`)."""

    judge: str = "qwen3-4b"
    scale: float = 0.08  # share of the 40k training mixture
    benchmark_scale: float = 0.25  # share of each OOD benchmark
    shift_scale: float = 0.25  # share of WildGuardMix (train) and OffsetBias (test), Fig. 3(b)
    dim: int = 16
    budget: float = 2.0  # C of Table 3, Fig. 3 and Random
    table_budget: float = 4.0  # C of Table 2 (Random is also compared there)
    tau_c: float = 0.1  # RACER-C's cost temperature
    shift_runs: int = 4  # training runs per method and seed under the shift
    baseline_epochs: int = 5  # epochs of the MF and M-IRT baselines


# ----------------------------------------------------------------------------------------
# The design


def sweep_levels(choice: choices.Choice, levels: int) -> list[float]:
    """A knob's one-at-a-time levels: ``levels`` values evenly spaced from its low to its high
    end, and its default, sorted (the default once)."""
    grid = np.linspace(choice.low, choice.high, max(levels, 2))
    return sorted({float(np.round(v, 6)) for v in grid} | {float(choice.default)})


def design(
    seed: int, levels: int = 2, lhs_points: int = 4, knobs: Sequence[str] = choices.KNOBS
) -> pd.DataFrame:
    """The simulators to run, one row each (``point``, ``design``, ``knob``, then every knob of
    :class:`~racer_lib.records.choices.Simulator`): the default; each of ``knobs`` at its
    :func:`sweep_levels` with the others at default (``sweep``); ``lhs_points`` points of a
    Latin hypercube over the ranges of ``knobs`` (``lhs``, scipy's ``LatinHypercube`` seeded
    with ``seed``); and the two controls of :data:`CONTROLS` (``control``)."""
    by_name = {c.name: c for c in choices.CHOICES}
    rows = [{"point": "default", "design": "default", "knob": "", **asdict(choices.DEFAULT)}]
    for name in knobs:
        for v in sweep_levels(by_name[name], levels):
            if v != by_name[name].default:
                sim = choices.DEFAULT.with_knobs(**{name: v})
                rows.append(
                    {"point": f"{name}={v:g}", "design": "sweep", "knob": name, **asdict(sim)}
                )
    if lhs_points:
        unit = qmc.LatinHypercube(d=len(knobs), seed=seed).random(lhs_points)
        low = np.array([by_name[k].low for k in knobs])
        high = np.array([by_name[k].high for k in knobs])
        for i, x in enumerate(qmc.scale(unit, low, high)):
            sim = choices.DEFAULT.with_knobs(
                **{k: float(np.round(v, 3)) for k, v in zip(knobs, x, strict=True)}
            )
            rows.append({"point": f"lhs {i + 1}", "design": "lhs", "knob": "", **asdict(sim)})
    for name, sim in CONTROLS.items():
        rows.append({"point": name, "design": "control", "knob": "", **asdict(sim)})
    return pd.DataFrame(rows)


def simulator_of(row: dict[str, Any]) -> choices.Simulator:
    """The :class:`~racer_lib.records.choices.Simulator` of a :func:`design` row."""
    fields = choices.Simulator.__dataclass_fields__
    return choices.Simulator(
        **{k: (bool(row[k]) if k == "reasoning_gain" else float(row[k])) for k in fields}
    )


def choices_table() -> pd.DataFrame:
    """:data:`racer_lib.records.choices.CHOICES` as a table (knob, default, low, high, why)."""
    return pd.DataFrame([asdict(c) for c in choices.CHOICES])


# ----------------------------------------------------------------------------------------
# Effects and intervals


def paired(d: np.ndarray, level: float = LEVEL) -> dict[str, float]:
    """Mean of paired differences ``d`` with its sd, count and normal ``level`` interval."""
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    sd = float(d.std(ddof=1)) if n > 1 else np.inf
    return _normal(float(d.mean()), sd, n, level)


def _normal(mean: float, sd: float, n: int, level: float) -> dict[str, float]:
    z = stats.norm.ppf(0.5 + level / 2)
    half = z * sd / np.sqrt(n) if n > 1 else np.inf
    return {"effect": mean, "sd": sd, "n": n, "lo": mean - half, "hi": mean + half}


def newcombe(k1: int, n1: int, k2: int, n2: int, level: float = LEVEL) -> tuple[float, ...]:
    """``k1/n1 - k2/n2`` and Newcombe's hybrid-score interval (method 10 of Newcombe, 1998),
    from the two proportions' Wilson intervals
    (:func:`racer_lib.evaluation.intervals.wilson_interval`)."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, level)
    l2, u2 = wilson_interval(k2, n2, level)
    diff = p1 - p2
    return diff, diff - np.hypot(p1 - l1, u2 - p2), diff + np.hypot(u1 - p1, p2 - l2)


def counts(k_base: int, k_claim: int, runs: int, level: float = LEVEL) -> dict[str, float]:
    """A budget claim's effect: the comparator's violation rate minus RACER-C's (``k_base``
    and ``k_claim`` runs over budget, of ``runs`` each) with :func:`newcombe`'s interval."""
    diff, lo, hi = newcombe(k_base, runs, k_claim, runs, level)
    return {"effect": diff, "k_base": k_base, "k_claim": k_claim, "runs": runs, "lo": lo, "hi": hi}


def against(records: pd.DataFrame, p: np.ndarray, q) -> np.ndarray:
    """Per-pair differences (points) of expected correctness between routing with ``p`` and
    with ``q`` (``pi(1|z)`` per pair, or a scalar rate for Random):
    ``100 (p_i - q_i) (r_i1 - r_i0)``."""
    r = correct_matrix(records)
    return 100 * (np.asarray(p, dtype=np.float64) - q) * (r[:, 1] - r[:, 0])


def null_control(
    records: pd.DataFrame,
    embeddings: np.ndarray,
    settings: train.TrainSettings,
    budget: float = 2.0,
    seed: int = 0,
) -> dict[str, Any]:
    """The negative control of Fig. 4's "RACER beats Random": RACER (the benchmark protocol,
    ``RACER-R`` at ``tau_R = 1``) trained at ``budget`` on the records' train split, against
    Random at its own reasoning rate on their test split (:func:`against`, :func:`paired`):
    ``effect``, ``lo``, ``hi`` (points) and ``leak = lo > 0``. On records whose embedding
    carries nothing about the modes' correctness (:func:`racer_lib.records.choices.
    null_simulator`) no router can beat Random beyond noise: a leak is a bug."""
    fit = experiments.fit(
        records, embeddings, [train.PolicyConfig(budget, seed=seed)], settings, store=False
    )
    test = (records["split"] == "test").to_numpy()
    p = fit.result.p_reasoning(embeddings[test])[0]
    out = paired(against(records[test], p, p.mean()))
    return {**out, "leak": bool(out["lo"] > 0)}


# ----------------------------------------------------------------------------------------
# One simulator point


def _baseline_decisions(
    fit: experiments.Fit, x: np.ndarray, budget: float, sizes: Sizes, seed: int
) -> dict[str, np.ndarray]:
    """Each score baseline fitted on ``fit.train``, thresholded on ``fit.valid`` at ``budget``
    (:func:`racer_lib.routing.baselines.match_budget`, as Table 2's chapter does), routing
    ``x``."""
    out = {}
    epochs = {
        "RouteLLM-MF": {"epochs": sizes.baseline_epochs, "batch_size": 256},
        "M-IRT": {"epochs": sizes.baseline_epochs},
    }
    x_valid = fit.valid.x.numpy()
    both = np.concatenate([x_valid, x])  # one scoring pass for the validation and test pairs
    for method in baselines.METHODS:
        router = baselines.make(method, seed=seed, **epochs.get(method, {}))
        router.fit(fit.train.x.numpy(), fit.train.r.numpy(), fit.train.c.numpy())
        scores = router.score(both)
        th = baselines.match_budget(scores[: len(x_valid)], fit.valid.c.numpy(), budget)
        out[method] = th.route(scores[len(x_valid) :]).astype(np.float64)
    return out


def accuracy_rows(
    sim: choices.Simulator,
    seed: int,
    sizes: Sizes,
    settings: train.TrainSettings,
    keys: Sequence[str] = tuple(CLAIMS),
) -> list:
    """The accuracy claims at one simulator and seed: RACER-R (β = 0.005) at ``budget`` and
    ``table_budget`` and at β = 0 and 0.05 at ``budget``, trained in one batch on the
    simulated training mixture; one row per claim and comparator (``versus``) of ``keys``."""
    sets = {}
    for name, recipe, scale in (
        ("mix", "training_mix", sizes.scale),
        ("ood", list(simulate.OOD_BENCHMARKS), sizes.benchmark_scale),
    ):
        sets[name] = simulate.simulate(
            sizes.judge, recipe, seed=seed, dim=sizes.dim, scale=scale, simulator=sim
        )
    records, emb = sets["mix"]
    C, T = sizes.budget, sizes.table_budget
    plan = [(C, 0.005), (T, 0.005), (C, 0.0), (C, 0.05)]
    configs = [train.PolicyConfig(b, seed=seed, beta=beta) for b, beta in plan]
    fit = experiments.fit(records, emb, configs, settings, store=False)
    test = (records["split"] == "test").to_numpy()
    test_recs, test_emb = records[test], emb[test]
    p = dict(zip(plan, fit.result.p_reasoning(test_emb), strict=True))
    p_ood = dict(zip(plan, fit.result.p_reasoning(sets["ood"][1]), strict=True))
    rows = []
    for b in (C, T):
        for key, recs, pp in (
            ("racer_vs_random_id", test_recs, p),
            ("racer_vs_random_ood", sets["ood"][0], p_ood),
        ):
            pb = pp[(b, 0.005)]
            rows.append(
                {
                    "claim": key,
                    "versus": f"Random (C = {b:g})",
                    **paired(against(recs, pb, pb.mean())),
                }
            )
    if "racer_most_accurate" in keys:
        for method, dec in _baseline_decisions(fit, test_emb, T, sizes, seed).items():
            rows.append(
                {
                    "claim": "racer_most_accurate",
                    "versus": method,
                    **paired(against(test_recs, p[(T, 0.005)], dec)),
                }
            )
    for key, beta in (("beta_zero_lowers", 0.0), ("beta_large_lowers", 0.05)):
        rows.append(
            {
                "claim": key,
                "versus": f"β = {beta:g}",
                **paired(against(test_recs, p[(C, 0.005)], p[(C, beta)])),
            }
        )
    return [r for r in rows if r["claim"] in keys]


def shift_rows_at(
    sim: choices.Simulator, seed: int, sizes: Sizes, settings: train.TrainSettings
) -> list[dict[str, Any]]:
    """Fig. 3(b) at one simulator and seed: ACER and RACER-C (``tau_c``), ``shift_runs``
    training runs each, trained on WildGuardMix and deployed on OffsetBias at ``budget``, and
    RACER-C's matched-spend controls (:func:`matched_spend`); a run violates when its
    OffsetBias cost (realized ratio) exceeds the budget, as in chapter 08."""
    kw = dict(seed=seed, dim=sizes.dim, scale=sizes.shift_scale, simulator=sim)
    records, emb = simulate.simulate(sizes.judge, "wildguardmix", **kw)
    test = simulate.simulate(sizes.judge, "offsetbias", **kw)
    seeds = experiments.seeds(seed * sizes.shift_runs, sizes.shift_runs)
    configs = [
        train.PolicyConfig(sizes.budget, seed=s, variant=v, tau_c=sizes.tau_c)
        for v in ("ACER", "RACER-C")
        for s in seeds
    ]
    fit = experiments.fit(records, emb, configs, settings, store=False)
    over = [
        evaluate.policy_point(test[0], p)["cost"] > sizes.budget
        for p in fit.result.p_reasoning(test[1])
    ]
    runs = sizes.shift_runs
    k_acer, k_c = int(sum(over[:runs])), int(sum(over[runs:]))
    k_ctl = matched_spend(fit, records, emb, settings, test)
    return [
        {"claim": "costlier_within_budget", "versus": "ACER", **counts(k_acer, k_c, runs)},
        {
            "claim": "matched_spend_control",
            "versus": "matched-spend ACER",
            **counts(k_ctl, k_c, runs),
        },
    ]


def matched_spend(
    fit: experiments.Fit,
    records: pd.DataFrame,
    embeddings: np.ndarray,
    settings: train.TrainSettings,
    test: tuple[pd.DataFrame, np.ndarray],
) -> int:
    """How many of ``fit``'s RACER-C runs' matched-spend controls exceed their budget on
    ``test``: ACER, same seed and split, trained at the budget the run spent on validation
    (:func:`racer_lib.paper.shift.control_budget`, the rule of
    :func:`racer_lib.paper.shift.matched_controls`, here without the router store)."""
    cheapest = float(fit.train.c.min(dim=1).values.mean())
    wanted = [
        (
            cfg.budget,
            train.PolicyConfig(
                shift.control_budget(pv["cost"], cfg.budget, cheapest),
                seed=cfg.seed,
                variant="ACER",
            ),
        )
        for cfg, pv in zip(fit.result.configs, shift.valid_points(fit), strict=True)
        if cfg.variant == "RACER-C"
    ]
    control = experiments.fit(records, embeddings, [w[1] for w in wanted], settings, store=False)
    p = control.result.p_reasoning(test[1])
    return int(
        sum(
            evaluate.policy_point(test[0], pi)["cost"] > b
            for (b, _), pi in zip(wanted, p, strict=True)
        )
    )


def run_design(
    points: pd.DataFrame,
    seeds: Sequence[int],
    sizes: Sizes,
    settings: train.TrainSettings,
    progress: bool = True,
) -> pd.DataFrame:
    """Every point of a :func:`design` at every seed (simulator and training seed alike): one
    row per point, seed, claim and comparator (``point``, ``seed``, ``claim``, ``versus``,
    ``effect``, ``lo``, ``hi`` and what pooling needs: ``sd``, ``n`` for accuracy claims,
    ``k_base``, ``k_claim``, ``runs`` for budget claims), then ``holds`` (``lo > 0``). The
    controls run :data:`CONTROL_CLAIMS` only."""
    import sys

    from tqdm import tqdm

    rows = []
    bar = tqdm(points.to_dict("records"), desc="simulators", disable=not progress, file=sys.stderr)
    for point in bar:
        sim = simulator_of(point)
        control = point["design"] == "control"
        for s in seeds:
            found = accuracy_rows(sim, s, sizes, settings, CONTROL_CLAIMS if control else CLAIMS)
            if not control:
                found += shift_rows_at(sim, s, sizes, settings)
            rows += [{"point": point["point"], "seed": s, **r} for r in found]
    runs = pd.DataFrame(rows)
    runs["holds"] = runs["lo"] > 0
    return runs


# ----------------------------------------------------------------------------------------
# Reading the runs


def _pool_group(g: pd.DataFrame, level: float) -> dict[str, float]:
    if g["k_base"].notna().all():
        return counts(int(g["k_base"].sum()), int(g["k_claim"].sum()), int(g["runs"].sum()), level)
    n, m = g["n"].to_numpy(float), g["effect"].to_numpy(float)
    total = n.sum()
    mean = float((n * m).sum() / total)
    ss = ((n - 1) * g["sd"].to_numpy(float) ** 2 + n * (m - mean) ** 2).sum()
    return _normal(mean, float(np.sqrt(ss / (total - 1))), int(total), level)


def pool(runs: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """:func:`run_design`'s rows pooled over seeds, then per point and claim its weakest
    comparison (lowest ``lo``): ``point``, ``claim``, ``versus``, ``effect``, ``lo``, ``hi``,
    ``holds`` (``lo > 0``: the pooled interval lies above zero), ``seeds``. Accuracy
    differences pool their pairs (pooled mean and sd); violation counts add up."""
    for col in ("k_base", "k_claim", "runs", "sd", "n"):
        if col not in runs:
            runs = runs.assign(**{col: np.nan})
    rows = []
    for (point, claim, versus), g in runs.groupby(["point", "claim", "versus"], sort=False):
        pooled = _pool_group(g, level)
        rows.append(
            {
                "point": point,
                "claim": claim,
                "versus": versus,
                "effect": pooled["effect"],
                "lo": pooled["lo"],
                "hi": pooled["hi"],
                "seeds": g["seed"].nunique(),
            }
        )
    frame = pd.DataFrame(rows)
    weakest = frame.loc[frame.groupby(["point", "claim"], sort=False)["lo"].idxmin()]
    weakest = weakest.assign(holds=weakest["lo"] > 0)
    return weakest.reset_index(drop=True)


def flip_threshold(values: Sequence[float], lows: Sequence[float]) -> float | None:
    """Where along a sweep (knob ``values``, sorted, with the pooled lower ends ``lows``) the
    verdict changes: the lower end of the interval interpolated linearly to zero between the
    two levels whose verdicts differ (the crossing nearest the middle of the sweep if several);
    ``None`` if the verdict is the same at every level."""
    x, lo = np.asarray(values, float), np.asarray(lows, float)
    crossings = []
    for i in range(len(x) - 1):
        if (lo[i] > 0) != (lo[i + 1] > 0):
            t = lo[i] / (lo[i] - lo[i + 1]) if np.isfinite(lo[i] - lo[i + 1]) else 0.5
            crossings.append(x[i] + t * (x[i + 1] - x[i]))
    if not crossings:
        return None
    middle = (x[0] + x[-1]) / 2
    return float(min(crossings, key=lambda c: abs(c - middle)))


def sweeps(points: pd.DataFrame, design_table: pd.DataFrame, claim: str) -> dict:
    """Each knob's one-at-a-time sweep of ``claim``: knob -> the :func:`pool` rows of its
    sweep points and the default, sorted by the knob's value (column ``value``)."""
    own = [c for c in points.columns if c == "point" or c not in design_table.columns]
    here = points.loc[points["claim"] == claim, own].merge(design_table, on="point")
    out = {}
    for knob in dict.fromkeys(design_table.loc[design_table["design"] == "sweep", "knob"]):
        sweep = here[(here["knob"] == knob) | (here["design"] == "default")]
        out[knob] = sweep.assign(value=sweep[knob]).sort_values("value")
    return out


def claim_robustness(points: pd.DataFrame, design_table: pd.DataFrame) -> pd.DataFrame:
    """Per claim (the contract of the reproduction report): ``key``, ``claim``,
    ``simulators`` (points of the plausible design, the controls left out), ``holds_in``,
    ``share``, ``depends_most_on`` (the knob whose one-at-a-time sweep moves the pooled effect
    over the widest range), ``flip_threshold`` (``"readable ≈ 0.15"`` along the knobs in that
    order, the first that flips; ``"no flip in range"``) and a one-line ``summary``."""
    plausible = design_table.loc[design_table["design"] != "control", "point"]
    rows = []
    for key, text in CLAIMS.items():
        here = points[(points["claim"] == key) & points["point"].isin(plausible)]
        if here.empty:
            continue
        by_knob = sweeps(points, design_table, key)
        ranges = {k: float(s["effect"].max() - s["effect"].min()) for k, s in by_knob.items()}
        order = sorted(ranges, key=lambda k: -ranges[k])
        flip = NO_FLIP
        for knob in order:
            at = flip_threshold(by_knob[knob]["value"], by_knob[knob]["lo"])
            if at is not None:
                flip = f"{knob} ≈ {at:.2g}"
                break
        n, k = len(here), int(here["holds"].sum())
        unit = UNITS[key]
        rows.append(
            {
                "key": key,
                "claim": text,
                "simulators": n,
                "holds_in": k,
                "share": k / n,
                "depends_most_on": order[0] if order else "",
                "flip_threshold": flip,
                "summary": f"holds in {k} of {n} simulators (simulated records); effect "
                f"{here['effect'].min():+.2g} to {here['effect'].max():+.2g} {unit}"
                + (f", moving most with {order[0]}" if order else "")
                + f"; {flip}",
            }
        )
    return pd.DataFrame(rows)


def with_knobs(table: pd.DataFrame, design_table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (rows with a ``point``) with each point's design, knob and knob values (a
    ``provenance`` column of ``design_table`` left out)."""
    design_table = design_table.drop(columns="provenance", errors="ignore")
    return design_table.merge(table, on="point", how="right")[
        [*design_table.columns, *[c for c in table.columns if c != "point"]]
    ]


# ----------------------------------------------------------------------------------------
# The figure


def sweep_panels(points: pd.DataFrame, design_table: pd.DataFrame) -> plt.Figure:
    """One panel per claim: the pooled effect (95 % interval as bars) along each knob's
    one-at-a-time sweep, the knob's value placed on [0, 1] across its range (low to high);
    filled markers where the claim holds, open where it does not; zero dashed."""
    ranges = {c.name: (c.low, c.high) for c in choices.CHOICES}
    keys = [k for k in CLAIMS if (points["claim"] == k).any()]
    ncols = 4
    nrows = -(-len(keys) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(10.5, 2.9 * nrows), squeeze=False)
    colors = dict(zip(choices.KNOBS, plt.cm.tab10(np.arange(len(choices.KNOBS))), strict=True))
    for ax, key in zip(axes.flat, keys):
        for knob, s in sweeps(points, design_table, key).items():
            lo, hi = ranges[knob]
            x = (s["value"] - lo) / (hi - lo)
            ax.errorbar(
                x,
                s["effect"],
                yerr=[s["effect"] - s["lo"], s["hi"] - s["effect"]],
                color=colors[knob],
                lw=1,
                capsize=2,
                label=knob,
            )
            ax.scatter(
                x,
                s["effect"],
                color=[colors[knob] if h else "white" for h in s["holds"]],
                edgecolor=colors[knob],
                zorder=3,
                s=22,
            )
        ax.axhline(0, color="grey", ls="--", lw=0.8)
        ax.set_title(SHORT[key], fontsize=9)
        ax.tick_params(labelsize=9)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    spare = list(axes.flat)[len(keys) :]
    (spare[0] if spare else fig).legend(
        handles, labels, loc="center", frameon=False, fontsize=9, title="SIMULATED: knob swept"
    )
    fig.supxlabel(
        "each knob's value, placed across its range (0: low end, 1: high end)", fontsize=9
    )
    fig.supylabel("effect on the claimed side (95 % interval)", fontsize=9)
    fig.subplots_adjust(hspace=0.45, wspace=0.45)
    return fig
