"""Training routers: batched = separate, Algorithm 1's behaviour, model selection, bad inputs."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from racer_lib.errors import ConfigError
from racer_lib.records.schema import CostUnit, RecordsError
from racer_lib.routing import dro, steps
from racer_lib.routing import train as tr

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def data(routing_data):
    records, emb, unit, sp = routing_data
    return records, emb, unit, sp["train"], sp["valid"]


def _train(data, configs, **settings):
    _, _, unit, train, valid = data
    return tr.train_policies(
        train, valid, configs, tr.TrainSettings(**settings), unit, progress=False
    )


def _expected_cost(p, split):
    c = split.c.numpy()
    return ((1 - p) * c[:, 0] + p * c[:, 1]).mean(axis=-1)


# ----------------------------------------------------------------------------------------
# The batch of policies against one plain loop per policy

SEPARATE = [
    tr.PolicyConfig(budget=2.0, seed=1, variant="ACER"),
    tr.PolicyConfig(budget=4.0, seed=2, variant="RACER-C", tau_c=0.5),
    tr.PolicyConfig(budget=50.0, seed=3, variant="RACER", tau_r=0.5, tau_c=2.0, beta=0.02),
]


@pytest.mark.parametrize("fused", [True, False])
def test_batched_equals_separate(data, fused):
    _, _, _, train, valid = data
    settings = tr.TrainSettings(epochs=2, lr=1e-3, dual_step=1e-2, fused=fused)
    result = tr.train_policies(train, valid, SEPARATE, settings, progress=False)
    # train_policies returns the best valid epoch, train_reference the last: these settings
    # make them one and the same, which is what lets the parameters be compared.
    assert result.best_epoch == [2, 2, 2], "the comparison needs the last epoch to be selected"
    lam = result.history.pivot(index="epoch", columns="policy", values="lambda")
    for p, config in enumerate(SEPARATE):
        model, history = tr.train_reference(train, valid, config, settings)
        linears = [m for m in model if isinstance(m, torch.nn.Linear)]
        for (w, b), lin in zip(result.policies.policy_layers(p), linears, strict=True):
            torch.testing.assert_close(w, lin.weight.detach().T, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(b, lin.bias.detach(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(
            lam[p].to_numpy(), history["lambda"].to_numpy(), rtol=1e-4, atol=1e-7
        )
        logits = model(train.x).squeeze(-1).detach()
        np.testing.assert_allclose(
            result.p_reasoning(train.x)[p], torch.sigmoid(logits), rtol=1e-4, atol=1e-6
        )
    assert (lam[0] > 0).all() and (lam[1] > 0).all() and (lam[2] == 0).all()


def _set(seed, configs, valid_rows=None):
    """A simulated record set of a fixed train size (split anew with exact shares), as a
    :class:`~racer_lib.routing.train.SetTraining` of ``configs``."""
    from racer_lib.records.sets import judge_set

    records, emb = judge_set("qwen3-4b", "wildguardmix", seed=seed, dim=8, scale=0.1,
                             split_shares=(0.7, 0.15, 0.15))  # fmt: skip
    unit, sp = tr.splits(records, emb)
    valid = sp["valid"]
    if valid_rows is not None:
        valid = tr.Split("valid", valid.x[:valid_rows], valid.r[:valid_rows],
                         valid.c[:valid_rows], unit)  # fmt: skip
    return tr.SetTraining(sp["train"], valid, configs, unit)


@pytest.mark.parametrize("fused", [False, True])
def test_record_sets_trained_together_are_each_trained_alone(fused):
    """Three record sets, each with its own seeds and budgets, in one pass: every policy is
    the one its set alone trains (bit for bit with the unfused optimizer; to float32 rounding
    with PyTorch's fused AdamW, whose vector loop covers the elements of a longer batch
    differently); each is selected on its own valid split, of different sizes here."""
    settings = tr.TrainSettings(arch="linear", epochs=3, lr=5e-3, batch_size=32,
                                dual_step=1e-2, fused=fused)  # fmt: skip
    sets = [
        _set(1000, [tr.PolicyConfig(1.6, seed=1000, variant="ACER"),
                    tr.PolicyConfig(1.6, seed=1000, variant="RACER-C", tau_c=0.3)]),
        _set(1001, [tr.PolicyConfig(2.0, seed=1001, variant="RACER-R", tau_r=0.3),
                    tr.PolicyConfig(5.0, seed=7)], valid_rows=40),
        _set(1002, [tr.PolicyConfig(1.6, seed=1002, variant="ACER")]),
    ]  # fmt: skip
    together = tr.train_sets(sets, settings)
    assert [len(r.configs) for r in together] == [2, 2, 1]
    tol = {"rtol": 0, "atol": 0} if not fused else {"rtol": 1e-5, "atol": 1e-6}
    for s, both in zip(sets, together, strict=True):
        alone = tr.train_policies(s.train, s.valid, s.configs, settings, s.unit)
        assert both.best_epoch == alone.best_epoch and both.unit == alone.unit
        for p in range(len(s.configs)):
            for (wa, ba), (wb, bb) in zip(alone.policies.policy_layers(p),
                                          both.policies.policy_layers(p), strict=True):  # fmt: skip
                torch.testing.assert_close(wb, wa, **tol)
                torch.testing.assert_close(bb, ba, **tol)
        assert list(both.history.columns) == list(alone.history.columns)
        numbers = ["lambda", "train_reward", "train_cost", "valid_accuracy", "valid_cost"]
        np.testing.assert_allclose(both.history[numbers], alone.history[numbers], **tol)
        assert both.history["policy"].max() == len(s.configs) - 1
    # the sets' data differ, so their routers do: nothing leaked from one set into another
    a, b = together[0].policies.policy_layers(0)[0][0], together[2].policies.policy_layers(0)[0][0]
    assert not torch.equal(a, b)


def test_record_sets_of_different_train_sizes_are_refused():
    one = _set(1000, [tr.PolicyConfig(2.0)])
    other = _set(1001, [tr.PolicyConfig(2.0)])
    short = tr.SetTraining(tr.Split("train", other.train.x[:-3], other.train.r[:-3],
                                    other.train.c[:-3], other.unit), other.valid,
                           other.configs, other.unit)  # fmt: skip
    with pytest.raises(ConfigError, match="record set 1: a train split of"):
        tr.train_sets([one, short], tr.TrainSettings(arch="linear", epochs=1))
    assert tr.train_sets([], tr.TrainSettings()) == []


def test_keeping_freed_memory_changes_speed_not_results(monkeypatch):
    """TrainSettings(keep_freed_memory=True) has glibc's malloc keep freed memory (a speed-up at
    the paper's sizes): the trained policies and their history are bit-for-bit those of
    malloc's defaults. The first layer's gradient (4 x 9000 x 256 floats, 37 MB) is above
    glibc's largest mmap threshold, so the defaults serve it from fresh mmaps and the setting
    does apply. Off by default: a library call changes no process-wide setting unless asked."""
    calls = []
    real = tr._keeping_freed_memory
    monkeypatch.setattr(tr, "_keeping_freed_memory", lambda on: calls.append(on) or real(on))
    gen = torch.Generator().manual_seed(0)
    n, dim = 150, 9000  # 3 steps an epoch, the last one partial
    x = torch.randn(n, dim, generator=gen)
    r = (torch.rand(n, 2, generator=gen) > 0.5).float()
    c = torch.rand(n, 2, generator=gen) * 4
    train, valid = tr.Split("train", x, r, c), tr.Split("valid", x[:40], r[:40], c[:40])
    configs = [
        tr.PolicyConfig(budget=1.5 + p / 4, seed=p, variant=v) for p, v in enumerate(tr.VARIANTS)
    ]
    settings = tr.TrainSettings(epochs=2, lr=1e-3, dual_step=1e-2)
    assert settings.keep_freed_memory is False
    results = {
        keep: tr.train_policies(train, valid, configs, replace(settings, keep_freed_memory=keep))
        for keep in (True, False)
    }
    assert calls == [True, False]
    for a, b in zip(results[True].policies.parameters(), results[False].policies.parameters()):
        assert torch.equal(a, b)
    pd.testing.assert_frame_equal(results[True].history, results[False].history, check_exact=True)
    assert results[True].history["lambda"].gt(0).any()  # the dual step did move


def test_mallopt_is_called_only_when_asked(monkeypatch):
    """The malloc settings are changed (and restored) only inside a call that asks for it."""
    if __import__("platform").libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    import ctypes

    seen = []

    class Libc:
        def mallopt(self, param, value):
            seen.append((param, value))
            return 1

        def malloc_trim(self, pad):
            seen.append(("trim", pad))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda name: Libc())
    with tr._keeping_freed_memory(False):
        pass
    assert seen == []
    with tr._keeping_freed_memory(True):
        assert seen and all(p != "trim" for p, _ in seen)
    assert seen[-1] == ("trim", 0)


def test_gather_copies_the_indexed_rows_into_the_buffer():
    x = torch.arange(60.0).reshape(20, 3)
    idx = torch.tensor([[4, 0, 19], [7, 7, 1]])
    buf = torch.full((10, 3), -1.0)  # larger than needed, as for a last, partial minibatch
    got = steps.gather(x, idx.reshape(-1), idx.shape, buf)
    assert torch.equal(got, x[idx]) and got.data_ptr() == buf.data_ptr()


# ----------------------------------------------------------------------------------------
# The worst-case weights


def test_batch_weights_torch_equals_numpy_rows():
    rng = np.random.default_rng(0)
    f = rng.random((5, 33)) * 4
    tau = np.array([0.05, 0.3, 1.0, 7.0, math.inf])
    for kind in ("reward", "cost"):
        got = dro.batch_weights_torch(torch.as_tensor(f), torch.as_tensor(tau), kind).numpy()
        for p in range(4):
            np.testing.assert_allclose(
                got[p], dro.batch_weights(f[p], tau[p], kind), rtol=1e-10, atol=1e-14
            )
        np.testing.assert_allclose(got[4], np.full(33, 1 / 33), rtol=1e-12)
    # Rewards: the worst case leans on low rewards; costs: on high costs.
    low, high = np.argmin(f[0]), np.argmax(f[0])
    w_r = dro.batch_weights_torch(torch.as_tensor(f), torch.as_tensor(tau), "reward").numpy()
    w_c = dro.batch_weights_torch(torch.as_tensor(f), torch.as_tensor(tau), "cost").numpy()
    assert w_r[0].argmax() == low and w_c[0].argmax() == high


def test_step_terms_reweight_costs_towards_the_expensive_pairs():
    logits = torch.zeros(2, 4)
    r = torch.tensor([[1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 0.0]]).expand(2, 4, 2)
    c = torch.tensor([[1.0, 2.0], [1.0, 9.0], [1.0, 3.0], [1.0, 5.0]]).expand(2, 4, 2)
    rew, cost, w_r, w_c, ent = steps.step_terms(
        logits, r, c, torch.tensor([0.1, math.inf]), torch.tensor([0.1, math.inf])
    )
    torch.testing.assert_close(rew[0], torch.tensor([1.0, 0.5, 0.5, 0.0]))
    torch.testing.assert_close(cost[0], torch.tensor([1.5, 5.0, 2.0, 3.0]))
    assert w_c[0].argmax() == 1 and w_c[0, 1] > 0.99  # the costliest pair
    assert w_r[0].argmax() == 3 and w_r[0, 3] > 0.98  # the lowest reward
    np.testing.assert_allclose(
        w_c[0], dro.batch_weights(cost[0].double(), 0.1, "cost"), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(
        w_r[0], dro.batch_weights(rew[0].double(), 0.1, "reward"), rtol=1e-5, atol=1e-7
    )
    torch.testing.assert_close(w_r[1], torch.full((4,), 0.25))  # tau = inf: uniform
    torch.testing.assert_close(w_c[1], torch.full((4,), 0.25))
    torch.testing.assert_close(ent, torch.full((2, 4), math.log(2)))


def test_entropy_matches_bernoulli_and_has_finite_gradients_when_saturated():
    logits = torch.tensor([-200.0, -30.0, -2.0, 0.0, 3.0, 30.0, 200.0], requires_grad=True)
    h = steps.entropy(logits)
    p = torch.sigmoid(logits.detach()).double()
    expected = -(torch.xlogy(p, p) + torch.xlogy(1 - p, 1 - p))
    torch.testing.assert_close(h.double(), expected, rtol=1e-5, atol=1e-6)
    h.sum().backward()
    assert torch.isfinite(logits.grad).all()


def test_saturated_policy_keeps_finite_gradients(data):
    """A loose budget at a high learning rate drives pi(1|z) to exactly 1.0 in float32."""
    result = _train(data, [tr.PolicyConfig(budget=50.0, seed=0, variant="ACER")], epochs=2, lr=1e-2)
    p = result.p_reasoning(data[3].x)
    assert np.isfinite(p).all() and (p == 1.0).any()  # saturated somewhere, still finite
    assert np.isfinite(result.history[["lambda", "train_cost", "valid_accuracy"]]).all().all()


def test_history_measures_the_policy_it_trains(data):
    """With a zero learning rate the policy stays at its initialisation: the history's train
    and valid columns are then exactly that policy's expectations (every pair counted once)."""
    _, _, _, train, valid = data
    configs = [tr.PolicyConfig(budget=2.0, seed=3), tr.PolicyConfig(budget=50.0, seed=4)]
    result = _train(data, configs, epochs=2, lr=0.0, weight_decay=0.0, batch_size=100)
    assert train.n % 100 != 0  # a short last batch
    p = result.p_reasoning(train.x)
    r = train.r.numpy()
    for epoch in (1, 2):
        h = result.history[result.history["epoch"] == epoch].set_index("policy")
        np.testing.assert_allclose(h["train_cost"], _expected_cost(p, train), rtol=1e-5)
        np.testing.assert_allclose(
            h["train_reward"], ((1 - p) * r[:, 0] + p * r[:, 1]).mean(1), rtol=1e-5
        )
        pv = result.p_reasoning(valid.x)
        np.testing.assert_allclose(h["valid_cost"], _expected_cost(pv, valid), rtol=1e-5)
    # The dual variable still moves: up while the budget is exceeded, never below 0.
    lam = _pivot(result, "lambda")
    assert lam[0].iloc[1] > lam[0].iloc[0] > 0 and (lam[1] == 0).all()


# ----------------------------------------------------------------------------------------
# Algorithm 1's behaviour on simulated data

BEHAVIOUR = [
    tr.PolicyConfig(budget=50.0, seed=0, variant="ACER"),  # loose
    tr.PolicyConfig(budget=1.5, seed=0, variant="ACER"),  # tight
    tr.PolicyConfig(budget=3.0, seed=0, variant="ACER"),
    tr.PolicyConfig(budget=3.0, seed=0, variant="RACER-C", tau_c=0.2),
    tr.PolicyConfig(budget=3.0, seed=1, variant="ACER"),
    tr.PolicyConfig(budget=3.0, seed=1, variant="RACER-C", tau_c=0.2),
]


@pytest.fixture(scope="module")
def behaviour(data):
    return _train(data, BEHAVIOUR, epochs=6, lr=1e-3, dual_step=1e-3)


def _pivot(result, value):
    return result.history.pivot(index="epoch", columns="policy", values=value)


def test_history_is_complete_and_finite(behaviour):
    h = behaviour.history
    assert len(h) == 6 * len(BEHAVIOUR)
    assert set(h["variant"]) == {"ACER", "RACER-C"} and (h["lambda"] >= 0).all()
    numeric = h[["lambda", "train_reward", "train_cost", "valid_accuracy", "valid_cost"]]
    assert np.isfinite(numeric.to_numpy()).all()
    assert list(h.columns[:7]) == [
        "policy",
        "epoch",
        "lambda",
        "train_reward",
        "train_cost",
        "valid_accuracy",
        "valid_cost",
    ]


def test_returned_policies_are_the_selected_checkpoints(behaviour, data):
    _, _, _, _, valid = data
    acc, cost = tr._evaluate(behaviour.policies, valid)
    h = behaviour.history.set_index(["policy", "epoch"])
    assert len(set(behaviour.best_epoch)) > 1  # not all the last epoch
    for p, epoch in enumerate(behaviour.best_epoch):
        assert acc[p] == pytest.approx(h.loc[(p, epoch), "valid_accuracy"], abs=1e-3)
        assert cost[p] == pytest.approx(h.loc[(p, epoch), "valid_cost"], abs=1e-4)
        expected = (
            tr.select_checkpoint(
                _pivot(behaviour, "valid_accuracy")[p],
                _pivot(behaviour, "valid_cost")[p],
                BEHAVIOUR[p].budget,
            )
            + 1
        )
        assert epoch == expected


def test_tight_budget_raises_lambda_and_selection_meets_it(behaviour, data):
    _, _, _, _, valid = data
    lam = _pivot(behaviour, "lambda")[1]
    assert lam.iloc[0] > 0 and lam.max() > 0.03
    vcost = _pivot(behaviour, "valid_cost")[1]
    assert (vcost <= 1.5).any()  # feasible on validation at some epoch ...
    _, cost = tr._evaluate(behaviour.policies, valid)
    assert cost[1] <= 1.5  # ... so the selected policy meets the budget
    # and it reasons far less than the unconstrained policy
    assert (
        _pivot(behaviour, "train_cost")[1].iloc[-1]
        < 0.5 * _pivot(behaviour, "train_cost")[0].iloc[-1]
    )


def test_loose_budget_keeps_lambda_zero_and_reasons_where_it_helps(behaviour, data):
    _, _, _, train, _ = data
    assert (_pivot(behaviour, "lambda")[0] == 0).all()
    r = train.r.numpy()
    helps = r[:, 1] > r[:, 0]
    p = behaviour.p_reasoning(train.x)[0]
    assert helps.sum() > 50
    assert p[helps].mean() > 0.85 and (p[helps] > 0.5).mean() > 0.9
    acc = _pivot(behaviour, "valid_accuracy")[0]
    assert acc.iloc[-1] > acc.iloc[0] + 2  # learned something


def test_racer_c_costs_no_more_than_acer_at_the_same_budget(behaviour, data):
    _, _, _, train, _ = data
    lam, cost = _pivot(behaviour, "lambda"), _pivot(behaviour, "train_cost")
    p = behaviour.p_reasoning(train.x)
    selected = _expected_cost(p, train)
    for acer, racer_c in [(2, 3), (4, 5)]:
        # The worst-case cost exceeds the mean, so the dual variable climbs faster ...
        assert (lam[racer_c] >= lam[acer]).all()
        # ... and the trained policies spend less.
        assert cost[racer_c].iloc[-1] <= cost[acer].iloc[-1] + 0.01
        assert selected[racer_c] <= selected[acer]


def test_linear_policy_trains(data):
    configs = [
        tr.PolicyConfig(budget=50.0, seed=0, variant="ACER"),
        tr.PolicyConfig(budget=1.5, seed=0, variant="RACER", tau_r=1.0, tau_c=1.0),
    ]
    result = _train(data, configs, arch="linear", epochs=5, lr=1e-2, dual_step=1e-3)
    assert [len(w) for w, _ in result.policies.policy_layers(0)] == [16]
    assert result.router(0, "x").arch == "linear"
    acc, vcost = _pivot(result, "valid_accuracy"), _pivot(result, "valid_cost")
    assert acc[0].iloc[-1] > acc[0].iloc[0]  # unconstrained: accuracy climbs
    assert (np.diff(vcost[1]) < 0).all()  # tight budget: cost falls every epoch
    assert (_pivot(result, "lambda")[1] > 0).all()


def test_same_seed_same_result_other_seed_other_result(data):
    configs = [
        tr.PolicyConfig(budget=2.0, seed=4),
        tr.PolicyConfig(budget=2.0, seed=4),
        tr.PolicyConfig(budget=2.0, seed=5),
    ]
    a = _train(data, configs, epochs=1, lr=1e-3)
    b = _train(data, configs[:1], epochs=1, lr=1e-3)
    x = data[3].x
    pa, pb = a.p_reasoning(x), b.p_reasoning(x)
    np.testing.assert_array_equal(pa[0], pa[1])  # same seed in one batch
    np.testing.assert_allclose(pa[0], pb[0], rtol=1e-5, atol=1e-6)  # ... or another batch
    pd.testing.assert_series_equal(
        a.history.query("policy == 0")["lambda"].reset_index(drop=True),
        b.history["lambda"],
        rtol=1e-5,
    )
    assert np.abs(pa[0] - pa[2]).max() > 1e-3  # another seed


# ----------------------------------------------------------------------------------------
# Model selection (appendix B.3)


def test_select_best_accuracy_among_feasible_epochs():
    acc = [80.0, 90.0, 85.0, 88.0, 95.0]
    cost = [1.0, 2.5, 1.9, 2.0, 3.0]
    # 90 and 95 are over budget; 88 at cost == budget
    assert tr.select_checkpoint(acc, cost, 2.0) == 3
    assert tr.select_checkpoint(acc, cost, 5.0) == 4
    assert tr.select_checkpoint(acc, cost, 1.95) == 2
    assert tr.select_checkpoint([80.0, 90.0, 90.0], [1.0, 1.0, 1.0], 2.0) == 1  # ties: the first


def test_select_closest_cost_when_no_epoch_is_feasible():
    assert tr.select_checkpoint([70.0, 99.0, 80.0], [1.3, 2.0, 1.2], 1.0) == 2
    assert tr.select_checkpoint([99.0, 70.0], [1.5, 1.5], 1.0) == 0  # equally close: the first


# ----------------------------------------------------------------------------------------
# Bad inputs, each with its message


def test_budget_at_or_below_cheapest_is_infeasible(data):
    _, _, unit, train, valid = data
    cheapest = float(train.c.min(dim=1).values.mean())
    for budget in (cheapest, cheapest - 0.1, 0.0):
        with pytest.raises(
            RecordsError,
            match=r"<train split>: field 'budget': budget C = .* is "
            r"infeasible: at or below the cheapest possible cost "
            rf"{cheapest:.4f} cost units .*1 unit = "
            rf"{unit.tokens_per_unit:.1f} instruct tokens",
        ):
            tr.train_policies(
                train,
                valid,
                [tr.PolicyConfig(budget=2.0), tr.PolicyConfig(budget=budget)],
                unit=unit,
                progress=False,
            )
    with pytest.raises(RecordsError, match="at or below"):
        tr.train_reference(
            train, valid, tr.PolicyConfig(budget=cheapest), tr.TrainSettings(epochs=1)
        )


def test_empty_split_is_named(data):
    records, emb, unit, _, _ = data
    with pytest.raises(RecordsError, match="the valid split is empty"):
        tr.make_split("valid", records.iloc[:0], emb[:0], unit)
    no_valid = records["split"] != "valid"
    with pytest.raises(RecordsError, match=r"<valid split>.*the valid split is empty"):
        tr.splits(records[no_valid], emb[no_valid.to_numpy()])
    no_train = records["split"] != "train"
    with pytest.raises(RecordsError, match="the train split is empty"):
        tr.splits(records[no_train], emb[no_train.to_numpy()])


def test_embeddings_of_wrong_length_or_width(data):
    records, emb, unit, train, valid = data
    with pytest.raises(
        RecordsError,
        match=r"field 'embedding': 10 records but embeddings of "
        r"shape \(9, 16\)",
    ):
        tr.make_split("train", records.iloc[:10], emb[:9], unit)
    narrow = tr.Split("valid", valid.x[:, :12], valid.r, valid.c)
    with pytest.raises(
        RecordsError,
        match=r"<valid split>: field 'embedding': embeddings have "
        r"dimension 12, the train split's have 16",
    ):
        tr.train_policies(train, narrow, [tr.PolicyConfig(budget=2.0)], progress=False)


def test_bad_configs_are_refused():
    with pytest.raises(
        ConfigError, match="unknown variant 'DRO'; choose one of ACER, RACER-R, RACER-C, RACER"
    ):
        tr.PolicyConfig(budget=2.0, variant="DRO")
    with pytest.raises(ValueError, match=r"beta must be >= 0 \(got -0.1\)"):
        tr.PolicyConfig(budget=2.0, beta=-0.1)
    for name in ("tau_r", "tau_c"):
        for bad in (0.0, -1.0):
            with pytest.raises(ValueError, match=rf"{name} must be > 0 \(got {bad}\)"):
                tr.PolicyConfig(budget=2.0, **{name: bad})
    assert tr.PolicyConfig(budget=2.0, variant="ACER", tau_c=0.1).taus == (math.inf, math.inf)
    assert tr.PolicyConfig(budget=2.0, variant="RACER-R", tau_r=0.3).taus == (0.3, math.inf)
    assert tr.PolicyConfig(budget=2.0, variant="RACER-C", tau_c=0.1).taus == (math.inf, 0.1)


def test_unknown_arch_and_empty_batch_are_refused(data):
    _, _, _, train, valid = data
    with pytest.raises(ValueError, match="unknown policy architecture 'cnn'"):
        tr.train_policies(
            train,
            valid,
            [tr.PolicyConfig(budget=2.0)],
            tr.TrainSettings(arch="cnn", epochs=1),
            progress=False,
        )
    with pytest.raises(ConfigError, match="no policy configurations to train"):
        tr.train_policies(train, valid, [], progress=False)


def test_cost_unit_travels_with_the_result(data):
    _, _, unit, train, valid = data
    result = tr.train_policies(
        train,
        valid,
        [tr.PolicyConfig(budget=2.0)],
        tr.TrainSettings(epochs=1),
        unit=CostUnit(123.0),
        progress=False,
    )
    assert result.router(0, "e").tokens_per_unit == 123.0


def test_default_config_is_the_papers_benchmark_protocol():
    """Appendix B.5: tau_R = 1 and no robust reweighting of the cost term (RACER-R)."""
    config = tr.PolicyConfig(budget=3.0)
    assert config.variant == "RACER-R"
    assert config.taus == (1.0, math.inf)
    assert config.beta == 0.005


# ----------------------------------------------------------------------------------------
# Seed groups, bf16 and the device (issue 24)

GROUPED = [
    tr.PolicyConfig(budget=budget, seed=seed, variant=variant, tau_c=0.5)
    for seed in (5, 6)
    for budget, variant in ((2.0, "ACER"), (3.0, "RACER-R"), (4.0, "RACER-C"), (50.0, "RACER"))
]


@pytest.mark.parametrize("arch", ["mlp", "linear"])
def test_seed_groups_train_what_the_per_policy_trainer_trains(data, arch):
    """Two seeds of four policies each: one first-layer matmul per seed, the same policies to
    float32 rounding (1e-5 relative) as one matmul per policy."""
    seeds = [c.seed for c in GROUPED]
    kwargs = {"arch": arch, "epochs": 2, "lr": 1e-3, "dual_step": 1e-2}
    assert steps.SeedGroups.applies(seeds, tr.TrainSettings(group_seeds=True, **kwargs))
    grouped = _train(data, GROUPED, group_seeds=True, **kwargs)
    plain = _train(data, GROUPED, **kwargs)  # the default: one first-layer matmul per policy
    assert grouped.best_epoch == plain.best_epoch
    for p in range(len(GROUPED)):
        for (wg, bg), (wp, bp) in zip(
            grouped.policies.policy_layers(p), plain.policies.policy_layers(p), strict=True
        ):
            torch.testing.assert_close(wg, wp, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(bg, bp, rtol=1e-5, atol=1e-6)
    columns = ["lambda", "train_reward", "train_cost", "valid_accuracy", "valid_cost"]
    np.testing.assert_allclose(
        grouped.history[columns].to_numpy(), plain.history[columns].to_numpy(), rtol=1e-5, atol=1e-6
    )


def test_seed_groups_apply_to_equal_groups_of_two_or_more():
    on = tr.TrainSettings(group_seeds=True)
    assert steps.SeedGroups.applies([0, 1, 0, 1], on)
    assert not steps.SeedGroups.applies([0, 1, 2], on)  # groups of one: nothing shared
    assert not steps.SeedGroups.applies([0, 0, 1], on)  # unequal groups
    assert not steps.SeedGroups.applies([0, 0, 1, 1], tr.TrainSettings())  # off by default


def test_bf16_trains_close_to_fp32_and_is_not_fp32(data):
    """bf16 matmuls with float32 master weights: other numbers than fp32 (the path is taken),
    close policies after two epochs (float32 weights, only the products rounded)."""
    kwargs = {"epochs": 2, "lr": 1e-3, "dual_step": 1e-2}
    fp32 = _train(data, GROUPED, **kwargs)
    bf16 = _train(data, GROUPED, precision="bf16", **kwargs)
    grouped = _train(data, GROUPED, precision="bf16", group_seeds=True, **kwargs)
    assert np.abs(grouped.p_reasoning(data[3].x) - bf16.p_reasoning(data[3].x)).max() < 0.05
    assert all(w.dtype == torch.float32 for w, _ in bf16.policies.policy_layers(0))
    _, _, _, train, _ = data
    a, b = fp32.p_reasoning(train.x), bf16.p_reasoning(train.x)
    assert not np.array_equal(a, b)
    assert np.abs(a - b).max() < 0.05
    assert all(np.corrcoef(a[p], b[p])[0, 1] > 0.99 for p in range(len(GROUPED)))


def test_precision_and_device_are_checked(data):
    with pytest.raises(ConfigError, match="precision must be one of fp32, bf16"):
        tr.TrainSettings(precision="fp16")
    with pytest.raises(ConfigError, match="device must be 'cpu' or 'cuda'"):
        tr.TrainSettings(device="tpu")
    result = _train(data, GROUPED[:2], epochs=1, device="cpu")  # the CPU passed through
    assert result.policies.weights[0].device.type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device is available"):
            _train(data, GROUPED[:2], epochs=1, device="cuda")


def test_batches_of_seed_groups_hold_whole_rounds_of_seeds():
    """A grid too large for one batch is cut at whole rounds of its seeds when it trains in seed
    groups (every batch then has equal groups); otherwise as before, in equal parts."""
    from racer_lib.paper import experiments
    from racer_lib.routing import store

    configs = experiments.grid([float(b) for b in range(1, 11)], list(range(20)))
    grouped = tr.TrainSettings(group_seeds=True)
    each = store.policy_bytes(7680, eval_rows=4000, grouped=True)
    parts = store.chunks(configs, grouped, 7680, 4000, memory_bytes=80 * each)
    assert [len(part) for part in parts] == [60, 80, 60]
    assert all(steps.SeedGroups.applies([c.seed for c in part], grouped) for part in parts)
    assert [c for part in parts for c in part] == configs  # in order
    plain = store.chunks(configs, tr.TrainSettings(), 7680, 4000, memory_bytes=80 * each)
    assert [len(part) for part in plain] == [67, 66, 67]
    assert store.policy_bytes(7680, grouped=True) > store.policy_bytes(7680)
