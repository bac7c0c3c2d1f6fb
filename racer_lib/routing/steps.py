"""One training step of a batch of policies (Algorithm 1), its gradient written out by hand.

A step of :func:`racer_lib.routing.train.train_policies` runs every policy's minibatch forward,
keeping each layer's activations, takes the gradient of the objective with respect to the
logits in closed form (:func:`objective_gradient`) and runs it back through the layers into
gradients allocated once (:class:`Step`), which AdamW then reads. Autograd would compute the
same matrix products; by hand, a step is spared the graph's bookkeeping, the elementwise
operations of differentiating the objective term by term, and a fresh allocation of every
gradient (``make bench`` times the difference at the sim profile's sizes). The plain
one-policy loop :func:`racer_lib.routing.train.train_reference` keeps autograd and is what the
tests compare this step with (tests/test_train.py).

The objective of policy ``p`` on its minibatch of ``B`` pairs (appendix A.3, Eq. (7), with the
worst-case weights of Algorithm 1 held fixed within the step) is
``J = sum_i w^R_i r_i - lam sum_i w^C_i c_i + (beta / B) sum_i H_i`` with
``r_i = (1 - pi_i) r(z_i, 0) + pi_i r(z_i, 1)`` (likewise ``c_i``), ``pi_i = sigmoid(l_i)``
and ``H_i`` the Bernoulli entropy of ``pi_i``, whose derivative is ``dH/dl = -l pi (1 - pi)``.
"""

from __future__ import annotations

import torch

from racer_lib.routing import dro
from racer_lib.routing.policy import PolicyBatch


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of Bernoulli(sigmoid(logits)), from the logits.

    ``H = p1 softplus(-l) + p0 softplus(l)`` (since ``-log p1 = softplus(-l)``): the same
    value as ``-(p1 log p1 + p0 log p0)``, with a finite gradient where ``sigmoid`` saturates
    to exactly 0 or 1 in float32 (the ``xlogy`` form's gradient is NaN there).
    """
    p1 = torch.sigmoid(logits)
    softplus = torch.nn.functional.softplus
    return p1 * softplus(-logits) + (1 - p1) * softplus(logits)


def expected_terms(logits, r, c, tau_r, tau_c):
    """Expected reward and cost per pair under ``pi`` and their worst-case weights (Algorithm 1,
    :func:`racer_lib.routing.dro.batch_weights_torch`, on detached values)."""
    p1 = torch.sigmoid(logits)
    rew = (1 - p1) * r[..., 0] + p1 * r[..., 1]
    cost = (1 - p1) * c[..., 0] + p1 * c[..., 1]
    w_r = dro.batch_weights_torch(rew.detach().reshape(-1, rew.shape[-1]), tau_r).reshape(rew.shape)
    w_c = dro.batch_weights_torch(cost.detach().reshape(-1, cost.shape[-1]), tau_c, "cost").reshape(
        cost.shape
    )
    return rew, cost, w_r, w_c


def step_terms(logits, r, c, tau_r, tau_c):
    """:func:`expected_terms` and the entropy of each pair's decision."""
    return (*expected_terms(logits, r, c, tau_r, tau_c), entropy(logits))


def objective_gradient(logits, r, c, terms, lam, beta) -> torch.Tensor:
    """``-dJ/dl`` for every policy and pair, shape ``(P, B)``: the gradient of the loss the
    step minimises (Eq. (7), see the module's docstring) with respect to the logits,
    ``-pi (1 - pi) (w^R (r_1 - r_0) - lam w^C (c_1 - c_0) - (beta / B) l)``. ``terms`` are
    :func:`expected_terms`'s; ``lam`` and ``beta`` have shape ``(P,)``."""
    _, _, w_r, w_c = terms
    p1 = torch.sigmoid(logits)
    slope = p1 * (1 - p1)
    ascent = w_r * (r[..., 1] - r[..., 0]) - lam[:, None] * w_c * (c[..., 1] - c[..., 0])
    ascent -= (beta[:, None] / logits.shape[1]) * logits
    return -(slope * ascent)


def gather(x: torch.Tensor, flat: torch.Tensor, shape, buf: torch.Tensor) -> torch.Tensor:
    """``x[idx]`` for ``idx`` of shape ``(P, B)`` flattened to ``flat``, copied into ``buf``.

    The same values as ``x[idx]`` (a copy), without a fresh ``(P, B, D)`` tensor every step
    and through ``index_select``, which costs less per call than advanced indexing.
    """
    out = buf[: flat.numel()]
    torch.index_select(x, 0, flat, out=out)
    return out.view(*shape, *x.shape[1:])


class SeedGroups:
    """The first layer of policies that share a seed, as one matrix product per group.

    Policies with the same seed draw the same data order, so at every step they multiply the
    *same* ``B x D`` minibatch by their own first-layer weights. When every seed of a batch has
    the same number ``m >= 2`` of policies, the first-layer weights are trained as one
    ``D x (m * H)`` matrix per seed (``weight``, of shape ``(G, D, m * H)``): one gather of
    ``G x B`` rows and one ``bmm`` of ``(G, B, D)`` by ``(G, D, m * H)`` forward, one backward,
    where the plain path gathers ``P x B`` rows and multiplies ``P`` separate ``B x D`` by
    ``D x H`` blocks. The maths is the same; only the order of the sums inside a matrix
    product differs (results agree to float32 rounding, tests/test_train.py). The batch's own
    first-layer weight is kept in step once per epoch (:meth:`write_back`), before the
    validation pass and the checkpoints read it.
    """

    def __init__(self, policies: PolicyBatch, seeds: list[int]):
        order = list(dict.fromkeys(seeds))
        groups = [[p for p, seed in enumerate(seeds) if seed == s] for s in order]
        self.G, self.m = len(groups), len(groups[0])
        flat = [p for group in groups for p in group]
        self.firsts = torch.tensor([group[0] for group in groups])
        self.flat = torch.tensor(flat)
        self.back = torch.tensor([flat.index(p) for p in range(len(seeds))])  # p -> row
        w = policies.weights[0].detach()  # (P, D, H)
        self.H = w.shape[2]
        grouped = w[self.flat].view(self.G, self.m, w.shape[1], self.H).permute(0, 2, 1, 3)
        self.weight = torch.nn.Parameter(grouped.reshape(self.G, w.shape[1], self.m * self.H))
        self.policies = policies

    @staticmethod
    def applies(seeds: list[int], settings) -> bool:
        """Whether a batch of policies with these seeds trains in seed groups."""
        sizes = [seeds.count(s) for s in dict.fromkeys(seeds)]
        return settings.group_seeds and len(set(sizes)) == 1 and sizes[0] >= 2

    def to(self, device) -> SeedGroups:
        self.weight.data = self.weight.data.to(device)
        for name in ("firsts", "flat", "back"):
            setattr(self, name, getattr(self, name).to(device))
        return self

    def parameters(self) -> list[torch.nn.Parameter]:
        """What the optimizer steps: this weight, and the batch's other tensors."""
        rest = [*self.policies.weights[1:], *self.policies.biases]
        return [self.weight, *rest]

    def rows(self, order: torch.Tensor) -> torch.Tensor:
        """The ``(G, B)`` rows of each seed's minibatch, from every policy's ``(P, B)``."""
        return order[self.firsts]

    def to_policies(self, h: torch.Tensor) -> torch.Tensor:
        """``(G, B, m * H)`` grouped products as ``(P, B, H)``, in the batch's policy order."""
        B = h.shape[1]
        h = h.view(self.G, B, self.m, self.H).permute(0, 2, 1, 3).reshape(-1, B, self.H)
        return h.index_select(0, self.back)

    def to_groups(self, dz: torch.Tensor) -> torch.Tensor:
        """``(P, B, H)`` per-policy values as ``(G, B, m * H)`` (:meth:`to_policies` undone)."""
        B = dz.shape[1]
        dz = dz.index_select(0, self.flat).view(self.G, self.m, B, self.H)
        return dz.permute(0, 2, 1, 3).reshape(self.G, B, self.m * self.H)

    @torch.no_grad()
    def write_back(self) -> None:
        """Copy the grouped weight into the batch's ``(P, D, H)`` first-layer weight."""
        w = self.weight.view(self.G, -1, self.m, self.H).permute(0, 2, 1, 3)
        self.policies.weights[0].index_copy_(0, self.flat, w.reshape(-1, *w.shape[2:]))


class Step:
    """Forward and backward passes of a batch of policies, by hand, into gradients allocated
    once (``param.grad`` of every tensor the optimizer steps, :attr:`params`; each step
    overwrites them).

    ``x`` holds the split's embeddings on the training device, already in bfloat16 when
    ``bf16`` (they are then cast once, not at every step): the matrix products then take
    bfloat16 inputs and give bfloat16 results that continue in float32, as under
    ``torch.autocast``; weights, gradients and everything else stay float32.
    """

    def __init__(self, policies: PolicyBatch, grouped: SeedGroups | None, x, step: int, bf16):
        self.policies, self.grouped, self.x, self.bf16 = policies, grouped, x, bool(bf16)
        self.params = grouped.parameters() if grouped is not None else list(policies.parameters())
        for param in self.params:
            param.grad = torch.zeros_like(param)
        rows = (grouped.G if grouped is not None else policies.size) * step
        self.buf = torch.empty(rows, x.shape[1], dtype=x.dtype, device=x.device)
        self.acts: list[torch.Tensor] = []

    def _mm(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.bf16:
            return torch.bmm(a.to(torch.bfloat16), b.to(torch.bfloat16)).float()
        return torch.bmm(a, b)

    def _into(self, grad: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
        """``grad = a @ b`` (batched), computed in bfloat16 when the step is."""
        if self.bf16:
            grad.copy_(torch.bmm(a.to(torch.bfloat16), b.to(torch.bfloat16)))
        else:
            torch.bmm(a, b, out=grad)

    @torch.no_grad()
    def forward(self, order: torch.Tensor) -> torch.Tensor:
        """``(P, B)`` logits of every policy on its minibatch ``order`` (``(P, B)`` rows),
        keeping what :meth:`backward` needs."""
        policies, grouped = self.policies, self.grouped
        if grouped is not None:
            rows = grouped.rows(order)
            x0 = gather(self.x, rows.reshape(-1), rows.shape, self.buf)
            z = grouped.to_policies(self._mm(x0, grouped.weight))
        else:
            x0 = gather(self.x, order.reshape(-1), order.shape, self.buf)
            z = self._mm(x0, policies.weights[0])
        z += policies.biases[0].unsqueeze(-2)
        self.acts = [x0]
        for w, b in policies.layers()[1:]:
            self.acts.append(z.clamp_min_(0))
            z = self._mm(z, w)
            z += b.unsqueeze(-2)
        return z.squeeze(-1)

    @torch.no_grad()
    def backward(self, dlogits: torch.Tensor) -> None:
        """Gradients of the loss into every ``param.grad``, from ``dlogits`` (``(P, B)``)."""
        policies, grouped = self.policies, self.grouped
        dz = dlogits.unsqueeze(-1)
        layers = policies.layers()
        for k in range(len(layers) - 1, 0, -1):
            w, b = layers[k]
            h = self.acts[k]
            self._into(w.grad, h.transpose(1, 2), dz)
            torch.sum(dz, dim=1, out=b.grad)
            # ReLU's derivative: zero where its output was (autograd's own kernel)
            dz = torch.ops.aten.threshold_backward(self._mm(dz, w.transpose(1, 2)), h, 0.0)
        torch.sum(dz, dim=1, out=policies.biases[0].grad)
        x0 = self.acts[0].transpose(1, 2)
        if grouped is not None:
            self._into(grouped.weight.grad, x0, grouped.to_groups(dz))
        else:
            self._into(policies.weights[0].grad, x0, dz)
