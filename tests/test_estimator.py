"""RacerRouter, the scikit-learn estimator: a planted signal found, the budget kept, the
scikit-learn conventions, saved routers, clear errors and no process-wide side effects."""

import inspect
import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import KFold, ParameterGrid, cross_val_score
from sklearn.utils import estimator_checks as checks

from racer_lib.errors import ConfigError, InputError, RacerError
from racer_lib.records.schema import RecordsError, correct_matrix, token_matrix
from racer_lib.routing import RacerRouter
from racer_lib.routing import train as tr
from racer_lib.routing.estimator import RouterNotFittedError
from racer_lib.routing.policy import Router

pytestmark = pytest.mark.usefixtures("one_thread")

#: Small data, a linear policy and fast steps: a fit takes a fraction of a second.
FAST = dict(arch="linear", lr=5e-2, dual_step=5e-2, epochs=40)
BUDGETS = (1.5, 2.0, 3.0)


def planted(n: int, dim: int, seed: int):
    """Pairs where reasoning helps only when the embedding's first coordinate is positive
    (the more, the larger it is), and costs about four times the instruct mode's tokens."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim))
    instruct = rng.random(n) < 0.6
    helped = rng.random(n) < np.minimum(0.6 + 0.4 * np.clip(x[:, 0], 0, None), 1)
    reasoning = np.where(x[:, 0] > 0, helped, instruct)
    tokens = np.column_stack([rng.integers(80, 120, n), rng.integers(300, 500, n)])
    return x, np.column_stack([instruct, reasoning]).astype(int), tokens


@pytest.fixture(scope="module")
def data():
    return planted(600, 8, seed=0), planted(2000, 8, seed=1)


@pytest.fixture(scope="module")
def fitted(data):
    (x, r, t), _ = data
    return {b: RacerRouter(b, **FAST).fit(x, r, t) for b in BUDGETS}


def _random_routing_accuracy(r, rate):
    """Expected accuracy of routing each pair to reasoning with probability ``rate``."""
    return float(((1 - rate) * r[:, 0] + rate * r[:, 1]).mean())


# ----------------------------------------------------------------------------------------
# What it learns


def test_the_planted_signal_is_recovered_and_beats_random_routing(data, fitted):
    _, (xt, rt, _) = data
    router = fitted[2.0]
    d = router.predict(xt)
    rate = d.mean()
    assert 0.1 < rate < 0.6, "the budget affords reasoning on part of the pairs"
    assert (xt[d == 1, 0] > 0).mean() > 0.9, "reasons where reasoning helps"
    assert router.score(xt, rt) > _random_routing_accuracy(rt, rate) + 0.03
    assert router.score(xt, rt) > rt[:, 0].mean() + 0.05  # and beats All-Instruct


def test_held_out_cost_respects_the_budget_and_tighter_reasons_less(data, fitted):
    (_, _, t), (xt, _, tt) = data
    rates = []
    for budget, router in fitted.items():
        assert router.cost(xt, tt) <= budget * 1.05, f"budget {budget}"
        assert router.valid_cost_ <= budget  # the selected checkpoint is within budget
        rates.append(router.predict(xt).mean())
    assert rates == sorted(rates) and rates[0] < rates[-1] - 0.3
    # the realized cost is the chosen modes' tokens in the training rows' unit
    router, d = fitted[2.0], fitted[2.0].predict(xt)
    assert router.unit_.tokens_per_unit == pytest.approx(t[:, 0].mean(), rel=0.05)
    expected = tt[np.arange(len(d)), d].mean() / router.unit_.tokens_per_unit
    assert router.cost(xt, tt) == pytest.approx(expected)


def test_fitted_attributes_describe_the_selected_checkpoint(fitted):
    router = fitted[2.0]
    assert isinstance(router.router_, Router) and router.router_.budget == 2.0
    assert router.n_features_in_ == 8 and router.lam_ >= 0
    assert 0 <= router.valid_accuracy_ <= 1 and len(router.seeds_) == 1
    h = router.history_
    assert len(h) == FAST["epochs"] and 1 <= router.best_epoch_ <= FAST["epochs"]
    at_best = h[h["epoch"] == router.best_epoch_].iloc[0]
    assert router.valid_accuracy_ == pytest.approx(at_best["valid_accuracy"] / 100)
    assert router.valid_cost_ == pytest.approx(at_best["valid_cost"])
    assert router.lam_ == pytest.approx(at_best["lambda"])


def test_of_several_seeds_the_best_valid_checkpoint_is_kept(data):
    (x, r, t), _ = data
    router = RacerRouter(2.0, n_seeds=3, **FAST).fit(x, r, t)
    assert len(set(router.seeds_)) == 3 and router.seed_ in router.seeds_
    best = []
    for _, h in router.history_.groupby("policy"):
        e = tr.select_checkpoint(h["valid_accuracy"], h["valid_cost"], 2.0)
        best.append(h.iloc[e])
    feasible = [b["valid_accuracy"] / 100 for b in best if b["valid_cost"] <= 2.0]
    assert feasible and router.valid_accuracy_ == pytest.approx(max(feasible))
    assert router.valid_cost_ <= 2.0


def test_realistic_records_with_a_given_validation_set(routing_data):
    """Simulated judge records (Qwen3-4B) and the paper's MLP; validation set given."""
    records, emb, _, _ = routing_data
    r, t = correct_matrix(records), token_matrix(records)
    s = {n: (records["split"] == n).to_numpy() for n in ("train", "valid", "test")}
    tr_, va, te = s["train"], s["valid"], s["test"]
    router = RacerRouter(2.5, lr=1e-3, dual_step=1e-2, epochs=20)
    router.fit(emb[tr_], r[tr_], t[tr_], emb[va], r[va], t[va])
    rate = router.predict(emb[te]).mean()
    assert 0 < rate < 1
    assert router.cost(emb[te], t[te]) <= 2.5 * 1.1
    assert router.score(emb[te], r[te]) >= _random_routing_accuracy(r[te], rate)


def test_same_random_state_same_router_other_state_other_router(data, fitted):
    (x, r, t), (xt, _, _) = data
    again = RacerRouter(2.0, **FAST).fit(x, r, t)
    np.testing.assert_array_equal(again.predict_proba(xt), fitted[2.0].predict_proba(xt))
    other = RacerRouter(2.0, random_state=1, **FAST).fit(x, r, t)
    assert not np.array_equal(other.predict_proba(xt), fitted[2.0].predict_proba(xt))


def test_predict_is_the_more_probable_mode(data, fitted):
    _, (xt, _, _) = data
    proba = fitted[2.0].predict_proba(xt)
    assert proba.shape == (len(xt), 2) and np.allclose(proba.sum(axis=1), 1)
    np.testing.assert_array_equal(fitted[2.0].predict(xt), (proba[:, 1] > 0.5).astype(int))


# ----------------------------------------------------------------------------------------
# scikit-learn conventions

APPLICABLE_CHECKS = [
    checks.check_parameters_default_constructible,
    checks.check_no_attributes_set_in_init,
    checks.check_get_params_invariance,
    checks.check_set_params,
    checks.check_do_not_raise_errors_in_init_or_set_params,
    checks.check_estimator_cloneable,
    checks.check_estimator_repr,
    checks.check_estimators_unfitted,
    checks.check_mixin_order,
    checks.check_estimator_tags_renamed,
    checks.check_valid_tag_types,
]


@pytest.mark.parametrize("check", APPLICABLE_CHECKS, ids=lambda c: c.__name__)
def test_sklearn_estimator_checks_that_apply(check):
    check("RacerRouter", RacerRouter())


def test_the_class_docstring_lists_the_checks_run_here():
    doc = " ".join(RacerRouter.__doc__.split())
    for check in APPLICABLE_CHECKS:
        assert check.__name__ in doc


def test_defaults_are_the_trainers():
    params = RacerRouter().get_params()
    policy, settings = tr.PolicyConfig(budget=3.0), tr.TrainSettings()
    for name in ("variant", "tau_r", "tau_c", "beta"):
        assert params[name] == getattr(policy, name)
    for name in ("arch", "epochs", "batch_size", "lr", "weight_decay", "dual_step", "lam0"):
        assert params[name] == getattr(settings, name)
    assert params["progress"] is False and params["budget"] == 3.0


def test_get_params_set_params_and_clone(fitted):
    router = fitted[2.0]
    names = set(inspect.signature(RacerRouter).parameters)
    assert set(router.get_params()) == names
    copy = clone(router)
    assert copy.get_params() == router.get_params() and not hasattr(copy, "router_")
    assert copy.set_params(budget=1.5, tau_r=0.5) is copy
    assert copy.budget == 1.5 and copy.tau_r == 0.5 and router.budget == 2.0
    with pytest.raises(ValueError, match="Invalid parameter"):
        copy.set_params(tau=1.0)


def test_cross_val_score_and_a_parameter_grid(data):
    (x, r, t), _ = data
    router = RacerRouter(2.0, **FAST)
    scores = cross_val_score(router, x, r, cv=KFold(3), params={"tokens": t})
    assert len(scores) == 3 and ((0.5 < scores) & (scores <= 1)).all()
    rates = {}
    for params in ParameterGrid({"budget": [1.5, 3.0], "variant": ["ACER", "RACER"]}):
        fit = clone(router).set_params(**params).fit(x, r, t)
        rates[tuple(params.values())] = fit.predict(x).mean()
    assert all(rates[(1.5, v)] < rates[(3.0, v)] for v in ("ACER", "RACER"))


def test_fit_returns_self_and_leaves_parameters_and_public_attributes_alone(data):
    """check_dont_overwrite_parameters and check_estimators_fit_returns_self, by hand."""
    (x, r, t), _ = data
    router = RacerRouter(2.0, **FAST)
    before, attrs = router.get_params(), set(vars(router))
    assert router.fit(x, r, t) is router
    assert router.get_params() == before
    added = set(vars(router)) - attrs
    assert added and all(a.endswith("_") and not a.startswith("_") for a in added)


def test_fit_is_idempotent_and_predicts_subsets_alike(data, fitted):
    """check_fit_idempotent and check_methods_subset_invariance, by hand."""
    (x, r, t), (xt, _, _) = data
    router = clone(fitted[2.0])
    first = router.fit(x, r, t).predict_proba(xt)
    np.testing.assert_array_equal(router.fit(x, r, t).predict_proba(xt), first)
    np.testing.assert_allclose(router.predict_proba(xt[:17]), first[:17], rtol=1e-6)


def test_pickle_round_trip(data, fitted):
    _, (xt, _, _) = data
    again = pickle.loads(pickle.dumps(fitted[2.0]))
    np.testing.assert_array_equal(again.predict_proba(xt), fitted[2.0].predict_proba(xt))


# ----------------------------------------------------------------------------------------
# Saved routers


def test_save_load_round_trip(data, fitted, tmp_path):
    _, (xt, _, tt) = data
    router = fitted[2.0]
    path = router.save(tmp_path / "router.pt")
    loaded = RacerRouter.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(xt), router.predict_proba(xt))
    assert loaded.get_params() == router.get_params()
    for name in ("lam_", "valid_accuracy_", "valid_cost_", "seed_", "seeds_", "best_epoch_"):
        assert getattr(loaded, name) == getattr(router, name), name
    assert loaded.unit_ == router.unit_ and loaded.n_features_in_ == 8
    assert loaded.cost(xt, tt) == router.cost(xt, tt)
    pd.testing.assert_frame_equal(loaded.history_, router.history_)
    assert loaded.router_.config == router.router_.config  # the metadata is not carried twice
    plain = Router.load(path)  # a checked router file, as `racer judge run --router` reads
    assert plain.budget == 2.0 and plain.config["estimator"]["params"]["budget"] == 2.0


def test_loading_a_router_file_without_the_estimators_metadata_fails_clearly(fitted, tmp_path):
    path = fitted[2.0].router_.save(tmp_path / "plain.pt")
    with pytest.raises(InputError, match="without RacerRouter's metadata"):
        RacerRouter.load(path)


def test_saving_before_fitting_fails_clearly(tmp_path):
    with pytest.raises(RouterNotFittedError, match="not fitted"):
        RacerRouter().save(tmp_path / "r.pt")


# ----------------------------------------------------------------------------------------
# Bad inputs


def test_a_budget_below_all_instructs_cost_is_refused(data):
    (x, r, t), _ = data
    with pytest.raises(RecordsError, match=r"budget C = 0.5 is infeasible.*cheapest"):
        RacerRouter(0.5, **FAST).fit(x, r, t)
    with pytest.raises(ConfigError, match="budget must be a finite number"):
        RacerRouter("a lot", **FAST).fit(x, r, t)


@pytest.mark.parametrize(
    "change, error, message",
    [
        (lambda x, r, t: (x[:, 0], r, t), InputError, r"X must have shape \(n_pairs, n_features"),
        (lambda x, r, t: (x, r[:, :1], t), InputError, r"correct must have shape \(600, 2\)"),
        (lambda x, r, t: (x, r, t[:-1]), InputError, r"tokens must have shape \(600, 2\)"),
        (lambda x, r, t: (x, r * 2, t), InputError, r"correct: row \d+, column 0 .* 0 or 1"),
        (lambda x, r, t: (x, r, -t), InputError, "finite, non-negative token count"),
        (lambda x, r, t: (np.where(x > 2, np.nan, x), r, t), InputError, "non-finite"),
        (lambda x, r, t: (x[:0], r[:0], t[:0]), InputError, "no rows"),
    ],
    ids=["1-d X", "correct 1 column", "tokens short", "correct 2", "negative", "nan", "empty"],
)
def test_bad_data_is_refused_with_a_clear_message(data, change, error, message):
    (x, r, t), _ = data
    with pytest.raises(error, match=message):
        RacerRouter(2.0, **FAST).fit(*change(x, r, t))


@pytest.mark.parametrize(
    "params, message",
    [
        ({"variant": "RACER-X"}, "unknown variant"),
        ({"tau_r": 0.0, "variant": "RACER"}, "tau_r must be > 0"),
        ({"validation_fraction": 1.5}, r"validation_fraction must lie in \(0, 1\)"),
        ({"random_state": None}, "random_state must be an integer"),
        ({"n_seeds": 0}, "n_seeds must be an integer of at least 1"),
        ({"epochs": 2.5}, "epochs must be an integer"),
        ({"arch": "cnn"}, "unknown arch"),
        ({"precision": "fp8"}, "precision must be one of"),
    ],
)
def test_bad_parameters_are_refused_at_fit_not_init(data, params, message):
    (x, r, t), _ = data
    router = RacerRouter(2.0, **{**FAST, **params})  # no validation here (sklearn convention)
    with pytest.raises(ConfigError, match=message):
        router.fit(x, r, t)


def test_a_partial_or_mismatched_validation_set_is_refused(data):
    (x, r, t), (xt, rt, tt) = data
    router = RacerRouter(2.0, **FAST)
    with pytest.raises(InputError, match="give all of X_valid, correct_valid and tokens_valid"):
        router.fit(x, r, t, X_valid=xt)
    with pytest.raises(InputError, match="X_valid has 3 features, but X has 8"):
        router.fit(x, r, t, xt[:, :3], rt, tt)


def test_predicting_with_the_wrong_dimension_or_unfitted_fails_clearly(data, fitted):
    _, (xt, rt, tt) = data
    with pytest.raises(InputError, match="X has 5 features, but this RacerRouter was fitted on 8"):
        fitted[2.0].predict(xt[:, :5])
    with pytest.raises(InputError, match=r"correct must have shape \(2000, 2\)"):
        fitted[2.0].score(xt, rt[:10])
    with pytest.raises(InputError, match=r"tokens must have shape \(2000, 2\)"):
        fitted[2.0].cost(xt, tt[:, :1])
    with pytest.raises(RouterNotFittedError) as caught:
        RacerRouter().predict(xt)
    assert isinstance(caught.value, NotFittedError) and isinstance(caught.value, RacerError)


# ----------------------------------------------------------------------------------------
# No process-wide side effects


def test_fitting_leaves_malloc_threads_and_stderr_alone(data, monkeypatch, capfd):
    """The trainer sets glibc's malloc options through ctypes only when asked
    (keep_freed_memory); the estimator does not ask, shows no progress bar and leaves torch's
    threads as they are."""
    calls = []
    monkeypatch.setattr(
        tr.ctypes, "CDLL", lambda *a: calls.append(a) or (_ for _ in ()).throw(OSError)
    )
    monkeypatch.setattr(tr.platform, "libc_ver", lambda: ("glibc", "2.36"))
    (x, r, t), _ = data
    threads = torch.get_num_threads()
    RacerRouter(2.0, **{**FAST, "epochs": 2}).fit(x, r, t)
    assert calls == [] and torch.get_num_threads() == threads
    assert capfd.readouterr().err == ""
    # the control: the trainer's default leaves malloc alone too; asked, it reaches for it
    split = tr.Split("s", torch.as_tensor(x[:50], dtype=torch.float32),
                     torch.as_tensor(r[:50], dtype=torch.float32),
                     torch.as_tensor(t[:50] / 100.0, dtype=torch.float32))  # fmt: skip
    config = [tr.PolicyConfig(budget=3.0)]
    tr.train_policies(split, split, config, tr.TrainSettings(epochs=1))
    assert calls == [] and capfd.readouterr().err == ""  # and no progress bar by default
    tr.train_policies(split, split, config, tr.TrainSettings(epochs=1, keep_freed_memory=True))
    assert len(calls) == 1
