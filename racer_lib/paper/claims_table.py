"""Every claim of the paper the reproduction report decides (:data:`CLAIMS`), as data: its
artifact, the claim with the paper's number (:mod:`racer_lib.paper.numbers`), the chapter that
tests it (a stem of the chapter registry, :mod:`racer_lib.paper.registry`), its rule
(:mod:`racer_lib.paper.claim_rules`) and, for an emergent claim chapter 16 re-runs over the
simulator's choices, its key there (``sensitivity``). No entry states a status or whether the
simulator was given it: the report computes both (:mod:`racer_lib.paper.given`). A table of
data: it may exceed the modules' size limit.
"""

from __future__ import annotations

from collections.abc import Iterable

from racer_lib.paper import effects as E
from racer_lib.paper import numbers as paper
from racer_lib.paper import registry as ch
from racer_lib.paper.claim_rules import (
    ACCURACY_TOLERANCE,
    RATIO_TOLERANCE,
    SEED,
    Bound,
    Claim,
    Difference,
    Equivalence,
    Excerpts,
    Finding,
    HalfCost,
    Identity,
    Level,
    MarginOverBest,
)

_QWEN3 = ("qwen3-1.7b", "qwen3-4b", "qwen3-8b")
_C = paper.ADVANCED_BASELINES_BUDGET
_CA = paper.ABLATION_BUDGET
_B0, _B1 = paper.TRAINING_CURVE_BUDGETS[0], paper.TRAINING_CURVE_BUDGETS[-1]
_OOD = ["judgebench", "rewardbench", "rewardbench2"]
_BASELINES = ("RouterBench-KNN", "RouteLLM-MF", "M-IRT")
_BETA = 0.005
_BUDGETS3 = (2.0, 3.0, 4.0)

_CHEAPER, _COSTLIER = "(a) cheaper shift", "(b) costlier shift"
#: The equivalence margin of "β = 0.005 and β = 0.01 perform alike" (accuracy points): the SESOI
#: of an accuracy difference between routers, as for "β = 0 lowers" and "β = 0.05 lowers", so
#: that no data set supports both readings.
_ALIKE = E.ROUTER_ACCURACY.sesoi
#: A count of pairs matches the paper's when it is equal (the margin of its TOST).
COUNT_TOLERANCE = 0.5


def _paper_list(values: Iterable[float], fmt: str = "g") -> str:
    return " / ".join(format(v, fmt) for v in values)


def _level(csv: str, column: str, cells, accuracy: bool) -> Level:
    """A level claim on paper cells: an accuracy within :data:`ACCURACY_TOLERANCE` points of
    the paper's, a cost within :data:`RATIO_TOLERANCE` of it (relative)."""
    return Level(
        csv,
        column,
        tuple(cells),
        tol=ACCURACY_TOLERANCE if accuracy else RATIO_TOLERANCE,
        relative=not accuracy,
        unit=" pts" if accuracy else "",
    )


def _domain_shares() -> str:
    """Table 4's shares per benchmark: ``judgebench 11.8 / ... (coding / ...)``."""
    parts = []
    for bench in dict.fromkeys(b for b, _ in paper.BENCHMARK_DOMAINS):
        cells = {d: v[1] for (b, d), v in paper.BENCHMARK_DOMAINS.items() if b == bench}
        parts.append(f"{bench} {_paper_list(cells.values())} ({' / '.join(cells)})")
    return "; ".join(parts)


def _domain_counts() -> str:
    """Table 4's counts per benchmark: ``judgebench 73 / 90 / ...``."""
    parts = []
    for bench in dict.fromkeys(b for b, _ in paper.BENCHMARK_DOMAINS):
        cells = [v[0] for (b, _), v in paper.BENCHMARK_DOMAINS.items() if b == bench]
        parts.append(f"{bench} {_paper_list(cells)}")
    return "; ".join(parts)


#: Every claim of the paper the report decides: each figure and table (every numeric cell of
#: its LaTeX tables, tests/test_claims_coverage.py), and each numbered or quantitative finding of
#: its text, in the paper's order. A claim's margins and tolerances are fixed here, before any
#: build runs; its test is the protocol of :mod:`racer_lib.evaluation.verdicts`.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 1(a)",
        "reasoning judges gain on difficult tasks at a higher cost, marginally on simple ones",
        ch.MOTIVATION,
        Finding(r"^\(a\)"),
    ),
    Claim(
        "Fig. 1(b)",
        "RACER stays within budget under OOD inputs where a standard router does not",
        ch.MOTIVATION,
        Finding(r"^\(b\)"),
    ),
    Claim(
        "Table 4",
        "domain shares of the OOD benchmarks (%): " + _domain_shares(),
        ch.MOTIVATION,
        Level(
            "benchmark_domains.csv",
            "share",
            tuple(
                ({"benchmark": b, "domain": d}, share)
                for (b, d), (_, share) in paper.BENCHMARK_DOMAINS.items()
            ),
        ),
    ),
    Claim(
        "Table 4",
        "domain counts of the OOD benchmarks (pairs): " + _domain_counts(),
        ch.MOTIVATION,
        Level(
            "benchmark_domains.csv",
            "pairs",
            tuple(
                ({"benchmark": b, "domain": d}, count)
                for (b, d), (count, _) in paper.BENCHMARK_DOMAINS.items()
            ),
            tol=COUNT_TOLERANCE,
            unit=" pairs",
        ),
    ),
    Claim(
        "Fig. 2 (upper)",
        "the largest gains of reasoning are in math and coding; safety and knowledge gain "
        "little or lose",
        ch.REASONING,
        Finding(r"gains more on math and coding", files="*findings*.csv"),
    ),
    Claim(
        "Fig. 2 (upper)",
        "reasoning is most cost-effective in math and coding: the accuracy it gains per extra "
        "token is largest there",
        ch.REASONING,
        Finding(r"^most cost-effective"),
    ),
    Claim(
        "Fig. 2 (lower)",
        "the headroom when the two modes disagree shrinks with model size",
        ch.REASONING,
        Finding(r"headroom", files="*findings*.csv"),
    ),
    Claim(
        "§2.1 text",
        "reasoning improves judge accuracy (ΔAccuracy > 0 over the three benchmarks)",
        ch.REASONING,
        Difference(
            "agreement_patterns.csv",
            "acc_reasoning",
            second_column="acc_instruct",
            effect=E.MODE_GAIN,
        ),
    ),
    Claim(
        "§2.1 text (LLMBar's released judges)",
        "reasoning improves judge accuracy: tested on real judges other than the paper's",
        ch.LLMBAR_JUDGES,
        Finding(r"^reasoning improves accuracy"),
    ),
    Claim(
        "§2.2 / Table 6",
        "case studies: reasoning helps on explicit verification, is redundant on surface cues, "
        "hurts when it widens the scope",
        ch.JUDGING,
        Excerpts(judges=_QWEN3),
    ),
    Claim(
        "Thm. 3.1",
        "the KL worst case has the closed (tilted) form: it equals the convex solver's optimum "
        "(relative gap < 1e-6)",
        ch.THEORY,
        Identity(
            Bound(
                "thm31_exact_vs_cvxpy.csv",
                ("objective_rel_gap",),
                agg="max",
                op="<",
                threshold=1e-6,
            )
        ),
    ),
    Claim(
        "Thm. 4.1",
        "the regularised Lagrangian is strictly concave in π (midpoint margin > 0)",
        ch.THEORY,
        Identity(Bound("thm41_checks.csv", ("min_concavity_margin",))),
    ),
    Claim(
        "Thm. 4.1",
        "its saddle point is unique: the dual iteration reaches one limit from every start "
        "(spread < 1e-6)",
        ch.THEORY,
        Identity(Bound("thm41_checks.csv", ("limit_spread",), agg="max", op="<", threshold=1e-6)),
    ),
    Claim(
        "Thm. 4.2",
        "the primal–dual iterates converge linearly: errors stay under the theorem's bounds "
        "(checked where the bound is informative, q <= 0.9; at the paper's β = "
        f"{_BETA:g} its 1 − q is about 4e-5, a near-vacuous bound)",
        ch.THEORY,
        Identity(
            Bound("thm42_rates.csv", ("under_bound_lambda", "under_bound_kl"), agg="all"),
            context=Bound("thm42_paper_beta.csv", ("one_minus_q",), agg="max", op="<", threshold=1),
            context_label=f"at the paper's β = {_BETA:g} (near-vacuous): ",
        ),
    ),
    Claim(
        "Table 1",
        "cost ratios of the Skywork subsets: "
        + _paper_list(r for _, r in paper.DATASET_STATISTICS.values())
        + " (Magpie Ultra / WildGuardMix / OffsetBias)",
        ch.ROBUSTNESS,
        Level(
            "dataset_statistics.csv",
            "cost_ratio",
            tuple(({"subset": s}, r) for s, (_, r) in paper.DATASET_STATISTICS.items()),
            tol=RATIO_TOLERANCE,
            relative=True,
            unit="",
        ),
    ),
    Claim(
        "Table 1",
        "pairs of the Skywork subsets: "
        + _paper_list(n for n, _ in paper.DATASET_STATISTICS.values())
        + " (Magpie Ultra / WildGuardMix / OffsetBias)",
        ch.ROBUSTNESS,
        Level(
            "dataset_statistics.csv",
            "pairs",
            tuple(({"subset": s}, n) for s, (n, _) in paper.DATASET_STATISTICS.items()),
            tol=COUNT_TOLERANCE,
            unit=" pairs",
        ),
    ),
    Claim(
        "Fig. 3(a)",
        f"cheaper shift (C = {_CA:g}): every method stays within budget (mean OOD cost at most "
        f"{100 * RATIO_TOLERANCE:g} % over C, every method)",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "cost",
            second_column="budget",
            relative=True,
            where={"scenario": _CHEAPER},
            members=("method",),
            sign=-1,
            unit=" (cost / C - 1)",
            effect=E.OVERSPEND,
            bound=True,
        ),
    ),
    Claim(
        "Fig. 3(a)",
        "cheaper shift: RACER-R has the highest reward of every method",
        ch.ROBUSTNESS,
        Finding(r"^cheaper shift: RACER-R has the highest reward"),
        sensitivity="ablation_racer_r_highest",
        null="embedding",
    ),
    Claim(
        "Fig. 3(a)",
        "cheaper shift: stronger robustness (τ = 0.1 rather than 1) gains further accuracy",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "accuracy",
            {"variant": "RACER-R", "tau": 0.1},
            {"variant": "RACER-R", "tau": 1.0},
            where={"scenario": _CHEAPER},
            effect=E.ROUTER_ACCURACY,
        ),
        sensitivity="ablation_tau_gains",
        null="embedding",
    ),
    Claim(
        "Fig. 3 (text)",
        "RACER variants are more robust in reward than ACER: under the cheaper shift RACER-R "
        "(every τ pooled) is more accurate than ACER",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "accuracy",
            {"variant": "RACER-R"},
            {"variant": "ACER"},
            where={"scenario": _CHEAPER},
            effect=E.ROUTER_ACCURACY,
        ),
        sensitivity="ablation_reward_robust",
        null="embedding",
    ),
    Claim(
        "Fig. 3(b)",
        "costlier shift: RACER-C (τ = 0.1) is less accurate than ACER",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "accuracy",
            {"variant": "ACER"},
            {"variant": "RACER-C", "tau": 0.1},
            where={"scenario": _COSTLIER},
            effect=E.ROUTER_ACCURACY,
        ),
        sensitivity="ablation_racer_c_less_accurate",
    ),
    Claim(
        "Fig. 3(b)",
        "costlier shift: RACER-C consistently stays within budget (mean OOD cost at most "
        f"{100 * RATIO_TOLERANCE:g} % over C, every τ_C)",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "cost",
            second_column="budget",
            relative=True,
            where={"scenario": _COSTLIER, "variant": "RACER-C"},
            members=("tau",),
            sign=-1,
            unit=" (cost / C - 1)",
            effect=E.OVERSPEND,
            bound=True,
        ),
        sensitivity="ablation_racer_c_within",
    ),
    Claim(
        "Fig. 3(b)",
        "costlier shift: RACER-C's cost lies below RACER-R's (every τ pooled)",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "cost",
            {"variant": "RACER-R"},
            {"variant": "RACER-C"},
            where={"scenario": _COSTLIER},
            unit=" cost units",
            effect=E.COST_GAP,
        ),
        sensitivity="ablation_racer_c_below_r",
    ),
    Claim(
        "Fig. 3 (text)",
        "RACER variants are more robust in cost than ACER: under the costlier shift RACER-C "
        "exceeds the budget less often than ACER (share of runs over budget, every τ pooled)",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "violated",
            {"variant": "RACER-C"},
            {"variant": "ACER"},
            where={"scenario": _COSTLIER},
            sign=-1,
            unit=" (share of runs over budget)",
            effect=E.VIOLATIONS,
        ),
        sensitivity="ablation_fewer_violations",
    ),
    Claim(
        "Fig. 3 (matched-spend control)",
        "costlier shift: RACER-C beats the matched-spend control (fewer budget violations than "
        "ACER trained at the budget it spent, at equal accuracy); the ablation trains ACER, "
        "RACER-R and RACER-C, as the paper's Fig. 3 does",
        ch.ROBUSTNESS,
        Finding(r"^costlier shift: RACER-C beats the matched-spend control"),
        sensitivity="matched_spend_control",
    ),
    Claim(
        "Fig. 3 (LLMBar's released judges, real shift)",
        "the variants that reweight cost (RACER-C, RACER) beat the matched-spend control under a "
        "real subset shift: tested on real judges other than the paper's",
        ch.LLMBAR_SHIFT,
        Finding(r"^RACER(?:-C)?[ :].*beats the matched-spend control"),
    ),
    Claim(
        "Fig. 4",
        "on the in-distribution test split RACER is more accurate than Random at the same "
        "reasoning rate",
        ch.FRONTIER,
        Difference(
            "frontier_runs.csv",
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("judge", "budget", SEED),
            where={"set": "test"},
            effect=E.SELECTION_GAIN,
        ),
        sensitivity="frontier_random_id",
        null="embedding",
        planted=True,
    ),
    Claim(
        "Fig. 4",
        "on the OOD benchmarks RACER keeps a consistent gain over Random (every judge and "
        "benchmark)",
        ch.FRONTIER,
        Difference(
            "frontier_runs.csv",
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("judge", "set", "budget", SEED),
            where={"set": _OOD},
            members=("judge", "set"),
            effect=E.SELECTION_GAIN,
        ),
        sensitivity="frontier_random_ood",
        null="embedding",
        planted=True,
    ),
    Claim(
        "Fig. 4",
        "on the OOD benchmarks RACER improves over All-Instruct (every judge and benchmark)",
        ch.FRONTIER,
        Finding(r"^improves over All-Instruct"),
    ),
    Claim(
        "Fig. 4",
        "on the OOD benchmarks RACER's cost stays within its budget (mean cost at most "
        f"{100 * RATIO_TOLERANCE:g} % over C)",
        ch.FRONTIER,
        Difference(
            "frontier_runs.csv",
            "cost",
            second_column="budget",
            relative=True,
            where={"method": "RACER", "set": _OOD},
            sign=-1,
            unit=" (cost / C - 1)",
            effect=E.OVERSPEND,
            bound=True,
        ),
        sensitivity="frontier_ood_within",
    ),
    Claim(
        "Fig. 4",
        "RACER's frontier lies above Random's chord: the area between them is positive on "
        "every split",
        ch.FRONTIER,
        Difference(
            "area_above_random.csv",
            "area_above_random",
            members=("judge", "set"),
            unit=" pts x cost",
            effect=E.SELECTION_AREA,
        ),
        sensitivity="frontier_area",
        null="embedding",
        planted=True,
    ),
    Claim(
        "Fig. 4",
        "RACER's accuracy-cost frontier is concave: each extra unit of budget buys less accuracy",
        ch.FRONTIER,
        Finding(r"^concave frontier"),
        null="embedding",
    ),
    Claim(
        "Fig. 4 (LLMBar's released judges)",
        "RACER is more accurate than Random: tested on real judges other than the paper's",
        ch.LLMBAR_ROUTING,
        Difference(
            "llmbar_routing_runs.csv",
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("split_by", "judge", "budget", SEED),
            effect=E.SELECTION_GAIN,
        ),
    ),
    Claim(
        "§5.3 text",
        f"at about {paper.FRONTIER_HALF_COST:g} x the All-Reasoning cost RACER matches "
        f"All-Reasoning's accuracy (within {E.ROUTER_ACCURACY.sesoi:g} pt; train and test splits)",
        ch.FRONTIER,
        HalfCost(),
    ),
    Claim(
        "§5.3 text",
        f"at about {paper.FRONTIER_HALF_COST:g} x the All-Reasoning cost RACER often surpasses "
        "All-Reasoning's accuracy (on most judges and splits)",
        ch.FRONTIER,
        Finding(r"^often surpasses All-Reasoning"),
    ),
    Claim(
        "Table 9 / §A text",
        "RACER achieves a better accuracy-cost trade-off than self-routing: at half the cost of "
        "self-routing, which spends as much as All-Reasoning (Table 9), RACER is as accurate "
        f"(Qwen3-4B, test split, within {E.ROUTER_ACCURACY.sesoi:g} pt)",
        ch.FRONTIER,
        HalfCost(sets=("test",), judges=("qwen3-4b",)),
    ),
    Claim(
        "Table 2",
        f"RACER is the most accurate method at C = {_C:g} for every judge",
        ch.BASELINES,
        Finding(r"RACER is the most accurate"),
        sensitivity="baselines_most_accurate",
    ),
    Claim(
        "Table 2",
        f"RACER stays within C = {_C:g} (mean OOD cost at most {100 * RATIO_TOLERANCE:g} % "
        "over C, every judge)",
        ch.BASELINES,
        Difference(
            "baselines_runs.csv",
            "cost",
            second_column="budget",
            relative=True,
            where={"method": "RACER", "budget": _C, "set": _OOD},
            members=("judge",),
            sign=-1,
            unit=" (cost / C - 1)",
            effect=E.OVERSPEND,
            bound=True,
        ),
    ),
    *(
        Claim(
            "Table 2",
            f"{m}'s {quantity}: "
            + _paper_list(paper.ADVANCED_BASELINES[m, j][k] for j in _QWEN3)
            + (" %" if k == 0 else "")
            + " (Qwen3-1.7B / 4B / 8B; mean over the three OOD benchmarks)",
            ch.BASELINES,
            _level(
                "baselines_runs.csv",
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
        + _paper_list(paper.ADVANCED_BASELINES_MARGINS.values(), ".2f")
        + " points (1.7B / 4B / 8B)",
        ch.BASELINES,
        MarginOverBest(where={"budget": _C, "set": _OOD}),
    ),
    Claim(
        "Table 3",
        "removing the entropy term (β = 0) lowers accuracy at the tightest budget C = 2",
        ch.BETA,
        Difference(
            "beta_runs.csv",
            "accuracy",
            {"beta": _BETA},
            {"beta": 0.0},
            where={"budget": 2.0},
            effect=E.ROUTER_ACCURACY,
        ),
        sensitivity="beta_zero_lowers",
    ),
    Claim(
        "Table 3",
        f"β = 0.005 and β = 0.01 perform alike (within ±{_ALIKE:g} pt at every budget)",
        ch.BETA,
        Equivalence(
            "beta_runs.csv",
            "accuracy",
            {"beta": 0.01},
            {"beta": _BETA},
            pair_on=("budget", SEED),
            members=("budget",),
            margin=_ALIKE,
            effect=E.ROUTER_ACCURACY,
        ),
        sensitivity="beta_alike",
    ),
    Claim(
        "Table 3",
        "β = 0.05 lowers accuracy (every budget)",
        ch.BETA,
        Difference(
            "beta_runs.csv",
            "accuracy",
            {"beta": _BETA},
            {"beta": 0.05},
            pair_on=("budget", SEED),
            members=("budget",),
            effect=E.ROUTER_ACCURACY,
        ),
        sensitivity="beta_large_lowers",
    ),
    *(
        Claim(
            "Table 3",
            f"RACER's {quantity} at β = {b:g}: "
            + _paper_list(paper.BETA_SENSITIVITY[b, c][k] for c in _BUDGETS3)
            + (" %" if k == 0 else "")
            + " (C = 2 / 3 / 4)",
            ch.BETA,
            _level(
                "beta_runs.csv",
                quantity,
                tuple(
                    ({"beta": b, "budget": c}, paper.BETA_SENSITIVITY[b, c][k]) for c in _BUDGETS3
                ),
                accuracy=k == 0,
            ),
        )
        for b in (0.0, _BETA, 0.01, 0.05)
        for k, quantity in enumerate(("accuracy", "cost"))
    ),
    Claim(
        "Fig. 5",
        f"λ grows under the tight budget B = {_B0:g} and collapses towards zero at B = {_B1:g} "
        "(last epoch, paired on seed)",
        ch.DYNAMICS,
        Difference(
            "training_history.csv",
            "lambda",
            {"budget": _B0},
            {"budget": _B1},
            unit="",
            final="epoch",
            effect=E.LAMBDA,
        ),
    ),
    Claim(
        "Fig. 5",
        f"the training cost is driven to the budget: final cost within ±10 % of B = {_B0:g}",
        ch.DYNAMICS,
        Equivalence(
            "training_history.csv",
            "train_cost",
            second_column="budget",
            relative=True,
            where={"budget": _B0},
            final="epoch",
            unit=" (cost / B - 1)",
            effect=E.TRAINING_COST,
        ),
    ),
    Claim(
        "Fig. 5",
        "the training reward increases monotonically over the epochs",
        ch.DYNAMICS,
        Finding(r"^reward increases monotonically"),
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER is more accurate than Random at matched cost at every budget",
        ch.LLAMA,
        Difference(
            "llama_runs.csv",
            "racer_accuracy",
            second_column="random_at_cost_accuracy",
            members=("budget",),
            effect=E.SELECTION_GAIN,
        ),
        sensitivity="llama_vs_random",
        null="embedding",
        planted=True,
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER often surpasses All-Reasoning's accuracy at lower cost (at most "
        "budgets)",
        ch.LLAMA,
        Finding(r"surpasses All-Reasoning"),
    ),
    *(
        Claim(
            "Table 7",
            f"Llama pair: {mode}'s {quantity} "
            + format(paper.LLAMA_FAMILY_ENDPOINTS[mode][k], "g")
            + (" %" if k == 0 else "")
            + " (on each seed's record draw)",
            ch.LLAMA,
            _level(
                "llama_runs.csv",
                f"{prefix}_{quantity}",
                (({}, paper.LLAMA_FAMILY_ENDPOINTS[mode][k]),),
                accuracy=k == 0,
            ),
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
            + _paper_list(v[k] for v in paper.LLAMA_FAMILY.values())
            + (" %" if "accuracy" in name else "")
            + " at C = "
            + _paper_list(paper.LLAMA_FAMILY)
            + ("" if k < 2 else " (here: Random at RACER's reasoning rate)"),
            ch.LLAMA,
            _level(
                "llama_runs.csv",
                column,
                tuple(({"budget": c}, v[k]) for c, v in paper.LLAMA_FAMILY.items()),
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
    Claim(
        "Table 9",
        "self-routing reasons on nearly every pair: "
        + _paper_list(v[0] for v in paper.SELF_ROUTING.values())
        + " % (1.7B / 4B / 8B)",
        ch.SELF_ROUTING,
        Finding(r"reasons on more than"),
    ),
    Claim(
        "Table 9",
        "self-routing's accuracy equals All-Reasoning's: "
        + _paper_list(v[3] for v in paper.SELF_ROUTING.values())
        + " vs "
        + _paper_list(v[2] for v in paper.SELF_ROUTING.values())
        + " %",
        ch.SELF_ROUTING,
        Finding(r"accuracy is within"),
    ),
    *(
        Claim(
            "Table 9",
            f"{name} on the training mixture: "
            + _paper_list(v[k] for v in paper.SELF_ROUTING.values())
            + (" %" if k < 4 else "")
            + " (1.7B / 4B / 8B)",
            ch.SELF_ROUTING,
            _level(
                "self_routing_table.csv",
                column,
                tuple(
                    ({"judge": j, "set": "training_mix"}, v[k])
                    for j, v in paper.SELF_ROUTING.items()
                ),
                accuracy=k < 4,
            ),
        )
        for k, name, column in (
            (1, "All-Instruct's accuracy", "acc_all_instruct"),
            (2, "All-Reasoning's accuracy", "acc_all_reasoning"),
            (4, "cost ratio of reasoning", "cost_all_reasoning"),
        )
    ),
    Claim(
        "§7 (conclusion)",
        "large uncertainty calls for conservative routing: stronger cost robustness (smaller "
        "τ_C) lowers the reasoning rate (RACER-C, τ_C = 0.1 against 1, both shifts)",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "reasoning_rate",
            {"variant": "RACER-C", "tau": 0.1},
            {"variant": "RACER-C", "tau": 1.0},
            pair_on=("scenario", SEED),
            sign=-1,
            unit=" (reasoning rate)",
            effect=E.REASONING_RATE,
        ),
        sensitivity="conservative_routing",
    ),
)
