"""Every claim of the paper the reproduction report decides (:data:`CLAIMS`), as data: its
artifact, the claim with the paper's number (:mod:`racer_lib.paper.numbers`), the chapter that
tests it (a stem of the chapter registry, :mod:`racer_lib.paper.registry`) and its rule
(:mod:`racer_lib.paper.claim_rules`). A table of data: it may exceed the modules' size limit.
"""

from __future__ import annotations

from collections.abc import Iterable

from racer_lib.paper import numbers as paper
from racer_lib.paper import registry as ch
from racer_lib.paper.claim_rules import (
    ACCURACY_TOLERANCE,
    RATIO_TOLERANCE,
    Bound,
    Claim,
    Difference,
    Finding,
    HalfCost,
    Level,
    MarginOverBest,
    Unavailable,
)

NEEDS_QWEN3 = (
    "needs the paper's own judge records (40k pairs judged by the Qwen3 / Llama pairs on a "
    "GPU, profile paper): the simulated records are calibrated to the judges' endpoints, "
    "not to a router's accuracy"
)

_QWEN3 = ("qwen3-1.7b", "qwen3-4b", "qwen3-8b")
_C = paper.ADVANCED_BASELINES_BUDGET
_CA = paper.ABLATION_BUDGET
_B0, _B1 = paper.TRAINING_CURVE_BUDGETS[0], paper.TRAINING_CURVE_BUDGETS[-1]
_OOD = ["judgebench", "rewardbench", "rewardbench2"]


def _paper_list(values: Iterable[float], fmt: str = "g") -> str:
    return " / ".join(format(v, fmt) for v in values)


#: Every claim of the paper the report decides: each figure and table, and each numbered or
#: quantitative finding of its text, in the paper's order.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Fig. 1(a)",
        "reasoning judges gain on difficult tasks at a higher cost, marginally on simple ones",
        ch.MOTIVATION,
        Finding(r"^\(a\)"),
        calibrated=True,
    ),
    Claim(
        "Fig. 1(b)",
        "RACER stays within budget under OOD inputs where a standard router does not",
        ch.MOTIVATION,
        Finding(r"^\(b\)"),
    ),
    Claim(
        "Table 4",
        "domain distribution of the OOD benchmarks (JudgeBench, RewardBench, RewardBench 2)",
        ch.MOTIVATION,
        Finding(r".", files="benchmark_domains.csv", column="domain"),
        calibrated=True,
    ),
    Claim(
        "Fig. 2 (upper)",
        "the largest gains of reasoning are in math and coding; safety and knowledge gain "
        "little or lose",
        ch.REASONING,
        Finding(r"math and coding", files="*findings*.csv"),
        calibrated=True,
    ),
    Claim(
        "Fig. 2 (lower)",
        "the headroom when the two modes disagree shrinks with model size",
        ch.REASONING,
        Finding(r"headroom", files="*findings*.csv"),
        calibrated=True,
    ),
    Claim(
        "§2.1 text",
        "reasoning improves judge accuracy (ΔAccuracy > 0 over the three benchmarks)",
        ch.REASONING,
        Difference("agreement_patterns.csv", "acc_reasoning", second_column="acc_instruct"),
        calibrated=True,
    ),
    Claim(
        "§2.1 text (LLMBar's released judges)",
        "reasoning improves judge accuracy: tested on real judges other than the paper's",
        ch.LLMBAR_JUDGES,
        Difference(
            "delta_accuracy_by_judge.csv",
            "acc_reasoning",
            second_column="acc_instruct",
            where={"order": "original"},
        ),
    ),
    Claim(
        "§2.2 / Table 6",
        "case studies: reasoning helps on explicit verification, is redundant on surface cues, "
        "hurts when it widens the scope",
        ch.JUDGING,
        Unavailable(
            "a qualitative reading of excerpts; chapter 02 shows excerpts of the small judge "
            "it runs, not the paper's Qwen3 outputs, and no rule decides a case study"
        ),
    ),
    Claim(
        "Thm. 3.1",
        "the KL worst case has the closed (tilted) form: it equals the convex solver's optimum "
        "(relative gap < 1e-6)",
        ch.THEORY,
        Bound(
            "thm31_exact_vs_cvxpy.csv", ("objective_rel_gap",), agg="max", op="<", threshold=1e-6
        ),
    ),
    Claim(
        "Thm. 4.1",
        "the regularised Lagrangian is strictly concave in π (midpoint margin > 0)",
        ch.THEORY,
        Bound("thm41_checks.csv", ("min_concavity_margin",)),
    ),
    Claim(
        "Thm. 4.1",
        "its saddle point is unique: the dual iteration reaches one limit from every start "
        "(spread < 1e-6)",
        ch.THEORY,
        Bound("thm41_checks.csv", ("limit_spread",), agg="max", op="<", threshold=1e-6),
    ),
    Claim(
        "Thm. 4.2",
        "the primal–dual iterates converge linearly: errors stay under the theorem's bounds",
        ch.THEORY,
        Bound("thm42_rates.csv", ("under_bound_lambda", "under_bound_kl"), agg="all"),
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
        ),
        calibrated=True,
    ),
    Claim(
        "Fig. 3(a)",
        f"cheaper shift (C = {_CA:g}): every method stays within budget in every run",
        ch.ROBUSTNESS,
        Finding(r"cheaper shift: every run"),
    ),
    Claim(
        "Fig. 3(a)",
        "cheaper shift: RACER-R (τ = 0.1) is more accurate than ACER",
        ch.ROBUSTNESS,
        Difference(
            "ablation_runs.csv",
            "accuracy",
            {"variant": "RACER-R", "tau": 0.1},
            {"variant": "ACER"},
            where={"scenario": "(a) cheaper shift"},
        ),
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
            where={"scenario": "(a) cheaper shift"},
        ),
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
            where={"scenario": "(b) costlier shift"},
        ),
    ),
    Claim(
        "Fig. 3(b)",
        "costlier shift: RACER-C keeps the OOD cost within budget more often than ACER",
        ch.ROBUSTNESS,
        Finding(r"costlier shift: RACER-C stays within budget"),
    ),
    Claim(
        "Fig. 3 (matched-spend control)",
        "costlier shift: the robust variants beat the matched-spend control (fewer budget "
        "violations than ACER trained at the budget they spent, at equal accuracy)",
        ch.ROBUSTNESS,
        Finding(r"costlier shift.*beats the matched-spend control"),
    ),
    Claim(
        "Fig. 3 (LLMBar's released judges, real shift)",
        "robust variants beat the matched-spend control under a real subset shift: tested on "
        "real judges other than the paper's",
        ch.LLMBAR_SHIFT,
        Finding(r"beats the matched-spend control"),
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
            pair_on=("judge", "budget", "seed"),
            where={"set": "test"},
        ),
    ),
    Claim(
        "Fig. 4",
        "on the OOD benchmarks RACER keeps a consistent gain over Random",
        ch.FRONTIER,
        Difference(
            "frontier_runs.csv",
            "accuracy",
            {"method": "RACER"},
            {"method": "Random"},
            pair_on=("judge", "set", "budget", "seed"),
            where={"set": _OOD},
        ),
    ),
    Claim(
        "Fig. 4",
        "RACER's frontier lies above Random's chord: the area between them is positive on "
        "every split",
        ch.FRONTIER,
        Bound("area_above_random.csv", ("area_above_random",)),
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
            pair_on=("split_by", "judge", "budget", "seed"),
        ),
    ),
    Claim(
        "§5.3 text",
        f"at about {paper.FRONTIER_HALF_COST:g} x the All-Reasoning cost RACER matches "
        f"All-Reasoning's accuracy (within {ACCURACY_TOLERANCE:g} pt; train and test splits)",
        ch.FRONTIER,
        HalfCost(),
    ),
    Claim(
        "Table 2",
        f"RACER is the most accurate method at C = {_C:g} for every judge",
        ch.BASELINES,
        Finding(r"RACER is the most accurate"),
    ),
    Claim(
        "Table 2",
        f"every method stays within C = {_C:g} (mean OOD cost)",
        ch.BASELINES,
        Finding(r"mean OOD cost within"),
    ),
    Claim(
        "Table 2",
        "RACER's accuracy: "
        + _paper_list(paper.ADVANCED_BASELINES["RACER", j][0] for j in _QWEN3)
        + " % (Qwen3-1.7B / 4B / 8B)",
        ch.BASELINES,
        Level(
            "advanced_baselines_table.csv",
            "accuracy",
            tuple(
                ({"method": "RACER", "judge": j}, paper.ADVANCED_BASELINES["RACER", j][0])
                for j in _QWEN3
            ),
            sd_column="accuracy_sd",
        ),
        needs=NEEDS_QWEN3,
    ),
    Claim(
        "§5.4 text",
        "RACER improves over the strongest baseline by "
        + _paper_list(paper.ADVANCED_BASELINES_MARGINS.values(), ".2f")
        + " points (1.7B / 4B / 8B)",
        ch.BASELINES,
        MarginOverBest(),
        needs=NEEDS_QWEN3,
    ),
    Claim(
        "Table 3",
        "removing the entropy term (β = 0) lowers accuracy at the tightest budget C = 2",
        ch.BETA,
        Difference(
            "beta_runs.csv", "accuracy", {"beta": 0.005}, {"beta": 0.0}, where={"budget": 2.0}
        ),
    ),
    Claim(
        "Table 3",
        "β = 0.005 and β = 0.01 perform alike",
        ch.BETA,
        Finding(r"perform alike"),
    ),
    Claim(
        "Table 3",
        "β = 0.05 lowers accuracy (every budget)",
        ch.BETA,
        Difference(
            "beta_runs.csv", "accuracy", {"beta": 0.005}, {"beta": 0.05}, pair_on=("budget", "seed")
        ),
    ),
    Claim(
        "Table 3",
        "RACER's accuracy at β = 0.005: "
        + _paper_list(paper.BETA_SENSITIVITY[0.005, c][0] for c in (2.0, 3.0, 4.0))
        + " % (C = 2 / 3 / 4)",
        ch.BETA,
        Level(
            "beta_table.csv",
            "accuracy_mean",
            tuple(
                ({"beta": 0.005, "budget": c}, paper.BETA_SENSITIVITY[0.005, c][0])
                for c in (2.0, 3.0, 4.0)
            ),
            sd_column="accuracy_sd",
        ),
        needs=NEEDS_QWEN3,
    ),
    Claim(
        "Fig. 5",
        f"λ grows under the tight budget B = {_B0:g} and collapses towards zero at B = {_B1:g}",
        ch.DYNAMICS,
        Difference(
            "training_summary.csv",
            "final_lambda",
            {"budget": _B0},
            {"budget": _B1},
            pair_on=(),
            unit="",
        ),
    ),
    Claim(
        "Fig. 5",
        f"the training cost is driven to the budget: final cost within 10 % of B = {_B0:g}",
        ch.DYNAMICS,
        Level(
            "training_summary.csv",
            "final_train_cost",
            (({"budget": _B0}, _B0),),
            tol=0.10,
            relative=True,
        ),
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER is more accurate than Random at matched cost at every budget",
        ch.LLAMA,
        Difference("llama_runs.csv", "racer_accuracy", second_column="random_at_cost_accuracy"),
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER often surpasses All-Reasoning's accuracy at lower cost",
        ch.LLAMA,
        Finding(r"reaches All-Reasoning accuracy"),
    ),
    Claim(
        "Table 7",
        "Llama pair endpoints: All-Instruct "
        + _paper_list(v[0] for v in paper.LLAMA_FAMILY_ENDPOINTS.values())
        + " % (All-Instruct / All-Reasoning)",
        ch.LLAMA,
        Level(
            "llama_table.csv",
            "accuracy_mean",
            tuple(({"method": m}, v[0]) for m, v in paper.LLAMA_FAMILY_ENDPOINTS.items()),
        ),
        calibrated=True,
    ),
    Claim(
        "Table 7",
        "Llama pair: RACER's accuracy "
        + _paper_list(v[0] for v in paper.LLAMA_FAMILY.values())
        + " % at C = "
        + _paper_list(paper.LLAMA_FAMILY),
        ch.LLAMA,
        Level(
            "llama_table.csv",
            "accuracy_mean",
            tuple(({"method": "RACER", "budget": c}, v[0]) for c, v in paper.LLAMA_FAMILY.items()),
            sd_column="accuracy_sd",
        ),
        needs=NEEDS_QWEN3,
    ),
    Claim(
        "Table 9",
        "self-routing reasons on nearly every pair: "
        + _paper_list(v[0] for v in paper.SELF_ROUTING.values())
        + " % (1.7B / 4B / 8B)",
        ch.SELF_ROUTING,
        Finding(r"reasons on more than"),
        calibrated=True,
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
        calibrated=True,
    ),
    Claim(
        "Table 9",
        "cost ratio of reasoning on the training mixture: "
        + _paper_list(v[4] for v in paper.SELF_ROUTING.values())
        + " (1.7B / 4B / 8B)",
        ch.SELF_ROUTING,
        Level(
            "self_routing_table.csv",
            "cost_all_reasoning",
            tuple(
                ({"judge": j, "set": "training_mix"}, v[4]) for j, v in paper.SELF_ROUTING.items()
            ),
            tol=RATIO_TOLERANCE,
            relative=True,
        ),
        calibrated=True,
    ),
)
