"""Training routers: Algorithm 1 (ACER, RACER-R, RACER-C, RACER) for a batch of policies.

One step, for each policy ``p`` and its minibatch ``D_t`` of pairs (both actions enumerated):

* expected reward and cost under ``pi``: ``r_i = sum_a pi(a|z_i) r(z_i, a)``,
  ``c_i = sum_a pi(a|z_i) c(z_i, a)`` (``c`` in the training set's cost unit);
* worst-case reweighting (Algorithm 1, :func:`racer_lib.routing.dro.batch_weights_torch`):
  ``w^R ∝ exp((mean r - r_i) / tau_R)``, ``w^C ∝ exp((c_i - mean c) / tau_C)``, computed on
  detached values (the appendix treats the worst-case distributions as fixed in a step);
  ``tau = inf`` means no reweighting;
* primal step on ``-(sum_i w^R_i r_i - lam sum_i w^C_i c_i + beta mean_i H(pi(.|z_i)))`` with
  AdamW (Eq. (7), the policy maximises the regularised Lagrangian); the batched trainer takes
  its gradient by hand (:mod:`racer_lib.routing.steps`), the reference loop by autograd;
* dual step of appendix A.3: ``lam <- [lam + eta (sum_i w^C_i c_i - C - beta lam)]_+``, with
  the batch's worst-case cost from the same forward pass.

Variants: ACER reweights nothing, RACER-R only rewards, RACER-C only costs, RACER both.
After every epoch each policy is evaluated on the validation split; the returned policy is the
best valid checkpoint (appendix B.3): among epochs whose validation cost meets the budget the one
with the highest validation accuracy, else the one whose cost is closest to the budget.
Evaluation takes expectations under ``pi`` rather than sampling decisions.

:func:`train_policies` trains all policies together; :func:`train_sets` does so for several
record sets at once (a chapter's replicates), each policy on its own set;
:func:`train_reference` is a plain one-policy PyTorch loop with the same maths, kept as the
reference the batched trainer is tested and benchmarked against.
"""

from __future__ import annotations

import ctypes
import math
import platform
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from racer_lib.errors import ConfigError
from racer_lib.records.schema import CostUnit, RecordsError, correct_matrix, infeasible_budget
from racer_lib.routing.policy import PolicyBatch, Router, expected, reference_policy
from racer_lib.routing.steps import (
    SeedGroups,
    Step,
    expected_terms,
    gather,
    objective_gradient,
    step_terms,
)

VARIANTS: dict[str, tuple[bool, bool]] = {  # (reweight rewards, reweight costs)
    "ACER": (False, False),
    "RACER-R": (True, False),
    "RACER-C": (False, True),
    "RACER": (True, True),
}


PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class PolicyConfig:
    """What distinguishes one policy of a batch.

    Defaults: the paper's benchmark protocol (appendix B.5: "we fix tau_R = 1 and disable
    robust reweighting on the cost term"), i.e. variant ``RACER-R`` at ``tau_r = 1``, with
    beta = 0.005 (appendix B.3). ``tau_c`` applies only to the variants that reweight costs
    (``RACER-C``, and ``RACER``, which reweights rewards and costs): pass
    ``variant="RACER"`` for the fully robust objective.
    """

    budget: float
    seed: int = 0
    variant: str = "RACER-R"
    tau_r: float = 1.0
    tau_c: float = 1.0
    beta: float = 0.005

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ConfigError(
                f"unknown variant {self.variant!r}; choose one of {', '.join(VARIANTS)}"
            )
        for name in ("tau_r", "tau_c"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be > 0 (got {getattr(self, name)})")
        if self.beta < 0:
            raise ConfigError(f"beta must be >= 0 (got {self.beta})")

    @property
    def taus(self) -> tuple[float, float]:
        """``(tau_R, tau_C)`` in effect: ``inf`` where the variant does not reweight."""
        rew, cost = VARIANTS[self.variant]
        return (self.tau_r if rew else math.inf, self.tau_c if cost else math.inf)


@dataclass(frozen=True)
class TrainSettings:
    """Shared by every policy of a batch. Defaults: the paper's appendix B.3."""

    arch: str = "mlp"
    epochs: int = 60
    batch_size: int = 64
    lr: float = 1e-4
    weight_decay: float = 0.01  # AdamW's default; the paper names AdamW without a value
    dual_step: float = 1e-3
    lam0: float = 0.0
    fused: bool = True  # PyTorch's fused AdamW kernel (same update, one pass per tensor)
    group_seeds: bool = False  # policies sharing a seed: one first-layer matmul (SeedGroups)
    precision: str = "fp32"  # "bf16": matmuls in bfloat16, fp32 master weights and loss
    device: str = "cpu"  # "cuda" (or "cuda:N") trains on a GPU
    # True: glibc's malloc keeps freed memory while the batch trains (_keeping_freed_memory),
    # a process-wide setting for the call's duration, speed only. Off unless the caller asks
    # (the book's runner does, for its notebooks: racer_lib.book.profiles.RUNNER_TRAINER)
    keep_freed_memory: bool = False

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"precision must be one of {', '.join(PRECISIONS)} (got {self.precision!r})"
            )
        kind = str(self.device).split(":")[0]
        if kind not in ("cpu", "cuda"):
            raise ConfigError(f"device must be 'cpu' or 'cuda' (got {self.device!r})")
        for name in ("epochs", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be at least 1 (got {getattr(self, name)})")
        if self.lr < 0 or self.dual_step < 0 or self.lam0 < 0:
            raise ConfigError(
                f"lr, dual_step and lam0 must be >= 0 (got {self.lr}, "
                f"{self.dual_step}, {self.lam0})"
            )


@dataclass
class Split:
    """A split ready for training: embeddings, both actions' correctness and cost."""

    name: str
    x: torch.Tensor  # (n, D) float32
    r: torch.Tensor  # (n, 2) correctness
    c: torch.Tensor  # (n, 2) cost in the training set's unit
    unit: CostUnit | None = None  # the cost unit of ``c``

    @property
    def n(self) -> int:
        return len(self.x)


def make_split(name: str, records: pd.DataFrame, embeddings: np.ndarray, unit: CostUnit) -> Split:
    """Check and convert one split. An empty split or embeddings of the wrong length fail."""
    if len(records) == 0:
        raise RecordsError(
            f"<{name} split>", "split", f"the {name} split is empty: no pairs to train or select on"
        )
    if embeddings is None or embeddings.ndim != 2 or len(embeddings) != len(records):
        shape = None if embeddings is None else embeddings.shape
        raise RecordsError(
            f"<{name} split>",
            "embedding",
            f"{len(records)} records but embeddings of shape {shape}",
        )
    return Split(
        name,
        torch.as_tensor(np.asarray(embeddings, dtype=np.float32)),
        torch.as_tensor(correct_matrix(records), dtype=torch.float32),
        torch.as_tensor(unit.cost(records), dtype=torch.float32),
        unit,
    )


def _optimizer(params, settings: TrainSettings) -> torch.optim.AdamW:
    """AdamW as the paper trains; ``settings.fused`` picks PyTorch's fused kernel."""
    return torch.optim.AdamW(
        params, lr=settings.lr, weight_decay=settings.weight_decay, fused=settings.fused or None
    )


_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)
_GLIBC_DEFAULTS = {_M_MMAP_MAX: 65536, _M_TRIM_THRESHOLD: 128 * 1024}


@contextmanager
def _keeping_freed_memory(enabled: bool):
    """While the batch trains, glibc's malloc keeps freed memory for reuse (speed only).

    Gradients are allocated once (:class:`~racer_lib.routing.steps.Step`), but a bf16 step
    still allocates blocks the size of the first layer's stacked weight (``P x D x 256``: 63 MB
    in bfloat16 for 16 policies at the paper's D = 7680): the weight's bfloat16 copy and its
    bfloat16 gradient. glibc serves
    a block that large (above its mmap threshold, at most 32 MiB) with a fresh ``mmap`` and
    unmaps it when freed, so by default every step faults such pages in one at a time, each
    zeroed by the kernel (a third of a step's time at the paper's sizes when autograd
    allocated every gradient afresh). Inside this context ``M_MMAP_MAX = 0`` serves big blocks
    from the heap and a huge ``M_TRIM_THRESHOLD`` keeps freed heap memory, so each step reuses
    the previous step's pages (what ``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=...`` in the
    environment, or jemalloc, would do for a whole process). On exit glibc's defaults come
    back (``M_MMAP_MAX = 65536``, ``M_TRIM_THRESHOLD = 128 KiB``; a value set through those
    environment variables is not restored) and ``malloc_trim(0)`` returns the kept memory.

    Only where memory comes from changes: the same values are computed in the same order, so
    the trained policies are bit-for-bit the same with and without it (tests/test_train.py).
    Elsewhere than glibc, or with ``enabled`` false (``TrainSettings.keep_freed_memory``, off
    by default and as :class:`racer_lib.routing.estimator.RacerRouter` trains), nothing
    changes.
    """
    libc = None
    if enabled and platform.libc_ver()[0] == "glibc":
        try:
            libc = ctypes.CDLL(None)
            libc.mallopt, libc.malloc_trim  # noqa: B018 (present on glibc)
        except (OSError, AttributeError):
            libc = None
    if libc is not None:
        libc.mallopt(_M_MMAP_MAX, 0)
        libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
    try:
        yield
    finally:
        if libc is not None:
            for param, value in _GLIBC_DEFAULTS.items():
                libc.mallopt(param, value)
            libc.malloc_trim(0)


def _orders(seeds, n, epochs):
    """Per-policy data order of each epoch, from the policy's own seed (shared by both trainers)."""
    gens = [torch.Generator().manual_seed(10_000 + int(s)) for s in seeds]
    for _ in range(epochs):
        yield torch.stack([torch.randperm(n, generator=g) for g in gens])


@dataclass
class TrainResult:
    """Trained policies (best valid checkpoints), their history and selection."""

    configs: list[PolicyConfig]
    settings: TrainSettings
    unit: CostUnit
    policies: PolicyBatch
    history: pd.DataFrame
    best_epoch: list[int]

    def p_reasoning(self, x: np.ndarray) -> np.ndarray:
        """``pi(1|z)`` of every policy on every row of ``x``: shape ``(P, n)``."""
        return self.policies.p_reasoning(x)

    def router(self, p: int, embedder: str) -> Router:
        """Policy ``p`` as a :class:`~racer_lib.routing.policy.Router` to save and reuse."""
        return Router(
            layers=self.policies.policy_layers(p),
            arch=self.settings.arch,
            in_dim=self.policies.in_dim,
            embedder=embedder,
            tokens_per_unit=self.unit.tokens_per_unit,
            budget=self.configs[p].budget,
            config={
                **asdict(self.configs[p]),
                **asdict(self.settings),
                "best_epoch": self.best_epoch[p],
            },
        )


def select_checkpoint(valid_acc, valid_cost, budget) -> int:
    """Appendix B.3: best valid accuracy among checkpoints within budget, else the one whose
    cost is closest to it (the first on ties); returns its index. The trainer picks each
    policy's epoch by it, :class:`racer_lib.routing.estimator.RacerRouter` its seed."""
    valid_acc, valid_cost = np.asarray(valid_acc), np.asarray(valid_cost)
    ok = valid_cost <= budget
    if ok.any():
        return int(np.flatnonzero(ok)[np.argmax(valid_acc[ok])])
    return int(np.argmin(np.abs(valid_cost - budget)))


@torch.no_grad()
def _evaluate(
    policies: PolicyBatch, split: Split, which: slice | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Expected accuracy (%) and cost (training unit) of the policies ``which`` (default: all)
    on a split."""
    p1 = torch.as_tensor(policies.p_reasoning(split.x, which=which))
    return (expected(p1, split.r) * 100).numpy(), expected(p1, split.c).numpy()


def _check_inputs(train: Split, valid: Split, configs, unit: CostUnit):
    if not configs:
        raise ConfigError("no policy configurations to train")
    if train.x.shape[1] != valid.x.shape[1]:
        raise RecordsError(
            "<valid split>",
            "embedding",
            f"embeddings have dimension "
            f"{valid.x.shape[1]}, the train split's have {train.x.shape[1]}",
        )
    cheapest = float(train.c.min(dim=1).values.mean())
    for cfg in configs:
        error = infeasible_budget(cfg.budget, cheapest, "<train split>", unit.tokens_per_unit)
        if error is not None:
            raise error


def train_policies(
    train: Split,
    valid: Split,
    configs: list[PolicyConfig],
    settings: TrainSettings = TrainSettings(),
    unit: CostUnit | None = None,
    progress: bool = False,
) -> TrainResult:
    """Train every configuration in one pass over the data; return the best valid checkpoints.

    ``unit`` defaults to the train split's cost unit (the one its costs are expressed in).
    No process-wide setting changes unless ``settings.keep_freed_memory`` asks glibc's malloc
    to keep freed memory for reuse while it trains (:func:`_keeping_freed_memory`: faster at
    the paper's sizes, bit-for-bit the same result). ``progress``: a tqdm bar over epochs
    (off by default; the CLI and the notebooks turn it on).
    """
    return train_sets([SetTraining(train, valid, list(configs), unit)], settings, progress)[0]


@dataclass
class SetTraining:
    """The policies to train on one record set: its ``train`` and ``valid`` splits, the
    ``configs`` and the cost unit their budgets are in (default: the train split's)."""

    train: Split
    valid: Split
    configs: list[PolicyConfig]
    unit: CostUnit | None = None


def train_sets(
    sets: list[SetTraining], settings: TrainSettings = TrainSettings(), progress: bool = False
) -> list[TrainResult]:
    """:func:`train_policies` for several record sets in one pass: one result per set, each
    policy stepping on minibatches of its own set's train split and selected on its own valid
    split. The train splits must have one size (every policy takes the same number of steps
    an epoch); the valid splits may differ. A policy's result is the one :func:`train_policies`
    gives on its set alone beside the same configurations: bit for bit with
    ``settings.fused`` off, to float32 rounding with PyTorch's fused AdamW, whose vector loop
    splits a longer tensor differently (tests/test_train.py). The sets share every operation
    of a step, each on a larger batch, which is what makes many small sets (a chapter's
    replicate seeds) cheaper together than one by one: a small router's step costs mostly
    its fixed overhead (``make bench``: ``replicates_together_vs_alone``)."""
    if not sets:
        return []
    sets = [
        SetTraining(s.train, s.valid, list(s.configs), s.unit or s.train.unit or CostUnit(1.0))
        for s in sets
    ]
    for s in sets:
        _check_inputs(s.train, s.valid, s.configs, s.unit)
    first = sets[0].train
    for k, s in enumerate(sets[1:], start=1):
        if s.train.n != first.n or s.train.x.shape[1] != first.x.shape[1]:
            raise ConfigError(
                f"record set {k}: a train split of {s.train.n} pairs of dimension "
                f"{s.train.x.shape[1]}; set 0 has {first.n} of dimension {first.x.shape[1]} "
                "(sets trained together need one size)"
            )
    with _keeping_freed_memory(settings.keep_freed_memory):
        return _train_batch(sets, settings, progress)


def _device(settings: TrainSettings) -> torch.device:
    """The device to train on; a clear error when CUDA is asked for and absent."""
    device = torch.device(settings.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"device {settings.device!r}: no CUDA device is available to this PyTorch "
            f"({torch.__version__}); train with device='cpu'"
        )
    return device


@torch.no_grad()
def _load(policies: PolicyBatch, best: list) -> None:
    """Load each policy's best checkpoint (``best[p]``: its layers) and move the batch to the
    CPU, where the result is used."""
    for p, layers in enumerate(best):
        for (w, b), (bw, bb) in zip(policies.layers(), layers):
            w[p].copy_(bw)
            b[p].copy_(bb)
    policies.to("cpu")


def _policies(seeds, keys, in_dim, settings, device) -> tuple[PolicyBatch, SeedGroups | None]:
    """The batch of policies on ``device``, and its seed groups (policies of one ``keys``
    value: one seed on one record set) when they apply."""
    policies = PolicyBatch(seeds, in_dim, settings.arch)
    grouped = SeedGroups(policies, keys) if SeedGroups.applies(keys, settings) else None
    policies.to(device)
    if grouped is not None:
        grouped.to(device)
    return policies, grouped


def _train_batch(sets: list[SetTraining], settings, progress) -> list[TrainResult]:
    """:func:`train_sets` on checked inputs (on ``settings.device``; the results on the CPU)."""
    device = _device(settings)
    configs = [config for s in sets for config in s.configs]
    owner = [k for k, s in enumerate(sets) for _ in s.configs]  # each policy's record set
    bounds = np.cumsum([0, *(len(s.configs) for s in sets)])
    P, seeds, n = len(configs), [config.seed for config in configs], sets[0].train.n
    keys = seeds if len(sets) == 1 else list(zip(owner, seeds))
    policies, grouped = _policies(seeds, keys, sets[0].train.x.shape[1], settings, device)
    budget, beta, tau_r, tau_c = (
        torch.tensor(values, device=device)
        for values in zip(*[(config.budget, config.beta, *config.taus) for config in configs])
    )
    lam = torch.full((P,), float(settings.lam0), device=device)
    pairs = torch.tensor(float(n))  # each policy's pairs per epoch (float32, as the sums)
    bf16 = settings.precision == "bf16"
    # the sets' train splits end to end; a policy's rows are offset to its own set's
    x = torch.cat([s.train.x for s in sets]) if len(sets) > 1 else sets[0].train.x
    x = x.to(device, torch.bfloat16 if bf16 else torch.float32)  # cast once
    rc_all = torch.cat([torch.cat([s.train.r, s.train.c], dim=1) for s in sets]).to(device)
    offset = (torch.tensor(owner) * n)[:, None].to(device) if len(sets) > 1 else None
    per_step = min(settings.batch_size, n)  # rows per policy and step
    step = Step(policies, grouped, x, per_step, bf16)
    opt = _optimizer(step.params, settings)
    rc_buf = torch.empty(P * per_step, 4, device=device)
    best = [None] * P
    rows, valid_hist = [], []
    epochs = range(settings.epochs)
    desc = f"training {P} policies" + (f" on {len(sets)} record sets" if len(sets) > 1 else "")
    bar = tqdm(epochs, desc=desc, disable=not progress, leave=False)
    for epoch, order in zip(bar, _orders(seeds, n, settings.epochs)):
        order = order.to(device)
        if offset is not None:
            order += offset
        sums = torch.zeros(2, P, device=device)  # reward, cost
        for start in range(0, n, settings.batch_size):
            idx = order[:, start : start + settings.batch_size]  # (P, B)
            logits = step.forward(idx)
            rc = gather(rc_all, idx.reshape(-1), idx.shape, rc_buf)  # r and c, side by side
            r, c = rc[..., :2], rc[..., 2:]
            terms = expected_terms(logits, r, c, tau_r, tau_c)
            step.backward(objective_gradient(logits, r, c, terms, lam, beta))
            opt.step()
            rew, cost, _, w_c = terms
            worst_cost = (w_c * cost).sum(dim=1)
            lam = torch.clamp(
                lam + settings.dual_step * (worst_cost - budget - beta * lam), min=0.0
            )
            sums += torch.stack([rew, cost]).sum(2)
        if grouped is not None:
            grouped.write_back()
        sums, lam_now = sums.cpu(), lam.cpu()
        acc, vcost = _evaluate_sets(policies, sets, bounds)
        valid_hist.append((acc, vcost))
        for p in range(P):
            rows.append(
                {
                    "policy": int(p - bounds[owner[p]]),
                    "epoch": epoch + 1,
                    "lambda": float(lam_now[p]),
                    "train_reward": float(sums[0, p] / pairs),
                    "train_cost": float(sums[1, p] / pairs),
                    "valid_accuracy": float(acc[p]),
                    "valid_cost": float(vcost[p]),
                }
            )
            chosen = select_checkpoint(
                [h[0][p] for h in valid_hist], [h[1][p] for h in valid_hist], configs[p].budget
            )
            if chosen == epoch:  # this epoch is the best valid checkpoint so far
                best[p] = policies.policy_layers(p)
    best_epoch = [
        select_checkpoint(
            [h[0][p] for h in valid_hist], [h[1][p] for h in valid_hist], configs[p].budget
        )
        + 1
        for p in range(P)
    ]
    history = pd.DataFrame(rows).assign(set=[owner[p] for p in range(P)] * settings.epochs)
    return _results(sets, bounds, policies, best, best_epoch, history, settings)


def _evaluate_sets(policies: PolicyBatch, sets: list[SetTraining], bounds) -> tuple:
    """:func:`_evaluate` of every policy on its own set's valid split (policies
    ``bounds[k]:bounds[k + 1]`` belong to set ``k``), in the batch's order."""
    if len(sets) == 1:
        return _evaluate(policies, sets[0].valid)
    parts = [
        _evaluate(policies, s.valid, slice(bounds[k], bounds[k + 1])) for k, s in enumerate(sets)
    ]
    return tuple(np.concatenate(part) for part in zip(*parts))


def _results(sets, bounds, policies, best, best_epoch, history, settings) -> list[TrainResult]:
    """One :class:`TrainResult` per set: its policies at their ``best`` checkpoints (one batch
    trains alone: itself, loaded; else a batch per set), its rows of ``history`` (column
    ``set``) with their configurations, and its ``best_epoch``."""
    results = []
    for k, s in enumerate(sets):
        a, b = bounds[k], bounds[k + 1]
        own = policies
        if len(sets) > 1:
            own = PolicyBatch(policies.seeds[a:b], policies.in_dim, policies.arch)
        _load(own, best[a:b])
        cfg = pd.DataFrame([asdict(config) for config in s.configs])
        cfg = cfg.rename_axis("policy").reset_index()
        part = history[history["set"] == k].drop(columns="set").reset_index(drop=True)
        results.append(
            TrainResult(
                s.configs, settings, s.unit, own, part.merge(cfg, on="policy"), best_epoch[a:b]
            )
        )
    return results


def train_reference(
    train: Split, valid: Split, config: PolicyConfig, settings: TrainSettings = TrainSettings()
) -> tuple[torch.nn.Module, pd.DataFrame]:
    """A plain PyTorch loop for one policy: same maths as :func:`train_policies`, no batching.

    Returns the final (not the selected) policy and its per-epoch history; used by the tests
    (equal parameters) and the benchmark (speed of training policies one at a time).
    """
    _check_inputs(train, valid, [config], CostUnit(1.0))
    model = reference_policy(config.seed, train.x.shape[1], settings.arch)
    opt = _optimizer(model.parameters(), settings)
    tau_r, tau_c = (torch.tensor([t]) for t in config.taus)
    lam, rows = float(settings.lam0), []
    for epoch, order in enumerate(_orders([config.seed], train.n, settings.epochs)):
        for start in range(0, train.n, settings.batch_size):
            idx = order[0, start : start + settings.batch_size]
            logits = model(train.x[idx]).squeeze(-1)
            rew, cost, w_r, w_c, ent = step_terms(
                logits[None], train.r[idx][None], train.c[idx][None], tau_r, tau_c
            )
            worst_cost = (w_c * cost).sum()
            objective = (w_r * rew).sum() - lam * worst_cost + config.beta * ent.mean()
            opt.zero_grad(set_to_none=True)
            (-objective).backward()
            opt.step()
            lam = max(
                0.0,
                lam
                + settings.dual_step
                * (float(worst_cost.detach()) - config.budget - config.beta * lam),
            )
        rows.append({"epoch": epoch + 1, "lambda": lam})
    return model, pd.DataFrame(rows)


def splits(
    records: pd.DataFrame,
    embeddings: np.ndarray,
    names=("train", "valid"),
    unit: CostUnit | None = None,
) -> tuple[CostUnit, dict[str, Split]]:
    """The named splits of a record set (column ``split``), with the train split's cost unit."""
    mask = {n: (records["split"] == n).to_numpy() for n in names}
    if unit is None:
        first = records[mask[names[0]]]
        unit = CostUnit.from_records(first) if len(first) else CostUnit(1.0)
    return unit, {n: make_split(n, records[m], embeddings[m], unit) for n, m in mask.items()}
