"""racer_lib: the library behind the RACER companion book.

Modules are named after the paper's objects: ``records`` (judge records, cost unit),
``simulate`` (calibrated simulated records), ``sets`` (one judge's set of pairs, simulated or
read, and its train / valid / test split), ``dro`` (KL worst cases), ``theory`` (the tabular
primal–dual of the appendix), ``policy`` and ``train`` (routers and Algorithm 1), ``store``
(shared training runs: trained routers stored by the hash of their configuration and inputs),
``baselines`` (RouterBench-KNN, RouteLLM-MF, M-IRT, budget matching), ``evaluate`` (accuracy,
cost, agreement, curve metrics), ``experiments`` (the chapters' sweeps as tidy rows: router
grids, score baselines at matched budgets, shifts, ablations), ``shift`` (robustness under a
real subset shift and the matched-spend control), ``prompts`` (judge prompts and
answer parsing), ``pairs`` (the preference-pair schema, validator and reader), ``data``
(manifest, fetching, JudgeBench and LLMBar loaders), ``outputs`` (judge outputs made by other
tools, JudgeBench's and LLMBar's, as judge records), ``judging`` (a package: judging every
pair in both modes, from the run spec to judge records), ``embed`` (pair embeddings with a
cache), ``paper`` (the paper's own numbers, for the labelled comparison columns), ``chapter``
(a chapter's set-up, its provenance-stamped tables and figures, and its result sentences
generated from them), ``claims`` (what the build reproduces, claim by claim: the statuses of
findings), ``report`` (the reproduction report: every claim of the paper, decided
from the chapters' CSVs), ``plots`` (one figure
style), ``page`` (how figures and tables appear on the book's page: numbered captions, true
size, compact tables), ``staging`` (the executed notebook as a reader sees it: no parameter
cells, relative paths), ``cite`` (BibTeX for the paper and the companion from CITATION.cff),
``bookcheck`` (every page of the built book opened in headless Chromium), ``pipeline``
(papermill runner), ``errors`` (``RacerError``, the base of every error a
user can cause) and ``cli`` (the ``racer`` command, also ``python -m racer_lib``).
"""

__version__ = "0.1.0"
