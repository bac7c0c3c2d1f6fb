"""racer_lib: the library behind the RACER companion book.

Modules are named after the paper's objects: ``records`` (judge records, cost unit),
``simulate`` (calibrated simulated records), ``dro`` (KL worst cases), ``theory`` (the tabular
primal–dual of the appendix), ``policy`` and ``train`` (routers and Algorithm 1),
``baselines`` (RouterBench-KNN, RouteLLM-MF, M-IRT, budget matching), ``evaluate`` (accuracy,
cost, agreement, curve metrics), ``prompts`` (judge prompts and answer parsing), ``data``
(manifest, fetching, JudgeBench and LLMBar loaders), ``embed`` (pair embeddings with a cache),
``plots`` (one figure style), ``pipeline`` (papermill runner) and ``cli``.
"""

__version__ = "0.1.0"
