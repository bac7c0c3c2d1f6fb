"""The paper's own numbers, for the labelled comparison columns of the book's tables.

Each constant names the table of ``racer_paper.tex`` it is copied from. Nothing here enters a
computation: the chapters compute their values from records and print these beside them.
"""

from __future__ import annotations

#: Table ``tab:comp_adv_baselines`` (advanced baselines): accuracy (%) and cost per
#: (method, judge), averaged over JudgeBench, RewardBench and RewardBench 2 at budget C = 4.
ADVANCED_BASELINES_BUDGET = 4.0
ADVANCED_BASELINES: dict[tuple[str, str], tuple[float, float]] = {
    ("RouterBench-KNN", "qwen3-1.7b"): (71.3, 2.6),
    ("RouterBench-KNN", "qwen3-4b"): (84.1, 2.5),
    ("RouterBench-KNN", "qwen3-8b"): (86.8, 2.6),
    ("RouteLLM-MF", "qwen3-1.7b"): (69.4, 3.8),
    ("RouteLLM-MF", "qwen3-4b"): (84.7, 3.4),
    ("RouteLLM-MF", "qwen3-8b"): (88.2, 4.1),
    ("M-IRT", "qwen3-1.7b"): (71.6, 3.4),
    ("M-IRT", "qwen3-4b"): (84.3, 2.7),
    ("M-IRT", "qwen3-8b"): (88.9, 3.4),
    ("RACER", "qwen3-1.7b"): (72.2, 3.6),
    ("RACER", "qwen3-4b"): (85.8, 3.4),
    ("RACER", "qwen3-8b"): (90.0, 3.9),
}
