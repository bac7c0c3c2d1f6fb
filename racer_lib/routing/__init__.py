"""Layer 3, how a router is trained under a budget: the method a practitioner imports.

- ``dro``: the worst case over a KL ball, exact and Algorithm 1's batch approximation;
- ``theory``: the tabular primal-dual of the paper's §4 (Theorems 4.1 and 4.2);
- ``policy``: the MLP and linear routers, a batch of them, a saved router;
- ``steps``: one training step of a batch of policies, its gradient (Eq. (7)) by hand;
- ``train``: Algorithm 1 (ACER, RACER-R, RACER-C, RACER) and model selection;
- ``store``: trained routers stored by the hash of their configuration and inputs;
- ``baselines``: RouterBench-KNN, RouteLLM-MF, M-IRT and the budget-matching rule;
- ``routed``: route-then-judge, a saved router picking the one mode each pair is judged in
  (paced: the budget kept online while the judge runs, in rounds, resumable);
- ``estimator``: :class:`RacerRouter`, RACER as a scikit-learn estimator on arrays;
- ``decision``: the one decision rule a router file states (argmax or sampled), applied by
  every command that routes;
- ``logistic``: :class:`LogisticRouter`, the logistic-regression baseline beside every router;
- ``pacing``: :class:`BudgetPacer`, the budget kept online by a dual price on cost (beyond the
  paper).
"""

from __future__ import annotations

from racer_lib._exports import lazy_exports

#: What a user imports from ``racer_lib.routing``, and the module each name lives in: loaded on
#: first use, so importing one module of the package (the book's store, ``racer judge run``)
#: imports neither scikit-learn nor PyTorch for it.
_EXPORTS = {
    "RacerRouter": "estimator",
    "budget_scorer": "estimator",
    "BudgetPacer": "pacing",
    "PacerState": "pacing",
    "LogisticRouter": "logistic",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
