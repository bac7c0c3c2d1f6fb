"""Shared training runs: trained routers stored by the hash of their configuration and inputs.

Chapters 07 (the budget frontier) and 10 (the advanced baselines) train RACER-R routers with
the same settings on the same simulated records. :func:`train_stored` trains only the
configurations the store does not hold yet (in one batch,
:func:`racer_lib.routing.train.train_policies`) and loads the others, so a configuration is
trained once per build, whichever chapter needs it first.

A policy's key hashes everything its training depends on:

* its :class:`~racer_lib.routing.train.PolicyConfig` (budget, seed, variant, tau_r, tau_c, beta)
and the
  batch's :class:`~racer_lib.routing.train.TrainSettings`;
* the inputs: the train and validation splits' embeddings, correctness and costs (their bytes)
  and the cost unit;
* the code that trains it: the source of the training modules (:data:`CODE_MODULES`) and the
  PyTorch version.

A changed record, embedding, setting or line of the trainer gives new keys, so nothing stale is
ever loaded. What a key holds: the best valid checkpoint's layers, the policy's per-epoch history
rows and its best epoch (everything :class:`~racer_lib.routing.train.TrainResult` keeps per policy).

Numbers. Trained in a batch of other policies, a policy's weights can differ from the same
policy trained in another batch in the last bits of float32 (batched matrix kernels), so the
store fixes them: a loaded policy is bit for bit the one first trained. A build is reproducible
because the runner orders the chapters that share policies (:data:`racer_lib.paper.registry.AFTER`),
so the same chapter trains them in a sequential and in a parallel run.

The store is a folder of ``<key[:2]>/<key>.pt`` files (``torch.save`` of tensors, lists and
numbers, loaded with ``weights_only=True``), written atomically; a lock per input set
(``filelock``) keeps two processes from training the same policies at once. ``racer book build``
points the notebooks at ``build/policies`` through the environment variable :data:`ENV_STORE`;
without it (a notebook run by hand, the library on its own) nothing is stored.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from racer_lib.records.schema import CostUnit
from racer_lib.routing import train as tr
from racer_lib.routing.policy import _hidden

ENV_STORE = "RACER_POLICY_STORE"
STORE_FORMAT = 1
#: Memory one batch of policies may take while it trains (parameters, gradients, AdamW's two
#: moments, the best checkpoint, a step's activations, the validation pass). A larger grid is
#: trained in equal chunks that fit (:func:`chunks`): at the paper's 7680-d embeddings about 90
#: policies, so two chapters training at once stay well within 24 GB. A constant, not a share of
#: this machine's memory, so that the chunks, and the numbers, are the same on every machine.
BATCH_MEMORY_BYTES = 6 * 2**30
EVAL_ROWS = 8192  # rows per chunk of PolicyBatch.p_reasoning (the validation pass)
#: The modules whose source is part of every key: the trainer and what it computes with.
CODE_MODULES = ("routing.train", "routing.policy", "routing.dro", "records.schema")


def code_hash() -> str:
    """Hash of the training code: :data:`CODE_MODULES`' source and the PyTorch version."""
    digest = hashlib.sha256(f"torch {torch.__version__}\0".encode())
    for name in CODE_MODULES:
        module = importlib.import_module(f"racer_lib.{name}")
        digest.update(Path(module.__file__).read_bytes() + b"\0")
    return digest.hexdigest()


def inputs_hash(train: tr.Split, valid: tr.Split, unit: CostUnit) -> str:
    """Hash of what training reads: both splits' embeddings, correctness, costs and the unit."""
    digest = hashlib.blake2b(digest_size=32)
    for split in (train, valid):
        for tensor in (split.x, split.r, split.c):
            array = np.ascontiguousarray(tensor.numpy())
            digest.update(f"{split.name} {array.dtype} {array.shape}\0".encode())
            digest.update(memoryview(array).cast("B"))
    digest.update(repr(float(unit.tokens_per_unit)).encode())
    return digest.hexdigest()


def policy_bytes(
    in_dim: int, arch: str = "mlp", batch_size: int = 64, eval_rows: int = EVAL_ROWS
) -> int:
    """Memory one policy takes while a batch trains, in bytes (float32).

    Six copies of its parameters (the parameters, their gradient, a fresh gradient buffer of the
    next step, AdamW's two moments, the best checkpoint), a step's input rows and first-layer
    activations, and the hidden activations of the validation pass over ``eval_rows`` rows (at
    most :data:`EVAL_ROWS` at a time). Measured at 7680-d with 1,024 validation rows: 54 MB per
    policy beyond the data; this formula gives 56 MB there, 82 MB with 8,192 rows.
    """
    sizes = [int(in_dim), *_hidden(arch), 1]
    params = sum((fan_in + 1) * fan_out for fan_in, fan_out in zip(sizes[:-1], sizes[1:]))
    step = batch_size * (2 * in_dim + 4 * sum(sizes[1:]))
    validation = min(int(eval_rows), EVAL_ROWS) * 2 * sum(sizes[1:-1])
    return 4 * (6 * params + step + validation)


def chunks(
    configs: list[tr.PolicyConfig],
    settings: tr.TrainSettings,
    in_dim: int,
    eval_rows: int = EVAL_ROWS,
    memory_bytes: int = BATCH_MEMORY_BYTES,
) -> list[list[tr.PolicyConfig]]:
    """``configs`` split, in order, into the fewest batches of equal size (within one) that each
    fit in ``memory_bytes`` (:func:`policy_bytes`, validating on ``eval_rows`` rows); one batch
    when they all fit (none when there are none)."""
    if not configs:
        return []
    each = policy_bytes(in_dim, settings.arch, settings.batch_size, eval_rows)
    per_batch = max(1, memory_bytes // each)
    n = max(1, -(-len(configs) // per_batch))
    bounds = np.linspace(0, len(configs), n + 1).round().astype(int)
    return [list(configs[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def train_in_chunks(
    train: tr.Split,
    valid: tr.Split,
    configs: list[tr.PolicyConfig],
    settings: tr.TrainSettings,
    unit: CostUnit,
    progress: bool = False,
    memory_bytes: int = BATCH_MEMORY_BYTES,
) -> tr.TrainResult:
    """:func:`~racer_lib.routing.train.train_policies` on batches that fit in ``memory_bytes``
    (:func:`chunks`); one batch is trained as it is, several are joined in order."""
    parts = chunks(list(configs), settings, int(train.x.shape[1]), valid.n, memory_bytes)
    if len(parts) == 1:
        return tr.train_policies(train, valid, parts[0], settings, unit, progress=progress)
    stored = []
    for part in parts:
        result = tr.train_policies(train, valid, part, settings, unit, progress=progress)
        stored += [_stored(result, p) for p in range(len(part))]
        del result
    return assemble(list(configs), settings, unit, int(train.x.shape[1]), stored)


class PolicyStore:
    """A folder of trained policies, one file per key."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    @classmethod
    def from_env(cls) -> PolicyStore | None:
        """The store named by :data:`ENV_STORE`, or None when it is unset or empty."""
        where = os.environ.get(ENV_STORE, "").strip()
        return cls(where) if where else None

    def key(self, config: tr.PolicyConfig, settings: tr.TrainSettings, inputs: str) -> str:
        """The key of ``config`` trained with ``settings`` on the inputs hashed as ``inputs``."""
        text = json.dumps(
            {
                "format": STORE_FORMAT,
                "config": asdict(config),
                "settings": asdict(settings),
                "inputs": inputs,
                "code": code_hash(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.pt"

    def load(self, key: str) -> dict | None:
        """The stored policy under ``key``, or None (absent or unreadable: trained again)."""
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            return torch.load(path, weights_only=True)
        except Exception:  # a truncated or foreign file is not a policy: train it again
            return None

    def save(self, key: str, stored: dict) -> Path:
        """Write one policy atomically (a temporary file renamed into place)."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        torch.save(stored, tmp)
        tmp.replace(path)
        return path

    def lock(self, inputs: str):
        """A lock held while the policies of one input set are looked up and trained."""
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root / f"{inputs[:32]}.lock"))


def _stored(result: tr.TrainResult, p: int) -> dict:
    """What the store keeps of policy ``p`` of a training result."""
    columns = ["epoch", "lambda", "train_reward", "train_cost", "valid_accuracy", "valid_cost"]
    rows = result.history[result.history["policy"] == p][columns]
    return {
        "format": STORE_FORMAT,
        "layers": [[w, b] for w, b in result.policies.policy_layers(p)],
        "history": {name: rows[name].tolist() for name in columns},
        "best_epoch": int(result.best_epoch[p]),
    }


def assemble(
    configs: list[tr.PolicyConfig],
    settings: tr.TrainSettings,
    unit: CostUnit,
    in_dim: int,
    stored: list[dict],
) -> tr.TrainResult:
    """A :class:`~racer_lib.routing.train.TrainResult` from stored policies, in the order of
    ``configs``; its history has the rows :func:`~racer_lib.routing.train.train_policies` writes, in
    its order (epoch by epoch, policy by policy)."""
    policies = tr.PolicyBatch([c.seed for c in configs], in_dim, settings.arch)
    with torch.no_grad():
        for p, item in enumerate(stored):
            for (w, b), (sw, sb) in zip(policies.layers(), item["layers"]):
                w[p].copy_(sw)
                b[p].copy_(sb)
    frames = [pd.DataFrame({"policy": p, **item["history"]}) for p, item in enumerate(stored)]
    history = pd.concat(frames, ignore_index=True).sort_values(
        ["epoch", "policy"], kind="stable", ignore_index=True
    )
    history = history[["policy", *[c for c in history.columns if c != "policy"]]]
    cfg = pd.DataFrame([asdict(c) for c in configs]).rename_axis("policy").reset_index()
    return tr.TrainResult(
        list(configs),
        settings,
        unit,
        policies,
        history.merge(cfg, on="policy"),
        [int(item["best_epoch"]) for item in stored],
    )


def train_stored(
    train: tr.Split,
    valid: tr.Split,
    configs: list[tr.PolicyConfig],
    settings: tr.TrainSettings,
    unit: CostUnit,
    store: PolicyStore,
    progress: bool = False,
    memory_bytes: int = BATCH_MEMORY_BYTES,
) -> tuple[tr.TrainResult, int]:
    """:func:`~racer_lib.routing.train.train_policies` through ``store``: train the configurations
    it lacks (in one batch, or in chunks that fit in ``memory_bytes``), store them, and return
    every configuration's policy loaded from the store, with the number trained now. The result
    is the same whether the policies were trained now or loaded (it is always assembled from
    what the store holds)."""
    inputs = inputs_hash(train, valid, unit)
    keys = [store.key(config, settings, inputs) for config in configs]
    with store.lock(inputs):
        found = {key: store.load(key) for key in dict.fromkeys(keys)}
        missing = {key: config for key, config in zip(keys, configs) if found[key] is None}
        todo = list(missing.values())
        for part in chunks(todo, settings, int(train.x.shape[1]), valid.n, memory_bytes):
            result = tr.train_policies(train, valid, part, settings, unit, progress=progress)
            for p, config in enumerate(part):
                key = keys[configs.index(config)]
                store.save(key, _stored(result, p))
                found[key] = store.load(key)
            del result
    stored = [found[key] for key in keys]
    return assemble(list(configs), settings, unit, int(train.x.shape[1]), stored), len(missing)
