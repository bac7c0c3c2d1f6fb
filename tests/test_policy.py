"""Router policies: initialisation, the batch against plain nn.Sequential, saved routers."""

import math

import numpy as np
import pytest
import torch

from racer_lib.errors import InputError
from racer_lib.routing import policy as pol
from racer_lib.routing import train as tr

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def data(routing_data):
    return routing_data


# ----------------------------------------------------------------------------------------
# Initialisation and the batch


@pytest.mark.parametrize("arch, widths", [("mlp", [16, 256, 128, 64, 1]), ("linear", [16, 1])])
def test_init_layers_shapes_bounds_and_determinism(arch, widths):
    layers = pol.init_layers(7, 16, arch)
    assert [tuple(w.shape) for w, _ in layers] == list(zip(widths[:-1], widths[1:]))
    assert [tuple(b.shape) for _, b in layers] == [(n,) for n in widths[1:]]
    for (w, b), fan_in in zip(layers, widths[:-1]):  # nn.Linear's uniform(±1/sqrt(fan_in))
        bound = 1 / math.sqrt(fan_in)
        assert w.abs().max() <= bound and b.abs().max() <= bound
        if w.numel() >= 1000:  # spread over the whole interval, not a corner of it
            assert w.abs().max() > 0.99 * bound and abs(float(w.mean())) < 0.1 * bound
    again = pol.init_layers(7, 16, arch)
    other = pol.init_layers(8, 16, arch)
    for (w, b), (w2, b2), (w3, _) in zip(layers, again, other):
        assert torch.equal(w, w2) and torch.equal(b, b2)
        assert not torch.equal(w, w3)


def test_init_layers_ignores_the_global_rng():
    torch.manual_seed(0)
    a = pol.init_layers(3, 16)
    torch.manual_seed(1)
    b = pol.init_layers(3, 16)
    assert all(torch.equal(x[0], y[0]) for x, y in zip(a, b))


@pytest.mark.parametrize("arch", ["mlp", "linear"])
def test_batch_equals_reference_policies(arch):
    seeds = [0, 5, 11]
    x = torch.randn(40, 16, generator=torch.Generator().manual_seed(0))
    batch = pol.PolicyBatch(seeds, 16, arch)
    logits = batch(x)
    assert logits.shape == (3, 40)
    for p, seed in enumerate(seeds):
        ref = pol.reference_policy(seed, 16, arch)(x).squeeze(-1)
        torch.testing.assert_close(logits[p], ref, rtol=1e-6, atol=1e-6)
    # Per-policy inputs (P, B, D) give each policy its own rows.
    own = torch.stack([x, x.flip(0), x * 2])
    per = batch(own)
    for p in range(3):
        torch.testing.assert_close(per[p], batch(own[p])[p], rtol=1e-6, atol=1e-6)
    assert not torch.allclose(per[1], per[0])
    # p_reasoning is the sigmoid of the logits, chunked or not.
    np.testing.assert_allclose(
        batch.p_reasoning(x.numpy(), chunk=7),
        torch.sigmoid(logits).detach().numpy(),
        rtol=1e-6,
        atol=1e-7,
    )
    assert batch.p_reasoning(np.zeros((0, 16))).shape == (3, 0)


def test_policy_layers_are_detached_copies():
    batch = pol.PolicyBatch([1, 2], 16)
    layers = batch.policy_layers(1)
    assert all(not w.requires_grad for w, _ in layers)
    with torch.no_grad():
        batch.weights[0][1].zero_()
    assert layers[0][0].abs().sum() > 0  # a copy, not a view


def test_batch_refuses_other_width_and_unknown_arch():
    batch = pol.PolicyBatch([0], 16)
    with pytest.raises(ValueError, match="embeddings have dimension 12, the policies expect 16"):
        batch(torch.zeros(4, 12))
    with pytest.raises(
        ValueError, match="unknown policy architecture 'transformer'; choose one of mlp, linear"
    ):
        pol.PolicyBatch([0], 16, "transformer")
    with pytest.raises(ValueError, match="unknown policy architecture"):
        pol.reference_policy(0, 16, "deep")


# ----------------------------------------------------------------------------------------
# A saved router


@pytest.fixture(scope="module")
def trained(data):
    _, _, unit, sp = data
    configs = [
        tr.PolicyConfig(budget=2.0, seed=1, variant="ACER"),
        tr.PolicyConfig(budget=3.0, seed=2, variant="RACER", tau_r=0.5, tau_c=2.0),
    ]
    settings = tr.TrainSettings(epochs=2, lr=1e-3)
    return tr.train_policies(sp["train"], sp["valid"], configs, settings, unit, progress=False)


def test_router_round_trip(trained, data, tmp_path):
    records, emb, unit, sp = data
    for p in range(2):
        router = trained.router(p, "simulated-16d")
        path = router.save(tmp_path / "sub" / f"router{p}.pt")
        back = pol.Router.load(path)
        np.testing.assert_array_equal(back.p_reasoning(emb), router.p_reasoning(emb))
        # One policy's matmuls against the batch's: equal up to float32 summation order.
        np.testing.assert_allclose(
            back.p_reasoning(emb), trained.p_reasoning(emb)[p], rtol=1e-5, atol=1e-6
        )
        assert all(
            torch.equal(w, w2) and torch.equal(b, b2)
            for (w, b), (w2, b2) in zip(back.layers, trained.policies.policy_layers(p))
        )
        assert back.embedder == "simulated-16d" and back.in_dim == 16 and back.arch == "mlp"
        assert back.tokens_per_unit == unit.tokens_per_unit
        assert back.budget == trained.configs[p].budget
        assert back.version == pol.__version__
        assert back.config["best_epoch"] == trained.best_epoch[p]
        assert back.config["variant"] == trained.configs[p].variant
        assert back.config["tau_c"] == trained.configs[p].tau_c
        assert back.config["lr"] == 1e-3 and back.config["epochs"] == 2
    # The two routers are different policies.
    assert not np.allclose(
        pol.Router.load(tmp_path / "sub" / "router0.pt").p_reasoning(emb),
        pol.Router.load(tmp_path / "sub" / "router1.pt").p_reasoning(emb),
    )


def test_router_refuses_other_dimension_and_embedder(trained, data):
    router = trained.router(0, "simulated-16d")
    with pytest.raises(
        ValueError,
        match=r"e\.parquet: embeddings have dimension 8, but this "
        r"router was trained on 16-dimensional embeddings",
    ):
        router.check(8, "simulated-16d", file="e.parquet")
    with pytest.raises(
        ValueError,
        match="embeddings come from 'other-embedder', but this router "
        "was trained on embeddings from 'simulated-16d'",
    ):
        router.check(16, "other-embedder")
    router.check(16, "simulated-16d")  # the right ones pass
    router.check(16, None)  # an unnamed embedder cannot be checked
    with pytest.raises(ValueError, match="dimension 8"):
        router.p_reasoning(np.zeros((3, 8), np.float32))


def _saved_with(router, path, layer, name, value):
    """``router`` saved with one tensor of ``layer`` (``name`` weight or bias) replaced."""
    import dataclasses

    layers = [(w.clone(), b.clone()) for w, b in router.layers]
    w, b = layers[layer]
    layers[layer] = (value(w), b) if name == "weight" else (w, value(b))
    return dataclasses.replace(router, layers=layers).save(path)


def test_router_with_a_nan_weight_refused(trained, tmp_path):
    """A NaN weight once routed every pair with empty probabilities and decision 0 (exit 0)."""
    router = trained.router(0, "simulated-16d")

    def nan_at(t):
        t = t.clone()
        t[3, 5] = float("nan")
        return t

    path = _saved_with(router, tmp_path / "nan.pt", 1, "weight", nan_at)
    with pytest.raises(InputError) as err:
        pol.Router.load(path)
    assert str(err.value) == (
        f"{path}: layer 1 weight holds 1 non-finite value(s) (e.g. nan); the router cannot be used"
    )


def test_router_with_wrong_layer_shapes_refused(trained, tmp_path):
    """Wrong layer shapes once failed with a traceback in the first matmul."""
    router = trained.router(0, "simulated-16d")
    path = _saved_with(router, tmp_path / "w.pt", 2, "weight", lambda w: w[:, :10])
    with pytest.raises(InputError) as err:
        pol.Router.load(path)
    assert str(err.value) == (
        f"{path}: layer 2 weight has shape (128, 10), expected (128, 64) "
        "(widths [16, 256, 128, 64, 1] of a 'mlp' router)"
    )
    path = _saved_with(router, tmp_path / "b.pt", 0, "bias", lambda b: b[:3])
    with pytest.raises(
        InputError, match=r"b\.pt: layer 0 bias has shape \(3,\), expected \(256,\)"
    ):
        pol.Router.load(path)
    import dataclasses

    short = dataclasses.replace(router, layers=router.layers[:2]).save(tmp_path / "s.pt")
    with pytest.raises(InputError, match=r"s\.pt: 2 layers, but a 'mlp' router .* has 4"):
        pol.Router.load(short)


def test_router_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such router file"):
        pol.Router.load(tmp_path / "nope.pt")


class _Payload:
    """Stands for arbitrary code a pickle could run on loading."""


def test_router_load_runs_no_pickled_code(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"layers": [], "meta": {}, "payload": _Payload()}, path)
    with pytest.raises(
        InputError, match=r"evil\.pt: not a racer router file: refused to unpickle it$"
    ) as info:
        pol.Router.load(path)
    assert "\n" not in str(info.value)  # one line, without PyTorch's advice to unpickle it
