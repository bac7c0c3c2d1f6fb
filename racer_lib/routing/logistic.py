"""A baseline beside every router: a logistic regression on the same embeddings, its threshold
set on the validation split to meet the budget.

:class:`LogisticRouter` fits scikit-learn's ``LogisticRegression`` to predict, from a pair's
embedding, whether the reasoning mode is right where the instruct mode is wrong (``r(z, 1) >
r(z, 0)``), then routes the pairs whose score is at or above the threshold that
:func:`racer_lib.routing.baselines.match_budget` sets on the validation pairs: the largest
validation reasoning rate whose cost stays within the budget ``C``. It fits in well under a
second where RACER trains for seconds to minutes, so ``racer router train`` fits it too and
``racer router evaluate`` and ``racer router sweep`` show it beside RACER: a router that does no
better than it is not worth its training.

Saved as JSON beside the router file (:func:`baseline_path`): coefficients, intercept,
threshold, budget and cost unit, read back as data.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from racer_lib.errors import InputError

__all__ = ["LogisticRouter", "baseline_path"]

NAME = "logistic regression (baseline)"


def baseline_path(router_path: str | os.PathLike) -> Path:
    """``router.pt`` -> ``router.logistic.json``: the baseline beside a router file."""
    p = Path(router_path)
    return p.with_name(p.name.removesuffix(p.suffix) + ".logistic.json")


@dataclass
class LogisticRouter:
    """Logistic regression on embeddings, thresholded to meet ``budget`` on the validation
    pairs (module docstring). ``C`` is scikit-learn's inverse regularisation strength.
    Fitted: ``coef_``, ``intercept_``, ``threshold_``, ``tokens_per_unit_``, ``valid_cost_``,
    ``valid_rate_``."""

    budget: float
    C: float = 1.0
    coef_: list | None = None
    intercept_: float = 0.0
    threshold_: float = math.inf
    tokens_per_unit_: float = 1.0
    valid_cost_: float = math.nan
    valid_rate_: float = math.nan

    def fit(self, x, correct, tokens, x_valid, correct_valid, tokens_valid) -> LogisticRouter:
        """Fit on the training pairs, set the threshold on the validation pairs; costs in
        the training pairs' unit (mean instruct tokens)."""
        from sklearn.linear_model import LogisticRegression

        from racer_lib.routing.baselines import match_budget

        x, r, t = (np.asarray(a, dtype=np.float64) for a in (x, correct, tokens))
        self.tokens_per_unit_ = float(t[:, 0].mean())
        gain = (r[:, 1] > r[:, 0]).astype(int)
        if gain.min() == gain.max():  # one class: a constant score
            self.coef_, self.intercept_ = [0.0] * x.shape[1], float(2 * gain[0] - 1)
        else:
            model = LogisticRegression(C=self.C, max_iter=2000).fit(x, gain)
            self.coef_, self.intercept_ = model.coef_[0].tolist(), float(model.intercept_[0])
        cost_valid = np.asarray(tokens_valid, dtype=np.float64) / self.tokens_per_unit_
        threshold = match_budget(self.score(x_valid), cost_valid, self.budget)
        self.threshold_ = threshold.value
        self.valid_cost_, self.valid_rate_ = threshold.valid_cost, threshold.rate
        return self

    def score(self, x) -> np.ndarray:
        """The logit of ``P(reasoning right where instruct is wrong | z)`` per row."""
        if self.coef_ is None:
            raise InputError("this LogisticRouter is not fitted; call fit first")
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.coef_):
            raise InputError(
                f"embeddings of shape {x.shape}; this baseline was fitted on "
                f"{len(self.coef_)}-dimensional embeddings"
            )
        return x @ np.asarray(self.coef_) + self.intercept_

    def predict(self, x) -> np.ndarray:
        """1 (reasoning) where the score is at or above the threshold."""
        return (self.score(x) >= self.threshold_).astype(np.int64)

    def save(self, path: str | os.PathLike) -> Path:
        from racer_lib.records.io import atomic_write

        text = json.dumps(asdict(self))  # an infinite threshold as Infinity, read back by json
        atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> LogisticRouter:
        from racer_lib.records.files import check_file

        path = check_file(path, "baseline file")
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError, KeyError, AttributeError):
            raise InputError(f"{path}: not a logistic-regression baseline file") from None
