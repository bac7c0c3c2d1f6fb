"""Score-based routing baselines, adapted to the choice between a judge's two modes.

Each baseline learns, from the training pairs' embeddings ``z`` and both modes' correctness
``r(z, a)``, a *score* per pair: the higher, the more the pair should go to the reasoning mode.
A score becomes a router through one rule shared by every baseline (:func:`match_budget`):
the threshold is set on the validation split to the largest reasoning rate whose validation
cost stays at or below the budget ``C``. RACER itself is trained against the budget and needs
no threshold.

* :class:`KNNRouter`, RouterBench's KNN router (Hu et al., 2024): the predicted correctness of
  each mode is the mean over the ``k`` nearest training pairs (cosine distance, scikit-learn's
  ``NearestNeighbors``); score = predicted gain of reasoning.
* :class:`MFRouter`, RouteLLM's matrix-factorisation router (Ong et al., 2025):
  ``s(m, q) = w^T (normalize(P[m]) * W_proj e_q)`` without biases; score
  ``sigmoid(s(reasoning, q) - s(instruct, q))``, trained with BCE on the pairs where exactly
  one mode is right, with Gaussian noise on the embeddings during training only.
* :class:`MIRTRouter`, IRT-Router's multidimensional IRT router (Song et al., 2025):
  ``p(correct | q, m) = sigmoid(sum_k a_k(q) theta_k(m) - b(q))`` with a learned mode vector
  ``theta``, ``a = softplus(W_a e_q)``, ``b = w_b^T e_q``; at prediction a query is mixed with
  the mean of its nearest training queries (cold start); the score trades the predicted
  correctness gain against the modes' cost.

Defaults are the originals' (see each class). Every random draw (initialisation, data order,
training noise) comes from the router's ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.neighbors import NearestNeighbors
from tqdm import tqdm

from racer_lib.errors import ConfigError
from racer_lib.records.schema import IN_MEMORY, RecordsError, infeasible_budget

METHODS = ("RouterBench-KNN", "RouteLLM-MF", "M-IRT")


def _as_arrays(x, r, c=None):
    x = np.asarray(x, dtype=np.float32)
    r = np.asarray(r, dtype=np.float32)
    if x.ndim != 2 or r.shape != (len(x), 2):
        raise ValueError(
            f"expected embeddings (n, D) and correctness (n, 2); got {x.shape} and {r.shape}"
        )
    if c is not None:
        c = np.asarray(c, dtype=np.float64)
        if c.shape != (len(x), 2):
            raise ValueError(f"expected costs of shape (n, 2) = {(len(x), 2)}; got {c.shape}")
    if len(x) == 0:
        raise ValueError("no training pairs")
    return x, r, c


class _Fitted:
    """Refuse to score before fitting, and embeddings of another width."""

    in_dim: int | None = None

    def _check(self, x) -> np.ndarray:
        if self.in_dim is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted yet: call fit() first")
        x = np.asarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.in_dim:
            raise ValueError(
                f"embeddings have shape {x.shape}; this router was fitted on "
                f"{self.in_dim}-dimensional embeddings"
            )
        return x


# ----------------------------------------------------------------------------------------
# RouterBench-KNN


@dataclass
class KNNRouter(_Fitted):
    """RouterBench's KNN router: the neighbours' mean correctness per mode.

    ``k`` defaults to the original's 50 (its grid: 5, 10, 40); with fewer training pairs all
    of them are neighbours.
    """

    k: int = 50
    name: str = "RouterBench-KNN"

    def fit(self, x, r, c=None) -> KNNRouter:
        x, r, _ = _as_arrays(x, r, c)
        if self.k < 1:
            raise ConfigError(f"k must be at least 1 (got {self.k})")
        self.index_ = NearestNeighbors(
            n_neighbors=min(self.k, len(x)), metric="cosine", algorithm="brute"
        ).fit(x)
        self.r_ = r
        self.in_dim = x.shape[1]
        return self

    def predict(self, x) -> np.ndarray:
        """Predicted correctness of both modes, shape ``(n, 2)``."""
        x = self._check(x)
        idx = self.index_.kneighbors(x, return_distance=False)
        return self.r_[idx].mean(axis=1)

    def score(self, x) -> np.ndarray:
        """Predicted gain of reasoning: ``r_hat(reasoning) - r_hat(instruct)``."""
        pred = self.predict(x)
        return pred[:, 1] - pred[:, 0]


def _fit_bce(
    logits_of,
    y: torch.Tensor,
    opt,
    gen: torch.Generator,
    batch_size: int,
    epochs: int,
    desc: str,
    progress: bool,
) -> list[float]:
    """Minibatch BCE training shared by the learned baselines; returns the loss per epoch.

    ``logits_of(idx)`` gives the logits of the rows ``idx`` of ``y``; every epoch visits the
    rows in an order drawn from ``gen``.
    """
    loss_fn = torch.nn.BCEWithLogitsLoss()
    history = []
    for _ in tqdm(range(epochs), desc=desc, disable=not progress, leave=False):
        order, total = torch.randperm(len(y), generator=gen), 0.0
        for start in range(0, len(y), batch_size):
            idx = order[start : start + batch_size]
            loss = loss_fn(logits_of(idx), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        history.append(total / len(y))
    return history


# ----------------------------------------------------------------------------------------
# RouteLLM-MF


class _MF(torch.nn.Module):
    def __init__(self, in_dim: int, dim: int, gen: torch.Generator):
        super().__init__()
        self.P = torch.nn.Parameter(torch.randn(2, dim, generator=gen))  # one row per mode
        bound = 1 / np.sqrt(in_dim)
        self.W_proj = torch.nn.Parameter((torch.rand(dim, in_dim, generator=gen) * 2 - 1) * bound)
        self.w = torch.nn.Parameter((torch.rand(dim, generator=gen) * 2 - 1) / np.sqrt(dim))

    def forward(self, e: torch.Tensor) -> torch.Tensor:
        """``s(reasoning, q) - s(instruct, q)`` for every row of ``e``."""
        P = torch.nn.functional.normalize(self.P, dim=1)
        return ((P[1] - P[0]) * (e @ self.W_proj.T)) @ self.w


@dataclass
class MFRouter(_Fitted):
    """RouteLLM's matrix-factorisation router, with its training defaults.

    ``dim`` 128, Adam at ``lr`` 3e-4 with ``weight_decay`` 1e-5, ``batch_size`` 64, ``epochs``
    100 (its training script's default), noise ``alpha`` 0.1 on the embeddings in training.
    """

    dim: int = 128
    lr: float = 3e-4
    weight_decay: float = 1e-5
    batch_size: int = 64
    epochs: int = 100
    alpha: float = 0.1
    seed: int = 0
    progress: bool = False
    name: str = "RouteLLM-MF"
    history: list[float] = field(default_factory=list)

    def fit(self, x, r, c=None) -> MFRouter:
        x, r, _ = _as_arrays(x, r, c)
        wins = r[:, 0] != r[:, 1]  # exactly one mode right; ties carry no preference
        if not wins.any():
            raise ValueError(
                "no training pair where exactly one mode is right: the "
                "matrix-factorisation router has nothing to learn from"
            )
        e = torch.as_tensor(x[wins])
        y = torch.as_tensor(r[wins, 1])  # 1: the reasoning mode won
        gen = torch.Generator().manual_seed(int(self.seed))
        self.model_ = _MF(x.shape[1], self.dim, gen)
        opt = torch.optim.Adam(self.model_.parameters(), lr=self.lr, weight_decay=self.weight_decay)

        def logits(idx):  # Gaussian noise on the embeddings, in training only
            return self.model_(e[idx] + self.alpha * torch.randn(e[idx].shape, generator=gen))

        self.history = _fit_bce(
            logits, y, opt, gen, self.batch_size, self.epochs, "RouteLLM-MF", self.progress
        )
        self.in_dim = x.shape[1]
        return self

    @torch.no_grad()
    def score(self, x) -> np.ndarray:
        """``sigmoid(s(reasoning, q) - s(instruct, q))``: the predicted win rate of reasoning."""
        x = self._check(x)
        return torch.sigmoid(self.model_(torch.as_tensor(x))).numpy()


# ----------------------------------------------------------------------------------------
# M-IRT


class _MIRT(torch.nn.Module):
    def __init__(self, in_dim: int, latent: int, gen: torch.Generator):
        super().__init__()
        self.theta = torch.nn.Parameter(torch.randn(2, latent, generator=gen))  # per mode
        bound = 1 / np.sqrt(in_dim)

        def uniform(*shape):
            return torch.nn.Parameter((torch.rand(*shape, generator=gen) * 2 - 1) * bound)

        self.W_a, self.bias_a = uniform(latent, in_dim), uniform(latent)
        self.w_b, self.bias_b = uniform(in_dim), uniform(1)

    def forward(self, e: torch.Tensor) -> torch.Tensor:
        """Logits of ``p(correct | q, m)`` for both modes, shape ``(n, 2)``."""
        a = torch.nn.functional.softplus(e @ self.W_a.T + self.bias_a)  # (n, K) discrimination
        b = e @ self.w_b + self.bias_b  # (n,) difficulty
        return a @ self.theta.T - b[:, None]


@dataclass
class MIRTRouter(_Fitted):
    """IRT-Router's M-IRT, with its defaults: ``latent`` 25, Adam ``lr`` 1e-3, batch 512.

    ``epochs`` 9 as in its training script. At prediction a query ``e`` becomes
    ``(1 - cold_lambda) e + cold_lambda mean(its cold_k nearest training queries)`` (λ = 0.3,
    5 neighbours, cosine). The score of reasoning over instruct is
    ``perf_weight (p_R - p_I) - (1 - perf_weight) (c_R - c_I) / c_R`` with ``c`` each mode's
    mean training cost (IRT-Router's performance-minus-normalised-cost rule, weight 0.8 in its
    evaluation script); since the cost term is the same for every pair, the budget threshold
    ranks pairs by the predicted gain, while ``score > 0`` is the original's own decision.
    """

    latent: int = 25
    lr: float = 1e-3
    batch_size: int = 512
    epochs: int = 9
    cold_lambda: float = 0.3
    cold_k: int = 5
    perf_weight: float = 0.8
    seed: int = 0
    progress: bool = False
    name: str = "M-IRT"
    history: list[float] = field(default_factory=list)

    def fit(self, x, r, c=None) -> MIRTRouter:
        x, r, c = _as_arrays(x, r, c)
        n = len(x)
        # one row per (query, mode): the mode's correctness on the query
        e = torch.as_tensor(np.repeat(x, 2, axis=0))
        mode = torch.arange(2).repeat(n)
        y = torch.as_tensor(r.reshape(-1))
        gen = torch.Generator().manual_seed(int(self.seed))
        self.model_ = _MIRT(x.shape[1], self.latent, gen)
        opt = torch.optim.Adam(self.model_.parameters(), lr=self.lr)
        self.history = _fit_bce(
            lambda idx: self.model_(e[idx]).gather(1, mode[idx, None]).squeeze(1),
            y,
            opt,
            gen,
            self.batch_size,
            self.epochs,
            "M-IRT",
            self.progress,
        )
        self.cold_ = NearestNeighbors(
            n_neighbors=min(self.cold_k, n), metric="cosine", algorithm="brute"
        ).fit(x)
        self.x_ = x
        self.mode_cost_ = c.mean(axis=0) if c is not None else np.ones(2)
        self.in_dim = x.shape[1]
        return self

    def smooth(self, x) -> np.ndarray:
        """Cold-start smoothing: each query mixed with the mean of its nearest training queries."""
        x = self._check(x)
        idx = self.cold_.kneighbors(x, return_distance=False)
        return (1 - self.cold_lambda) * x + self.cold_lambda * self.x_[idx].mean(axis=1)

    @torch.no_grad()
    def predict(self, x) -> np.ndarray:
        """Predicted ``p(correct | q, m)`` of both modes, shape ``(n, 2)``."""
        e = torch.as_tensor(self.smooth(x), dtype=torch.float32)
        return torch.sigmoid(self.model_(e)).numpy()

    def score(self, x) -> np.ndarray:
        p = self.predict(x)
        c_i, c_r = self.mode_cost_
        cost_term = (c_r - c_i) / c_r if c_r > 0 else 0.0
        return self.perf_weight * (p[:, 1] - p[:, 0]) - (1 - self.perf_weight) * cost_term


def make(method: str, seed: int = 0, **options):
    """A baseline by its table name (:data:`METHODS`), with the originals' defaults."""
    classes = {"RouterBench-KNN": KNNRouter, "RouteLLM-MF": MFRouter, "M-IRT": MIRTRouter}
    if method not in classes:
        raise ConfigError(f"unknown baseline {method!r}; choose one of {', '.join(METHODS)}")
    if method != "RouterBench-KNN":
        options["seed"] = seed
    return classes[method](**options)


# ----------------------------------------------------------------------------------------
# Budget matching: one threshold rule for every score


@dataclass(frozen=True)
class Threshold:
    """Reason on a pair iff its score is at least ``value``.

    ``rate`` and ``valid_cost`` are the reasoning rate and the cost (training unit) this
    threshold gives on the validation split it was matched on.
    """

    value: float
    rate: float
    valid_cost: float
    budget: float

    def route(self, scores) -> np.ndarray:
        """0/1 decisions (1 = reasoning) for every score."""
        return (np.asarray(scores, dtype=np.float64) >= self.value).astype(np.int8)


def match_budget(scores, c, budget: float, file: str = IN_MEMORY) -> Threshold:
    """The threshold giving the largest validation reasoning rate whose cost stays <= ``budget``.

    ``scores`` are one method's scores on the validation pairs and ``c`` their costs of both
    modes, shape ``(n, 2)``, in the training cost unit. Pairs are taken by decreasing score;
    a threshold can only fall between two different scores, so tied pairs reason together or
    not at all. The largest such set whose mean cost is within budget wins (the cost need not
    grow with the rate when reasoning is the cheaper mode on some pairs). Reasoning on
    everything gives ``value = -inf``, on nothing ``value = +inf``.
    """
    s = np.asarray(scores, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    n = len(s)
    if c.shape != (n, 2) or n == 0:
        raise ValueError(f"{n} scores need costs of shape ({n}, 2); got {c.shape}")
    if not np.isfinite(s).all():
        row = int(np.flatnonzero(~np.isfinite(s))[0])
        raise RecordsError(file, "score", f"score {s[row]} is not finite", row=row)
    error = infeasible_budget(budget, float(c.min(axis=1).mean()), file)
    if error is not None:
        raise error
    order = np.argsort(-s, kind="stable")
    ranked = s[order]
    cost = (
        c[:, 0].mean() + np.concatenate([[0.0], np.cumsum(c[order, 1] - c[order, 0])]) / n
    )  # cost of reasoning on the top k
    cut = np.concatenate([[True], ranked[:-1] > ranked[1:], [True]])  # k where a cut is allowed
    ok = np.flatnonzero(cut & (cost <= budget))
    if len(ok) == 0:
        raise RecordsError(
            file,
            "budget",
            f"no threshold on these scores meets budget C = "
            f"{budget}: the cheapest cut costs {cost[cut].min():.4f} units "
            "(ties in the scores allow only some reasoning rates)",
        )
    k = int(ok[-1])
    value = np.inf if k == 0 else (-np.inf if k == n else float(ranked[k - 1]))
    return Threshold(value=value, rate=k / n, valid_cost=float(cost[k]), budget=float(budget))
