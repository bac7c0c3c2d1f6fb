"""One module per chapter of the book: the recipes, findings, tables and figures that only that
chapter uses (a function a second chapter needs moves down to a shared module of its layer).

Each module is named after its notebook's stem without the number: ``judging`` (02),
``motivation_and_benchmarks`` (03, Fig. 1), ``reasoning_vs_instruct`` (04, Fig. 2),
``dro_theory`` (05, Theorems 3.1, 4.1, 4.2), ``training_dynamics`` (06, Fig. 5),
``budget_frontier`` (07, Fig. 4), ``robustness_ablation`` (08, Table 1, Fig. 3),
``beta_sensitivity`` (09, Table 3), ``advanced_baselines`` (10, Table 2), ``self_routing`` (11,
Table 9), ``llama_family`` (12, Table 7), ``llmbar_judges`` (13), ``llmbar_routing`` (14),
``llmbar_shift`` (15), ``simulator_sensitivity`` (16, how the simulated verdicts depend on
the simulator's choices) and ``keeping_the_budget`` (18, beyond the paper: the budget kept
online by :class:`racer_lib.routing.pacing.BudgetPacer`; its claims are the companion's own).
The reproduction report (01) is :mod:`racer_lib.paper.report`. The modules are independent of
each other (an import-linter contract).
"""
