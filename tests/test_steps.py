"""The batched trainer's step by hand (racer_lib.routing.steps) against autograd's gradient."""

import math

import pytest
import torch

from racer_lib.routing.policy import PolicyBatch
from racer_lib.routing.steps import SeedGroups, Step, expected_terms, objective_gradient, step_terms

SEEDS = [0, 1, 0, 1]  # two seed groups of two
N, D, B = 40, 12, 8


@pytest.fixture
def batch():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(N, D, generator=gen)
    r = torch.randint(0, 2, (N, 2), generator=gen).float()
    c = 1 + 5 * torch.rand(N, 2, generator=gen)
    orders = {s: torch.randperm(N, generator=gen)[:B] for s in set(SEEDS)}
    idx = torch.stack([orders[s] for s in SEEDS])  # a seed's policies share their rows
    knobs = {
        "lam": torch.tensor([0.0, 0.5, 1.0, 2.0]),
        "beta": torch.tensor([0.005, 0.05, 0.0, 0.5]),
        "tau_r": torch.tensor([1.0, math.inf, 0.3, 0.1]),
        "tau_c": torch.tensor([math.inf, 1.0, 0.3, 0.1]),
    }
    return x, r, c, idx, knobs


def _autograd(arch, x, r, c, idx, k):
    policies = PolicyBatch(SEEDS, D, arch)
    logits = policies(x[idx])
    rew, cost, w_r, w_c, ent = step_terms(logits, r[idx], c[idx], k["tau_r"], k["tau_c"])
    objective = (w_r * rew).sum(1) - k["lam"] * (w_c * cost).sum(1) + k["beta"] * ent.mean(1)
    (-objective.sum()).backward()
    return logits.detach(), [(w.grad, b.grad) for w, b in policies.layers()]


def _by_hand(arch, x, r, c, idx, k, grouped, bf16=False):
    policies = PolicyBatch(SEEDS, D, arch)
    groups = SeedGroups(policies, SEEDS) if grouped else None
    step = Step(policies, groups, x.to(torch.bfloat16) if bf16 else x, B, bf16)
    logits = step.forward(idx)
    terms = expected_terms(logits, r[idx], c[idx], k["tau_r"], k["tau_c"])
    step.backward(objective_gradient(logits, r[idx], c[idx], terms, k["lam"], k["beta"]))
    grads = [(w.grad, b.grad) for w, b in policies.layers()]
    if groups is not None:  # the grouped weight's gradient, back in per-policy layout
        g = groups.weight.grad.view(groups.G, D, groups.m, groups.H).permute(0, 2, 1, 3)
        first = torch.empty(len(SEEDS), D, groups.H)
        first[groups.flat] = g.reshape(-1, D, groups.H)
        grads[0] = (first, grads[0][1])
    return logits, grads


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("arch", ["mlp", "linear"])
def test_step_by_hand_gives_autograds_logits_and_gradients(batch, arch, grouped):
    want_logits, want = _autograd(arch, *batch)
    logits, got = _by_hand(arch, *batch, grouped=grouped)
    torch.testing.assert_close(logits, want_logits, rtol=1e-5, atol=1e-6)
    for (gw, gb), (ww, wb) in zip(got, want, strict=True):
        torch.testing.assert_close(gw, ww, rtol=1e-4, atol=1e-7)
        torch.testing.assert_close(gb, wb, rtol=1e-4, atol=1e-7)


def test_step_in_bf16_is_close_to_float32_and_keeps_float32_gradients(batch):
    _, want = _autograd("mlp", *batch)
    _, got = _by_hand("mlp", *batch, grouped=False, bf16=True)
    for (gw, _), (ww, _) in zip(got, want, strict=True):
        assert gw.dtype == torch.float32
        assert not torch.equal(gw, ww)  # rounded inputs: the bf16 path was taken
        assert (gw - ww).norm() <= 0.05 * ww.norm()


def test_objective_gradient_is_finite_for_saturated_logits():
    logits = torch.tensor([[-200.0, -30.0, 0.0, 30.0, 200.0]])
    r, c = torch.rand(1, 5, 2), torch.rand(1, 5, 2)
    inf = torch.tensor([math.inf])
    terms = expected_terms(logits, r, c, inf, inf)
    grad = objective_gradient(logits, r, c, terms, torch.tensor([1.0]), torch.tensor([0.5]))
    assert torch.isfinite(grad).all()
