"""Layer 3, how a router is trained under a budget: the method a practitioner imports.

- ``dro``: the worst case over a KL ball, exact and Algorithm 1's batch approximation;
- ``theory``: the tabular primal-dual of the paper's §4 (Theorems 4.1 and 4.2);
- ``policy``: the MLP and linear routers, a batch of them, a saved router;
- ``steps``: one training step of a batch of policies, its gradient (Eq. (7)) by hand;
- ``train``: Algorithm 1 (ACER, RACER-R, RACER-C, RACER) and model selection;
- ``store``: trained routers stored by the hash of their configuration and inputs;
- ``baselines``: RouterBench-KNN, RouteLLM-MF, M-IRT and the budget-matching rule;
- ``routed``: route-then-judge, a saved router picking the one mode each pair is judged in;
- ``estimator``: :class:`RacerRouter`, RACER as a scikit-learn estimator on arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from racer_lib.routing.estimator import RacerRouter

__all__ = ["RacerRouter"]


def __getattr__(name: str):
    """``RacerRouter`` on first use: importing a module of this package (the book's store,
    ``racer judge run``) does not import scikit-learn and PyTorch for it."""
    if name == "RacerRouter":
        from racer_lib.routing.estimator import RacerRouter

        return RacerRouter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
