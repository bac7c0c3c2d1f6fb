"""One decision rule per router: how ``pi(1 | z)`` becomes each pair's mode, stated in the file.

A trained policy gives each pair a probability of the reasoning mode; a deployment needs one
mode per pair. The rule that turns the first into the second is part of the router, saved in
its file (``config["rule"]``), and every command that routes applies it: ``racer router
info --records``, ``router evaluate``, ``records route``, ``judge run --router`` and
:meth:`RacerRouter.predict <racer_lib.routing.estimator.RacerRouter.predict>`. So the same
records get the same decisions and the same realized cost everywhere.

Rules (:data:`RULES`):

- ``argmax``: each pair's more probable mode, reasoning iff ``pi(1 | z) > 1/2`` (a tie goes to
  the cheaper instruct mode); deterministic. ``racer judge run --decision expected`` is this
  rule (its older name). The default, and the rule of a router file that states none.
- ``sampled``: a draw ``a ~ Bernoulli(pi(1 | z))`` from the pair's own seed,
  ``item_seed(seed, id, "route")`` (:func:`racer_lib.judging.spec.item_seed`), so the order
  of the rows, sharding and resuming change no pair's draw.

The *expectation* over the policy (``E_{a ~ pi}[c(z, a)]``, Eq. (1)'s constraint) is what
training selects checkpoints on (:func:`racer_lib.routing.train.select_checkpoint`); it is
reported as such, never as the cost a deployment realizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from racer_lib.errors import ConfigError, InputError
from racer_lib.judging.spec import DECISIONS, item_seed

if TYPE_CHECKING:  # torch is imported only where a router is loaded
    from racer_lib.routing.policy import Router

__all__ = ["RULES", "DecisionRule", "decide", "degenerate", "more_probable", "over_budget", "route"]

RULES = ("argmax", "sampled")
#: The rule's name in ``racer judge run --decision`` (:data:`racer_lib.judging.spec.DECISIONS`).
JUDGING_NAMES = {"argmax": "expected", "sampled": "sampled"}
RULE_KEY = "rule"  # where a router file's config holds its rule


def more_probable(p_reasoning) -> np.ndarray:
    """The ``argmax`` decision: each pair's more probable mode, 1 (reasoning) iff
    ``pi(1 | z) > 1/2``, a tie going to the cheaper instruct mode (0)."""
    return (np.asarray(p_reasoning, dtype=np.float64) > 0.5).astype(np.int64)


def decide(ids, p_reasoning: np.ndarray, decision: str, seed: int) -> np.ndarray:
    """The mode of each pair (0 instruct, 1 reasoning) under ``racer judge run``'s
    ``decision`` (:data:`racer_lib.judging.spec.DECISIONS`: ``expected`` is ``argmax``);
    ``sampled`` draws from each pair's own seed, ``item_seed(seed, id, "route")``."""
    if decision not in DECISIONS:
        raise ConfigError(f"unknown decision {decision!r}; decisions are {', '.join(DECISIONS)}")
    p = np.asarray(p_reasoning, dtype=np.float64)
    if decision == "expected":
        return more_probable(p)
    u = [np.random.default_rng(item_seed(seed, str(i), "route")).random() for i in ids]
    return (np.asarray(u) < p).astype(np.int64)


@dataclass(frozen=True)
class DecisionRule:
    """How a router's ``pi(1 | z)`` becomes each pair's mode: ``name`` in :data:`RULES`,
    ``seed`` the draws' seed (``sampled`` only)."""

    name: str = "argmax"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.name not in RULES:
            raise ConfigError(f"unknown decision rule {self.name!r}; rules are {', '.join(RULES)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise ConfigError(f"a decision rule's seed is a whole number (got {self.seed!r})")

    @classmethod
    def of(cls, router: Router) -> DecisionRule:
        """The rule a router file states (``argmax`` where it states none: files written
        before routers carried a rule)."""
        stated = router.config.get(RULE_KEY)
        if stated is None:
            return cls()
        if not isinstance(stated, dict) or set(stated) != {"name", "seed"}:
            raise InputError(f"a router's rule is {{name, seed}}; this file holds {stated!r}")
        return cls(str(stated["name"]), int(stated["seed"]))

    @classmethod
    def from_judging(cls, decision: str, seed: int) -> DecisionRule:
        """The rule ``racer judge run --decision`` names (``expected`` is ``argmax``)."""
        names = {v: k for k, v in JUDGING_NAMES.items()}
        if decision not in names:
            raise ConfigError(f"unknown decision {decision!r}; one of {', '.join(names)}")
        return cls(names[decision], int(seed))

    def config(self) -> dict:
        """The rule as a router file stores it."""
        return {"name": self.name, "seed": int(self.seed)}

    @property
    def judging_name(self) -> str:
        return JUDGING_NAMES[self.name]

    def describe(self) -> str:
        """One phrase: ``argmax (reasoning iff p > 1/2)`` or ``sampled (seed 3)``."""
        if self.name == "argmax":
            return "argmax (reasoning iff p_reasoning > 1/2)"
        return f"sampled (a Bernoulli draw per pair from its id, seed {self.seed})"

    @property
    def threshold(self) -> float:
        """The threshold on :meth:`scores` above which a pair reasons: 1/2 under ``argmax``
        (the score is ``p``), 0 under ``sampled`` (the score is ``p - u``)."""
        return 0.5 if self.name == "argmax" else 0.0

    def scores(self, ids, p_reasoning) -> tuple[np.ndarray, float]:
        """Scores and a threshold such that ``score > threshold`` is this rule's decision:
        ``argmax``: ``p`` and 1/2; ``sampled``: ``p - u`` and 0, ``u`` the pair's own draw.
        What a :class:`racer_lib.routing.pacing.BudgetPacer` shifts by its price."""
        p = np.asarray(p_reasoning, dtype=np.float64)
        if self.name == "argmax":
            return p, self.threshold
        ids = [str(i) for i in (range(len(p)) if ids is None else ids)]
        u = [np.random.default_rng(item_seed(int(self.seed), i, "route")).random() for i in ids]
        return p - np.asarray(u), self.threshold

    def decide(self, ids, p_reasoning) -> np.ndarray:
        """Each pair's mode (0 instruct, 1 reasoning) under this rule; ``ids`` name the pairs
        (their draws' seeds under ``sampled``)."""
        p = np.asarray(p_reasoning, dtype=np.float64)
        ids = [str(i) for i in (range(len(p)) if ids is None else ids)]
        if len(ids) != len(p):
            raise InputError(f"{len(ids)} ids for {len(p)} pairs")
        return decide(ids, p, self.judging_name, int(self.seed))


def route(router: Router, ids, x) -> tuple[np.ndarray, np.ndarray, DecisionRule]:
    """``pi(1 | z)`` of every row of ``x``, each pair's mode under the router's own rule
    (:meth:`DecisionRule.of`), and that rule: what every routing command applies."""
    rule = DecisionRule.of(router)
    p = router.p_reasoning(x).astype(np.float64)
    return p, rule.decide(ids, p), rule


#: A router that reasons on at most this share of pairs, or at least 1 minus it, is named
#: degenerate (:func:`degenerate`): within a point of All-Instruct or All-Reasoning.
DEGENERATE_RATE = 0.01


def degenerate(reasoning_rate: float, budget: float, endpoints: dict) -> str | None:
    """One line naming a router that routes (nearly) every pair to one mode, with what to try,
    or ``None``. ``reasoning_rate`` is the share of (validation) pairs its rule sends to
    reasoning; ``endpoints`` maps ``All-Instruct`` and ``All-Reasoning`` to their
    ``accuracy`` (%) and ``cost`` on the same pairs, in the budget's unit."""
    instruct, reasoning = endpoints["All-Instruct"], endpoints["All-Reasoning"]
    gain = reasoning["accuracy"] - instruct["accuracy"]
    if reasoning_rate <= DEGENERATE_RATE:
        head = (
            f"degenerate router: it reasons on {reasoning_rate:.1%} of the validation pairs, "
            f"All-Instruct in effect (budget C = {budget:.4g}; All-Reasoning costs "
            f"{reasoning['cost']:.3g} at {gain:+.1f} points of accuracy)"
        )
        if gain <= 0:
            return head + "; reasoning does not help on these pairs, so this may be right"
        return head + (
            "; try a larger learning rate (--lr 1e-3 to 5e-2) and more --epochs on a few "
            "hundred pairs, --arch linear, a larger --dual-step, or a larger budget"
        )
    if reasoning_rate >= 1 - DEGENERATE_RATE:
        head = (
            f"degenerate router: it reasons on {reasoning_rate:.1%} of the validation pairs, "
            f"All-Reasoning in effect (All-Reasoning costs {reasoning['cost']:.3g}"
        )
        if budget >= reasoning["cost"]:
            return head + (
                f", within the budget C = {budget:.4g}): no routing is needed at this budget; "
                "give a budget below All-Reasoning's cost to route"
            )
        return head + (
            f", over the budget C = {budget:.4g}); try a larger --dual-step or more --epochs "
            "so that the cost multiplier lambda can act"
        )
    return None


def over_budget(cost: float, budget: float) -> str:
    """One line for a realized cost over the budget, with the remedies."""
    return (
        f"the realized cost {cost:.3f} exceeds the budget C = {budget:g} by "
        f"{100 * (cost / budget - 1):.1f} %: these pairs cost more than the training pairs. "
        "Keep it online with racer records route --pace dual (or --pace cap), choose a lower "
        "budget with racer router sweep, or train against cost shifts (--variant RACER-C)"
    )
