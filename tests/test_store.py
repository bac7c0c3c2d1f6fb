"""Shared training runs (racer_lib.routing.store): trained once, loaded after, invalidated by any
input."""

import pandas as pd
import pytest
import torch

from racer_lib.paper import experiments
from racer_lib.routing import store
from racer_lib.routing import train as tr


@pytest.fixture
def settings():
    return tr.TrainSettings(epochs=2, lr=1e-3)


def _equal(a: tr.TrainResult, i: int, b: tr.TrainResult, j: int) -> bool:
    layers = zip(a.policies.policy_layers(i), b.policies.policy_layers(j))
    same = all(torch.equal(wa, wb) and torch.equal(ba, bb) for (wa, ba), (wb, bb) in layers)
    ha = a.history[a.history["policy"] == i].drop(columns="policy").reset_index(drop=True)
    hb = b.history[b.history["policy"] == j].drop(columns="policy").reset_index(drop=True)
    return same and ha.equals(hb) and a.best_epoch[i] == b.best_epoch[j]


def test_a_stored_fit_equals_the_plain_fit_and_is_then_loaded(
    one_thread, routing_data, settings, tmp_path, monkeypatch
):
    records, emb, _, _ = routing_data
    configs = experiments.grid([2.0, 4.0], [0, 1])
    plain = experiments.fit(records, emb, configs, settings)
    shared = store.PolicyStore(tmp_path / "policies")
    cold = experiments.fit(records, emb, configs, settings, store=shared)
    assert len(list((tmp_path / "policies").rglob("*.pt"))) == len(configs)
    # The same columns, rows and values as training without a store.
    pd.testing.assert_frame_equal(cold.result.history, plain.result.history)
    assert all(_equal(cold.result, p, plain.result, p) for p in range(len(configs)))
    # A second fit trains nothing: train_policies is not called, the result is the same.
    monkeypatch.setattr(tr, "train_policies", lambda *a, **k: pytest.fail("trained again"))
    warm = experiments.fit(records, emb, configs, settings, store=shared)
    pd.testing.assert_frame_equal(warm.result.history, cold.result.history)
    assert all(_equal(warm.result, p, cold.result, p) for p in range(len(configs)))


def test_a_subset_is_loaded_and_only_new_configurations_are_trained(
    one_thread, routing_data, settings, tmp_path
):
    records, emb, unit, sp = routing_data
    shared = store.PolicyStore(tmp_path)
    wide = experiments.grid([2.0, 3.0, 4.0], [0, 1])
    first, trained = store.train_stored(sp["train"], sp["valid"], wide, settings, unit, shared)
    assert trained == 6
    narrow = [wide[3], wide[0], tr.PolicyConfig(budget=5.0, seed=0)]  # two known, one new
    again, trained = store.train_stored(sp["train"], sp["valid"], narrow, settings, unit, shared)
    assert trained == 1
    assert _equal(again, 0, first, 3) and _equal(again, 1, first, 0)
    assert list(again.history["budget"].unique()) == [3.0, 2.0, 5.0]


def test_changed_inputs_settings_or_configuration_give_new_keys(routing_data, settings):
    records, emb, unit, sp = routing_data
    shared = store.PolicyStore("unused")
    inputs = store.inputs_hash(sp["train"], sp["valid"], unit)
    config = tr.PolicyConfig(budget=3.0)
    key = shared.key(config, settings, inputs)
    assert key == shared.key(tr.PolicyConfig(budget=3.0), tr.TrainSettings(epochs=2, lr=1e-3),
                             store.inputs_hash(sp["train"], sp["valid"], unit))  # fmt: skip
    flipped = records.copy()
    first = flipped.index[flipped["split"] == "train"][0]
    flipped.loc[first, "correct_reasoning"] = not flipped.loc[first, "correct_reasoning"]
    _, other = tr.splits(flipped, emb)
    changed = [
        shared.key(config, settings, store.inputs_hash(other["train"], other["valid"], unit)),
        shared.key(config, settings, store.inputs_hash(sp["train"], sp["valid"], tr.CostUnit(7.0))),
        shared.key(tr.PolicyConfig(budget=3.0, seed=1), settings, inputs),
        shared.key(config, tr.TrainSettings(epochs=3, lr=1e-3), inputs),
    ]
    assert len({key, *changed}) == 5


def test_the_store_is_a_parameter_and_a_broken_file_is_retrained(
    one_thread, routing_data, settings, tmp_path, monkeypatch
):
    """fit stores only in the store it is given (a folder, as the runner passes a notebook's
    ``policy_store``): no environment variable names one (issue 30)."""
    records, emb, _, _ = routing_data
    configs = [tr.PolicyConfig(budget=3.0, seed=0), tr.PolicyConfig(budget=3.0, seed=1)]
    monkeypatch.setenv("RACER_POLICY_STORE", str(tmp_path / "from-env"))  # the former variable
    assert experiments.fit(records, emb, configs, settings).store is None
    assert experiments.fit(records, emb, configs, settings, store="").store is None
    assert not (tmp_path / "from-env").exists()
    fit = experiments.fit(records, emb, configs, settings, store=str(tmp_path / "s"))
    files = sorted((tmp_path / "s").rglob("*.pt"))
    assert len(files) == 2 and fit.store.root == tmp_path / "s"
    broken = files[0]
    broken.write_bytes(b"truncated")
    again = experiments.fit(
        records, emb, configs, settings, store=store.PolicyStore(tmp_path / "s")
    )
    assert store.PolicyStore(tmp_path / "s").load(broken.stem) is not None  # stored again
    # Retrained in the batch of two it was first trained in: bit for bit the first fit.
    assert all(_equal(again.result, p, fit.result, p) for p in range(2))


def test_a_grid_too_large_for_the_memory_budget_is_trained_in_equal_chunks(
    one_thread, routing_data, settings, tmp_path, monkeypatch
):
    records, emb, unit, sp = routing_data
    configs = experiments.grid([2.0, 3.0, 4.0, 5.0, 6.0], [0])
    each = store.policy_bytes(emb.shape[1], settings.arch, settings.batch_size, sp["valid"].n)
    assert [len(c) for c in store.chunks(configs, settings, emb.shape[1], sp["valid"].n,
                                         2 * each)] == [2, 1, 2]  # fmt: skip
    assert len(store.chunks(configs, settings, 7680)) == 1  # five 7680-d policies fit in 6 GiB
    assert len(store.chunks(configs * 40, settings, 7680)) == 3  # 200 do not: about 82 MB each
    sizes = []
    real = tr.train_policies
    monkeypatch.setattr(tr, "train_policies", lambda t, v, c, *a, **k: sizes.append(len(c))
                        or real(t, v, c, *a, **k))  # fmt: skip
    joined = store.train_in_chunks(sp["train"], sp["valid"], configs, settings, unit,
                                   memory_bytes=2 * each)  # fmt: skip
    assert sizes == [2, 1, 2]
    assert list(joined.history["budget"].unique()) == [2.0, 3.0, 4.0, 5.0, 6.0]
    assert joined.history.groupby("policy").size().tolist() == [settings.epochs] * 5
    alone = real(sp["train"], sp["valid"], configs[3:], settings, unit, progress=False)
    assert _equal(joined, 3, alone, 0) and _equal(joined, 4, alone, 1)
