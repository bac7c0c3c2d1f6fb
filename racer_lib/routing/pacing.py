"""Keeping the budget online: :class:`BudgetPacer`, a dual price on cost updated pair by pair.

Beyond the paper. A router trained offline meets its budget ``C`` on pairs like its training
pairs; after deployment the pairs and the modes' lengths drift, and the realized mean cost
drifts with them. At deployment a router sees each pair's tokens as they are spent, so the
budget can be kept online, as budget pacing for online allocation does: dual (mirror) descent
on the price of the resource (Balseiro, Lu & Mirrokni, "The Best of Many Worlds: Dual Mirror
Descent for Online Allocation Problems", Operations Research 2023; with the Euclidean mirror
map, projected subgradient descent on the dual).

At pair ``t`` the pacer holds a price ``mu_t >= 0`` and an estimate ``chat_t`` of the
reasoning mode's cost (a running mean of the reasoning costs observed so far, started at
``C``). With the router's score ``s_t`` (RACER: ``pi(1 | z)``; a baseline: its score) and the
router's own threshold ``theta`` (RACER's argmax rule: 1/2; a baseline: its budget-matched
threshold), it routes to reasoning iff::

    s_t - mu_t * chat_t / C > theta

then observes the chosen mode's cost ``c_t`` and updates::

    mu_{t+1} = max(0, mu_t + eta * (c_t - C) / C)

so overspending raises the price (fewer pairs reason) and underspending lowers it back to 0
(never below: the pacer never reasons on more pairs than the router would). Prices and costs
are divided by ``C``, so ``eta`` is free of the cost unit.

``mode="cap"`` adds a hard cap: a pair reasons only if the cumulative cost, with the largest
cost a reasoning judgment can have (``cap_cost``: e.g. the judge's ``max_tokens`` in cost
units), stays within ``C * t + slack``; so the cumulative cost never exceeds ``C * t + slack``
as long as every instruct judgment costs at most ``C`` (the instruct mode alone is within
budget) and no reasoning judgment costs more than ``cap_cost``.

The state (:class:`PacerState`: ``mu``, ``t``, the cumulative cost and the cost estimate) is
plain numbers: saved beside the routing decisions (``racer records route --pace``), it resumes
a stopped stream with the same price, so a resumed run decides as an uninterrupted one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from racer_lib.errors import ConfigError, InputError

__all__ = ["PACE_MODES", "BudgetPacer", "PacerState"]

PACE_MODES = ("dual", "cap")
#: The weight of the newest observed reasoning cost in the running estimate ``chat``.
COST_SMOOTHING = 0.05


@dataclass
class PacerState:
    """Where a paced stream stands: the price ``mu``, pairs seen ``t``, cumulative cost
    ``spent`` (the budget's unit), the reasoning cost estimate ``cost_estimate`` (``None``:
    not yet observed) and pairs sent to reasoning ``reasoned``."""

    mu: float = 0.0
    t: int = 0
    spent: float = 0.0
    cost_estimate: float | None = None
    reasoned: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, file: str = "<pacer state>") -> PacerState:
        try:
            state = cls(
                mu=float(data["mu"]),
                t=int(data["t"]),
                spent=float(data["spent"]),
                cost_estimate=None
                if data["cost_estimate"] is None
                else float(data["cost_estimate"]),
                reasoned=int(data["reasoned"]),
            )
        except (KeyError, TypeError, ValueError):
            raise InputError(
                f"{file}: not a pacer state (mu, t, spent, cost_estimate, reasoned)"
            ) from None
        if not (state.mu >= 0 and state.t >= 0 and math.isfinite(state.spent)):
            raise InputError(f"{file}: pacer state out of range ({state})")
        return state


@dataclass
class BudgetPacer:
    """Online dual descent on a cost price around any router that scores pairs (module
    docstring). ``budget`` C per pair (the router's cost unit); ``threshold`` the router's
    own (reason iff score > threshold unpaced); ``eta`` the dual step; ``mode`` ``dual`` or
    ``cap``; with ``cap``, ``slack`` and ``cap_cost`` (the largest cost of one reasoning
    judgment); ``state`` to resume from."""

    budget: float
    threshold: float = 0.5
    eta: float = 0.005
    mode: str = "dual"
    slack: float = 0.0
    cap_cost: float | None = None
    state: PacerState = field(default_factory=PacerState)

    def __post_init__(self) -> None:
        if self.mode not in PACE_MODES:
            raise ConfigError(f"unknown pacing mode {self.mode!r}; modes are {PACE_MODES}")
        for name in ("budget", "eta"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"pacer {name} must be a finite number > 0 (got {value})")
        if self.mode == "cap" and (self.cap_cost is None or not self.cap_cost > 0):
            raise ConfigError("cap mode needs cap_cost, the largest cost of one reasoning judgment")
        if not (math.isfinite(self.slack) and self.slack >= 0):
            raise ConfigError(f"pacer slack must be >= 0 (got {self.slack})")

    def price(self) -> float:
        """The score the price takes off: ``mu_t * chat_t / C``."""
        s = self.state
        estimate = self.budget if s.cost_estimate is None else s.cost_estimate
        return s.mu * estimate / self.budget

    def decide(self, score: float) -> int:
        """Pair ``t``'s mode (1 reasoning) from its score, before its cost is known."""
        return int(self.decide_round([score])[0])

    def decide_round(self, scores) -> np.ndarray:
        """The modes of the next ``len(scores)`` pairs, all decided before any of their costs
        is known (a round of a batched judge, ``racer judge run --router --pace``), at the
        current price. Under ``cap`` each earlier pair of the round is counted at the most it
        can cost (``cap_cost`` if it reasons, ``C`` if not), so the cap holds as it does pair
        by pair. One score: :meth:`decide`. Observe the round's costs in order afterwards."""
        price, s = self.price(), self.state
        out = np.zeros(len(scores), dtype=np.int64)
        reserved = 0.0
        for j, score in enumerate(scores):
            reason = float(score) - price > self.threshold
            if self.mode == "cap":
                if reason:
                    allowed = self.budget * (s.t + j + 1) + self.slack
                    reason = s.spent + reserved + self.cap_cost <= allowed
                reserved += self.cap_cost if reason else self.budget
            out[j] = reason
        return out

    def settings(self) -> dict:
        """The pacer's settings (what a resumed run must share), without its state."""
        names = ("budget", "threshold", "eta", "mode", "slack", "cap_cost")
        return {k: getattr(self, k) for k in names}

    def observe(self, decision: int, cost: float) -> None:
        """The chosen mode's cost of pair ``t`` (the budget's unit): update the price."""
        cost = float(cost)
        if not (math.isfinite(cost) and cost >= 0):
            raise InputError(f"pair {self.state.t}: observed cost {cost} is not a number >= 0")
        s = self.state
        if decision:
            s.reasoned += 1
            s.cost_estimate = (
                cost
                if s.cost_estimate is None
                else (1 - COST_SMOOTHING) * s.cost_estimate + COST_SMOOTHING * cost
            )
        s.mu = max(0.0, s.mu + self.eta * (cost - self.budget) / self.budget)
        s.spent += cost
        s.t += 1

    def replay(self, scores, costs) -> dict[str, np.ndarray]:
        """Pace a stream whose costs are known per mode (records: ``costs`` of shape ``(n,
        2)``, instruct and reasoning): decide each pair, then observe its chosen mode's cost.
        Returns per pair the ``decision``, the price ``mu`` it was decided at and the
        cumulative cost after it."""
        s = np.asarray(scores, dtype=np.float64)
        c = np.asarray(costs, dtype=np.float64)
        if c.shape != (len(s), 2):
            raise InputError(f"{len(s)} scores need costs of shape ({len(s)}, 2), got {c.shape}")
        out = {k: np.empty(len(s)) for k in ("mu", "spent")}
        decision = np.empty(len(s), dtype=np.int64)
        for i, score in enumerate(s):
            out["mu"][i] = self.state.mu
            decision[i] = self.decide(score)
            self.observe(decision[i], c[i, decision[i]])
            out["spent"][i] = self.state.spent
        return {"decision": decision, **out}

    def mean_cost(self) -> float:
        """The realized mean cost so far (0 before the first pair)."""
        return self.state.spent / self.state.t if self.state.t else 0.0
