"""RACER as a scikit-learn estimator: :class:`RacerRouter`, fit on arrays, route new pairs.

The estimator is a thin layer over the batched trainer (:mod:`racer_lib.routing.train`), for a
practitioner who holds arrays rather than judge records. It solves the paper's budgeted routing
problem (Eq. (1): maximise the accuracy ``E[r(z, a, l)]`` subject to ``E[c(z, a)] <= C``) with
Algorithm 1: each step reweights the minibatch toward its worst case (``w^R`` on rewards at
``tau_r``, ``w^C`` on costs at ``tau_c``, as the variant asks), takes a primal step on the
regularised Lagrangian of Eq. (7) (AdamW, entropy weight ``beta``) and a dual step on ``lam``
(appendix A.3); the returned policy is the best valid checkpoint (appendix B.3). With
``n_seeds > 1`` it trains that many policies in one batch and keeps the best of their
checkpoints by the same rule (:func:`racer_lib.routing.train.select_checkpoint`).

Data: ``X`` holds one embedding per pair, ``correct`` and ``tokens`` one column per mode,
``(instruct, reasoning)`` (the paper's action ``a = 0, 1``). Costs are in the training rows'
unit (:class:`racer_lib.records.schema.CostUnit`: mean instruct tokens, so All-Instruct costs
1.0 on them), the unit ``budget`` is in. A routed pair takes the policy's more probable mode
by the router's decision rule (:class:`racer_lib.routing.decision.DecisionRule`: ``argmax``,
the more probable mode, by default; ``sampled``, a seeded draw per pair), which :meth:`save`
writes into the router file so that every command routes by it.

Randomness comes from ``random_state`` alone: one :class:`numpy.random.SeedSequence` gives the
generator that holds out the validation rows and the seeds of the trained policies, so the same
``random_state`` gives the same router. Fitting has no process-wide side effect: no progress bar
unless asked, PyTorch's threads untouched, and glibc's malloc left alone
(``TrainSettings.keep_freed_memory``'s default).
"""

from __future__ import annotations

import math
from dataclasses import replace
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from racer_lib.errors import ConfigError, InputError, RacerError
from racer_lib.records.schema import CostUnit, infeasible_budget, mode_columns
from racer_lib.routing.decision import RULE_KEY, DecisionRule
from racer_lib.routing.policy import ARCHS, Router
from racer_lib.routing.train import (
    PolicyConfig,
    Split,
    TrainSettings,
    select_checkpoint,
    train_policies,
)

__all__ = ["RacerRouter", "RouterNotFittedError", "budget_scorer"]

_META = "estimator"  # the key of the estimator's metadata in a saved router's config
_FITTED = ("lam_", "valid_accuracy_", "valid_cost_", "seed_", "seeds_", "best_epoch_")
_HISTORY = ["policy", "seed", "epoch", "lambda", "train_reward", "train_cost"]


class RouterNotFittedError(RacerError, NotFittedError):
    """A :class:`RacerRouter` used before :meth:`~RacerRouter.fit` (scikit-learn's
    ``NotFittedError``, and a :class:`~racer_lib.errors.RacerError`)."""


class RacerRouter(BaseEstimator):
    """Route each pair to the instruct (0) or reasoning (1) mode under a cost budget (RACER).

    Parameters (names of the paper; defaults of :class:`~racer_lib.routing.train.PolicyConfig`
    and :class:`~racer_lib.routing.train.TrainSettings`, i.e. appendix B.3 and B.5):
    ``budget`` C in the training rows' cost unit (All-Instruct = 1.0); ``variant`` one of
    ACER, RACER-R, RACER-C, RACER; ``tau_r``, ``tau_c`` the temperatures of the worst-case
    reweighting; ``beta`` the entropy weight; ``lam0`` the initial multiplier ``lam``;
    ``arch``, ``epochs``, ``batch_size``, ``lr``, ``weight_decay``, ``dual_step`` the
    training; ``n_seeds`` policies trained, the best valid one kept; ``validation_fraction``
    of the rows held out when ``fit`` gets no validation set; ``random_state`` (an int) seeds
    the hold-out and the policies; ``device`` and ``precision`` as in TrainSettings;
    ``embedder`` names the embeddings' encoder in a saved router (``racer judge run --router``
    checks it); ``progress`` shows a progress bar; ``rule`` and ``rule_seed`` the decision
    rule (:class:`~racer_lib.routing.decision.DecisionRule`) that :meth:`predict` applies and
    :meth:`save` writes into the router file.

    Fitted attributes: ``router_`` (:class:`~racer_lib.routing.policy.Router`), ``unit_``
    (:class:`~racer_lib.records.schema.CostUnit`), ``lam_`` (the multiplier at the selected
    checkpoint's epoch), ``valid_accuracy_`` (0 to 1) and ``valid_cost_`` (the cost unit) of
    the selected checkpoint on the validation rows, as the selection rule measures them
    (expectations under ``pi``), ``seeds_`` (the policies' seeds), ``seed_`` (the kept one's),
    ``best_epoch_``, ``history_`` (per policy and epoch: the trainer's history, its accuracy
    in %) and ``n_features_in_``.

    scikit-learn: ``get_params``, ``set_params`` and ``clone`` work, and the class passes
    ``sklearn.utils.estimator_checks``' check_parameters_default_constructible,
    check_no_attributes_set_in_init, check_get_params_invariance, check_set_params,
    check_do_not_raise_errors_in_init_or_set_params, check_estimator_cloneable,
    check_estimator_repr, check_estimators_unfitted, check_mixin_order,
    check_estimator_tags_renamed and check_valid_tag_types (tests/test_estimator.py). The
    checks that fit as ``fit(X, y)`` cannot apply: fitting needs both modes' ``tokens`` beside
    ``y`` (``correct``, of shape ``(n, 2)``, neither class labels nor a regression target), and
    the checks' data have none. So check_dont_overwrite_parameters,
    check_estimators_overwrite_params, check_fit_idempotent, check_n_features_in(_after_fitting),
    check_estimators_fit_returns_self, check_estimators_pickle, check_methods_subset_invariance,
    check_estimators_nan_inf and check_estimators_empty_data_messages are done by hand on
    routing data in the tests; the classifier and regressor checks (labels, sample weights,
    multiclass, 1-D ``y``), the sparse, complex, object-dtype and array-API checks (the policy
    is a dense float32 PyTorch network) and the transformer, clusterer and outlier checks do
    not apply. ``cross_val_score(router, X, correct, params={"tokens": tokens})`` works:
    ``score`` needs no tokens.
    """

    def __init__(
        self,
        budget: float = 3.0,
        *,
        variant: str = PolicyConfig.variant,
        tau_r: float = PolicyConfig.tau_r,
        tau_c: float = PolicyConfig.tau_c,
        beta: float = PolicyConfig.beta,
        lam0: float = TrainSettings.lam0,
        arch: str = TrainSettings.arch,
        epochs: int = TrainSettings.epochs,
        batch_size: int = TrainSettings.batch_size,
        lr: float = TrainSettings.lr,
        weight_decay: float = TrainSettings.weight_decay,
        dual_step: float = TrainSettings.dual_step,
        n_seeds: int = 1,
        validation_fraction: float = 0.2,
        random_state: int = 0,
        device: str = TrainSettings.device,
        precision: str = TrainSettings.precision,
        embedder: str | None = None,
        progress: bool = False,
        rule: str = "argmax",
        rule_seed: int = 0,
    ):
        self.budget = budget
        self.variant = variant
        self.tau_r = tau_r
        self.tau_c = tau_c
        self.beta = beta
        self.lam0 = lam0
        self.arch = arch
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.dual_step = dual_step
        self.n_seeds = n_seeds
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.device = device
        self.precision = precision
        self.embedder = embedder
        self.progress = progress
        self.rule = rule
        self.rule_seed = rule_seed

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True  # fit needs ``correct`` (and ``tokens``)
        tags.target_tags.multi_output = True  # ``correct`` has a column per mode
        return tags

    # ------------------------------------------------------------------------------------
    # Fitting

    def fit(self, X, correct, tokens, X_valid=None, correct_valid=None, tokens_valid=None):
        """Train on ``X`` (n, d) with both modes' ``correct`` and ``tokens`` (n, 2); select on
        the validation set given, else on ``validation_fraction`` of the rows held out.
        Returns ``self``."""
        x, r, t = _rows("X", X, correct, tokens)
        valid_given = [v is not None for v in (X_valid, correct_valid, tokens_valid)]
        if any(valid_given) and not all(valid_given):
            raise InputError("give all of X_valid, correct_valid and tokens_valid, or none")
        hold_out, policy_seeds = _streams(self.random_state)
        if all(valid_given):
            xv, rv, tv = _rows("X_valid", X_valid, correct_valid, tokens_valid)
            if xv.shape[1] != x.shape[1]:
                raise InputError(
                    f"X_valid has {xv.shape[1]} features, but X has {x.shape[1]}: both must "
                    "be embeddings of one encoder"
                )
        else:
            train, valid = _hold_out(len(x), self.validation_fraction, hold_out)
            x, r, t, xv, rv, tv = x[train], r[train], t[train], x[valid], r[valid], t[valid]
        unit = CostUnit.from_records(pd.DataFrame({mode_columns("instruct")["tokens"]: t[:, 0]}))
        budget = self._checked_budget(t / unit.tokens_per_unit, unit)
        # A budget at or above the dearest routing's cost (every pair's dearer mode) on both
        # sets constrains nothing: train at that cost (1e308 would overflow float32 sums).
        dearest = max(float((c / unit.tokens_per_unit).max(axis=1).mean()) for c in (t, tv))
        budget = min(budget, dearest * (1 + 1e-6) + 1e-6)
        configs = self._configs(budget, _seeds(self.n_seeds, policy_seeds))
        result = train_policies(
            _split("train", x, r, t, unit),
            _split("valid", xv, rv, tv, unit),
            configs,
            self._settings(),
            unit,
            progress=bool(self.progress),
        )
        return self._keep(result, configs)

    def _checked_budget(self, cost: np.ndarray, unit: CostUnit) -> float:
        """``budget`` as a float, refused (naming the cheapest cost) when at or below the
        cheapest policy's cost on the training rows (All-Instruct's, 1.0, or a little less)."""
        budget = _number("budget", self.budget)
        cheapest = float(cost.min(axis=1).mean())
        error = infeasible_budget(
            budget, cheapest, "<RacerRouter.fit: training rows>", unit.tokens_per_unit
        )
        if error is not None:
            raise error
        return budget

    def _configs(self, budget: float, seeds: list[int]) -> list[PolicyConfig]:
        values = {n: _number(n, getattr(self, n)) for n in ("tau_r", "tau_c", "beta")}
        return [PolicyConfig(budget=budget, seed=s, variant=self.variant, **values) for s in seeds]

    def _settings(self) -> TrainSettings:
        """The training settings; malloc untouched (no process-wide change)."""
        values = {n: _number(n, getattr(self, n)) for n in ("lr", "weight_decay", "dual_step")}
        values["lam0"] = _number("lam0", self.lam0)
        for name in ("epochs", "batch_size"):
            values[name] = _integer(name, getattr(self, name), 1)
        if self.arch not in ARCHS:
            raise ConfigError(f"unknown arch {self.arch!r}; choose one of {', '.join(ARCHS)}")
        return TrainSettings(
            arch=self.arch,
            precision=self.precision,
            device=self.device,
            **values,
        )

    def _keep(self, result, configs: list[PolicyConfig]) -> RacerRouter:
        """Keep the best valid checkpoint of the trained policies (appendix B.3's rule)."""
        history = result.history
        best = [
            history[(history["policy"] == p) & (history["epoch"] == e)].iloc[0]
            for p, e in enumerate(result.best_epoch)
        ]
        chosen = select_checkpoint(
            [row["valid_accuracy"] for row in best],
            [row["valid_cost"] for row in best],
            configs[0].budget,
        )
        self.router_ = result.router(chosen, self.embedder or "unknown")
        self.unit_ = result.unit
        self.lam_ = float(best[chosen]["lambda"])
        self.valid_accuracy_ = float(best[chosen]["valid_accuracy"]) / 100
        self.valid_cost_ = float(best[chosen]["valid_cost"])
        self.seeds_ = [c.seed for c in configs]
        self.seed_ = self.seeds_[chosen]
        self.best_epoch_ = int(result.best_epoch[chosen])
        self.history_ = history[[*_HISTORY, "valid_accuracy", "valid_cost"]].reset_index(drop=True)
        self.n_features_in_ = int(self.router_.in_dim)
        return self

    # ------------------------------------------------------------------------------------
    # Routing

    def predict_proba(self, X) -> np.ndarray:
        """``[pi(0 | z), pi(1 | z)]`` for every row of ``X``: shape ``(n, 2)``."""
        x = self._features(X)  # first: an unfitted estimator has no router_
        p1 = self.router_.p_reasoning(x).astype(np.float64)
        return np.column_stack([1 - p1, p1])

    def decision_rule(self) -> DecisionRule:
        """The rule :meth:`predict` applies (``rule``, ``rule_seed``)."""
        return DecisionRule(self.rule, _integer("rule_seed", self.rule_seed, 0))

    def predict(self, X, ids=None) -> np.ndarray:
        """Each pair's mode, 1 = reasoning, by the decision rule: ``argmax`` (reasoning iff
        ``pi(1 | z) > 1/2``) or ``sampled`` (a draw per pair seeded by ``rule_seed`` and the
        pair's id; ``ids`` default to the row numbers)."""
        return self.decision_rule().decide(ids, self.predict_proba(X)[:, 1])

    def score(self, X, correct, tokens=None, ids=None) -> float:
        """Accuracy (0 to 1) of the routed decisions: the mean of ``correct`` in each pair's
        chosen mode. ``tokens`` is not needed (checked when given)."""
        d = self.predict(X, ids)
        r = _pairs("correct", correct, len(d), binary=True)
        if tokens is not None:
            _pairs("tokens", tokens, len(d))
        return float(r[np.arange(len(d)), d].mean())

    def cost(self, X, tokens, ids=None) -> float:
        """Realized mean cost of the routed decisions, in the fitted cost unit (``unit_``):
        the mean of each pair's chosen mode's tokens over ``unit_.tokens_per_unit``."""
        d = self.predict(X, ids)
        t = _pairs("tokens", tokens, len(d))
        return float(t[np.arange(len(d)), d].mean() / self.unit_.tokens_per_unit)

    def _check_fitted(self) -> None:
        if not hasattr(self, "router_"):
            raise RouterNotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, correct, tokens) "
                "or RacerRouter.load(path) first"
            )

    def _features(self, X) -> np.ndarray:
        """``X`` checked: finite, one row per pair, the fitted number of features."""
        self._check_fitted()
        x = _matrix("X", X)
        if x.shape[1] != self.n_features_in_:
            raise InputError(
                f"X has {x.shape[1]} features, but this {type(self).__name__} was fitted on "
                f"{self.n_features_in_}-dimensional embeddings"
            )
        return x

    # ------------------------------------------------------------------------------------
    # Saving

    def save(self, path, trained_on: dict | None = None) -> Path:
        """Write the fitted router to ``path`` as a checked router file
        (:meth:`Router.save <racer_lib.routing.policy.Router.save>`, usable by
        ``racer judge run --router``), with the parameters and fitted figures
        :meth:`load` restores; ``trained_on`` (plain values: e.g. the records file, its
        digest, the pair counts) is stored beside them for ``racer router info``."""
        self._check_fitted()
        meta = {
            "params": {k: _plain(v) for k, v in self.get_params().items()},
            **{k: _plain(getattr(self, k)) for k in _FITTED},
            "history": {c: self.history_[c].tolist() for c in self.history_},
            "trained_on": {k: _plain(v) for k, v in (trained_on or {}).items()},
        }
        config = {**self.router_.config, RULE_KEY: self.decision_rule().config(), _META: meta}
        return replace(self.router_, config=config).save(path)

    @classmethod
    def load(cls, path) -> RacerRouter:
        """A fitted estimator from a file :meth:`save` wrote (checked as
        :meth:`Router.load <racer_lib.routing.policy.Router.load>` checks it)."""
        router = Router.load(path)
        meta = router.config.get(_META)
        if not isinstance(meta, dict) or not isinstance(meta.get("params"), dict):
            raise InputError(
                f"{path}: a router file without RacerRouter's metadata (not written by "
                "RacerRouter.save); load it with racer_lib.routing.policy.Router.load"
            )
        names = cls._get_param_names()
        est = cls(**{k: v for k, v in meta["params"].items() if k in names})
        est.router_ = replace(router, config=_without(_without(router.config, _META), RULE_KEY))
        est.unit_ = CostUnit(router.tokens_per_unit)
        for name in _FITTED:
            setattr(est, name, meta[name])
        est.history_ = pd.DataFrame(meta["history"])
        est.n_features_in_ = int(router.in_dim)
        return est


# ----------------------------------------------------------------------------------------
# Helpers


def _streams(random_state) -> tuple[np.random.Generator, np.random.SeedSequence]:
    """The hold-out's generator and the policies' seed sequence, both from ``random_state``."""
    seed = _integer("random_state", random_state, 0)
    hold_out, policies = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(hold_out), policies


def _seeds(n_seeds, sequence: np.random.SeedSequence) -> list[int]:
    """``n_seeds`` policy seeds (31-bit) drawn from ``sequence``."""
    n = _integer("n_seeds", n_seeds, 1)
    return [int(s) >> 1 for s in sequence.generate_state(n)]


def _hold_out(n: int, fraction, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the training and validation rows (``fraction`` of ``n``, at least one)."""
    fraction = _number("validation_fraction", fraction)
    if not 0 < fraction < 1:
        raise ConfigError(f"validation_fraction must lie in (0, 1) (got {fraction})")
    n_valid = max(1, round(fraction * n))
    if n - n_valid < 1:
        raise InputError(
            f"{n} rows are too few to hold out a validation fraction of {fraction}: give "
            "more rows, or X_valid, correct_valid and tokens_valid"
        )
    order = rng.permutation(n)
    return np.sort(order[n_valid:]), np.sort(order[:n_valid])


def _split(name: str, x, r, t, unit: CostUnit) -> Split:
    return Split(
        name,
        torch.as_tensor(x, dtype=torch.float32),
        torch.as_tensor(r, dtype=torch.float32),
        torch.as_tensor(t / unit.tokens_per_unit, dtype=torch.float32),
        unit,
    )


def _rows(name: str, X, correct, tokens) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X``, ``correct`` and ``tokens`` checked against each other."""
    x = _matrix(name, X)
    suffix = name[1:]  # "" or "_valid"
    r = _pairs(f"correct{suffix}", correct, len(x), binary=True)
    t = _pairs(f"tokens{suffix}", tokens, len(x))
    return x, r, t


def _matrix(name: str, X) -> np.ndarray:
    """``X`` as a finite float32 matrix with at least one row and one column."""
    try:
        x = np.asarray(X, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a matrix of numbers ({exc})") from exc
    if x.ndim != 2:
        raise InputError(
            f"{name} must have shape (n_pairs, n_features), one embedding per row (got shape "
            f"{x.shape}); reshape a single pair with X.reshape(1, -1)"
        )
    if x.shape[1] == 0:
        raise InputError(f"{name} has no features (shape {x.shape})")
    if not np.isfinite(x).all():
        row = int(np.flatnonzero(~np.isfinite(x).all(axis=1))[0])
        raise InputError(f"{name} holds a non-finite value (NaN or inf), first in row {row}")
    return x


def _pairs(name: str, values, n: int, binary: bool = False) -> np.ndarray:
    """A ``(n, 2)`` array of both modes' values (instruct, reasoning), checked."""
    try:
        a = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of numbers ({exc})") from exc
    if a.shape != (n, 2):
        raise InputError(
            f"{name} must have shape ({n}, 2), a row per pair and the columns (instruct, "
            f"reasoning) (got shape {a.shape})"
        )
    if n == 0:
        raise InputError(f"{name} has no rows: no pairs to fit or score")
    bad = ~np.isin(a, (0, 1)) if binary else ~(np.isfinite(a) & (a >= 0))
    if bad.any():
        row, col = (int(i[0]) for i in np.nonzero(bad))
        want = "0 or 1 (or False/True)" if binary else "a finite, non-negative token count"
        raise InputError(
            f"{name}: row {row}, column {col} ({('instruct', 'reasoning')[col]}) is "
            f"{a[row, col]:g}; each value must be {want}"
        )
    return a


def _number(name: str, value) -> float:
    """``value`` as a finite float, or a :class:`ConfigError` naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number (got {value!r})")
    return float(value)


def _integer(name: str, value, least: int) -> int:
    """``value`` as an int of at least ``least``, or a :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < least:
        raise ConfigError(f"{name} must be an integer of at least {least} (got {value!r})")
    return int(value)


def _plain(value):
    """A value a checked router file holds (numbers, text, lists; no NumPy scalars)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _without(config: dict, key: str) -> dict:
    return {k: v for k, v in config.items() if k != key}


def budget_scorer(X, tokens, budget: float | None = None, penalty: float = 1.0):
    """A scorer for ``GridSearchCV`` and ``cross_val_score`` that respects the budget: the
    routed accuracy (0 to 1) on the held-out fold minus ``penalty`` per cost unit by which the
    realized cost (:meth:`RacerRouter.cost`) exceeds ``budget`` (default: each candidate's own
    ``budget``; give the deployment's budget to compare candidates of other budgets).

    Accuracy alone (``RacerRouter.score``) picks the largest budget of a grid; this picks the
    most accurate candidate that keeps the budget on held-out pairs. ``X`` and ``tokens`` are
    the arrays given to the search (the scorer finds a fold's rows by their embedding)::

        search = GridSearchCV(RacerRouter(), {"budget": [2, 3, 4]},
                              scoring=budget_scorer(X, tokens, budget=3))
        search.fit(X, correct, tokens=tokens)
    """
    x = _matrix("X", X)
    t = _pairs("tokens", tokens, len(x))
    index = {row.tobytes(): i for i, row in enumerate(x)}

    def score(estimator, X_fold, correct_fold) -> float:
        rows = [index.get(row.tobytes()) for row in _matrix("X", X_fold)]
        if any(i is None for i in rows):
            raise InputError("budget_scorer: a fold holds rows that are not in its X")
        accuracy = estimator.score(X_fold, correct_fold)
        cost = estimator.cost(X_fold, t[rows])
        limit = float(estimator.budget if budget is None else budget)
        return accuracy - penalty * max(0.0, cost - limit)

    return score
