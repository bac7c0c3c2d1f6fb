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
* the code that trains it: the source of the training modules (:data:`_CODE_MODULES`) and the
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
(``filelock``) keeps two processes from training the same policies at once.

Checked entries. Each file carries the sha256 of its contents
(:func:`racer_lib.routing.policy.seal`), recomputed on every load, ``--force`` or not. An
entry that is truncated, unreadable, without a digest (written before entries carried one) or
whose digest does not match (flipped bytes in a weight) is named on stderr and in
:data:`DAMAGE_LOG` ("stored router PATH is damaged: digest mismatch; retraining"), removed and
trained again. Trained again in the batch it was first trained in (each input set's
``<inputs[:32]>.batches.json`` records which policies are trained together, written before
any of them is saved), so the retrained policy is bit for bit the one of a clean run; a batch
cut short by an error (a full disk: ``cannot write PATH: no space left on device``) is trained
again whole, and only its missing members are saved. :meth:`PolicyStore.verify` checks every
entry at once (``racer book build`` calls it before planning), reading again only those written
since they were last found sound (``verified.json``).

The store is a parameter: :func:`train_stored` and :func:`racer_lib.paper.experiments.fit` take
it, ``racer book build`` passes ``build/policies`` to each notebook that declares
``policy_store`` (:data:`racer_lib.book.profiles.STORE_PARAMETER`), and a call without one (a
notebook run by hand, the library on its own) stores nothing. No environment variable carries
it. The execution cache is the other content-addressed store; :mod:`racer_lib.book.cache`
says what the two share and where they differ.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from racer_lib.errors import WriteError
from racer_lib.records.io import atomic_write
from racer_lib.records.schema import CostUnit
from racer_lib.records.sources import file_stamp
from racer_lib.routing import train as tr
from racer_lib.routing.policy import (
    _hidden,
    load_problem,
    n_parameters,
    seal,
    seal_problem,
    write_torch,
)

DAMAGE_LOG = "damaged.log"  # in the store's folder: one line per damaged entry found
VERIFIED = "verified.json"  # in the store's folder: the stamps of entries found sound
#: The name of an entry the store writes, ``<key[:2]>/<key>.pt``: any other file there (one
#: under a --build-dir named by mistake) is named and left alone, never deleted as damaged.
_ENTRY = re.compile(r"([0-9a-f]{2})/\1[0-9a-f]{62}\.pt")
_STORE_FORMAT = 2  # 2: entries carry a digest (policy.seal)
#: Memory one batch of policies may take while it trains (parameters, gradients, AdamW's two
#: moments, the best checkpoint, a step's activations, the validation pass). A larger grid is
#: trained in equal chunks that fit (:func:`chunks`): at the paper's 7680-d embeddings about 90
#: policies, so two chapters training at once stay well within 24 GB. A constant, not a share of
#: this machine's memory, so that the chunks, and the numbers, are the same on every machine.
BATCH_MEMORY_BYTES = 6 * 2**30
_EVAL_ROWS = 8192  # rows per chunk of PolicyBatch.p_reasoning (the validation pass)
#: The modules whose source is part of every key: the trainer and what it computes with.
_CODE_MODULES = ("routing.train", "routing.policy", "routing.dro", "records.schema")


def _code_hash() -> str:
    """Hash of the training code: :data:`_CODE_MODULES`' source and the PyTorch version."""
    digest = hashlib.sha256(f"torch {torch.__version__}\0".encode())
    for name in _CODE_MODULES:
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
    in_dim: int,
    arch: str = "mlp",
    batch_size: int = 64,
    eval_rows: int = _EVAL_ROWS,
    grouped: bool = False,
) -> int:
    """Memory one policy takes while a batch trains, in bytes (float32).

    Six copies of its parameters (the parameters, their gradient, a third gradient-sized block
    for a bf16 step's cast weight and gradient, AdamW's two moments, the best checkpoint; seven
    when it trains in seed groups, ``grouped``, which keep the first layer's weight once more),
    a step's input rows and first-layer activations, and the hidden activations of the
    validation pass over ``eval_rows`` rows (at most :data:`_EVAL_ROWS` at a time). Measured at
    7680-d with 1,024 validation rows: 54 MB per policy beyond the data; this formula gives
    56 MB there, 82 MB with 8,192 rows.
    """
    sizes = [int(in_dim), *_hidden(arch), 1]
    params = n_parameters(int(in_dim), arch)
    step = batch_size * (2 * in_dim + 4 * sum(sizes[1:]))
    validation = min(int(eval_rows), _EVAL_ROWS) * 2 * sum(sizes[1:-1])
    return 4 * ((7 if grouped else 6) * params + step + validation)


def chunks(
    configs: list[tr.PolicyConfig],
    settings: tr.TrainSettings,
    in_dim: int,
    eval_rows: int = _EVAL_ROWS,
    memory_bytes: int = BATCH_MEMORY_BYTES,
) -> list[list[tr.PolicyConfig]]:
    """``configs`` split, in order, into the fewest batches of equal size (within one) that each
    fit in ``memory_bytes`` (:func:`policy_bytes`, validating on ``eval_rows`` rows); one batch
    when they all fit (none when there are none)."""
    if not configs:
        return []
    each = policy_bytes(in_dim, settings.arch, settings.batch_size, eval_rows, settings.group_seeds)
    per_batch = max(1, memory_bytes // each)
    period = _seed_period(configs) if settings.group_seeds else None
    if period and per_batch >= 2 * period:  # whole rounds of seeds: every batch in seed groups
        per_batch = per_batch // period
        blocks = len(configs) // period
        n = max(1, -(-blocks // per_batch))
        bounds = np.linspace(0, blocks, n + 1).round().astype(int) * period
    else:
        n = max(1, -(-len(configs) // per_batch))
        bounds = np.linspace(0, len(configs), n + 1).round().astype(int)
    return [list(configs[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _seed_period(configs: list[tr.PolicyConfig]) -> int | None:
    """``S`` when ``configs`` repeat one sequence of ``S`` distinct seeds two or more times
    (budgets outside, seeds inside: :func:`racer_lib.paper.experiments.grid`); then batches cut
    at multiples of ``S`` hold every seed equally often and train in seed groups
    (:class:`~racer_lib.routing.steps.SeedGroups`). None otherwise."""
    seeds = [c.seed for c in configs]
    period = len(set(seeds))
    if len(seeds) % period or len(seeds) < 2 * period:
        return None
    first = seeds[:period]
    return period if all(seed == first[i % period] for i, seed in enumerate(seeds)) else None


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
    return _assemble(list(configs), settings, unit, int(train.x.shape[1]), stored)


def damage_since(root: str | os.PathLike, offset: int = 0) -> tuple[list[str], int]:
    """The lines :meth:`PolicyStore.discard` wrote to the :data:`DAMAGE_LOG` of the store at
    ``root`` after byte ``offset``, and the offset to pass next time (for a runner that says
    which stored routers its notebooks found damaged)."""
    log = Path(root) / DAMAGE_LOG
    if not log.is_file():
        return [], 0
    with open(log, "rb") as stream:
        stream.seek(offset)
        data = stream.read()
    return data.decode("utf-8", "replace").splitlines(), offset + len(data)


def _identity(settings: tr.TrainSettings) -> dict:
    """The settings a policy depends on: all but ``keep_freed_memory`` (speed only)."""
    return {k: v for k, v in asdict(settings).items() if k != "keep_freed_memory"}


class PolicyStore:
    """A folder of trained policies, one file per key."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def key(self, config: tr.PolicyConfig, settings: tr.TrainSettings, inputs: str) -> str:
        """The key of ``config`` trained with ``settings`` on the inputs hashed as ``inputs``."""
        text = json.dumps(
            {
                "format": _STORE_FORMAT,
                "config": asdict(config),
                "settings": _identity(settings),
                "inputs": inputs,
                "code": _code_hash(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.pt"

    def load(self, key: str) -> dict | None:
        """The stored policy under ``key``, or None: absent, or damaged (truncated, unreadable,
        its digest missing or not matching its contents: named by :meth:`discard`, then
        trained again)."""
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            stored = torch.load(path, weights_only=True)
        except Exception as exc:  # a truncated or foreign file is not a policy
            problem = load_problem(exc)
        else:
            problem = seal_problem(stored)
            if problem is None:
                return stored
        self.discard(path, problem)
        return None

    def verify(self) -> list[str]:
        """Check every entry of the store against its digest and discard the damaged ones
        (:meth:`discard`, which names each); the lines said. An entry whose size, modification
        and change times are those it had when last found sound (``verified.json``) is not read
        again: every write moves its change time, which cannot be set back."""
        if not self.root.is_dir():
            return []
        record = self.root / VERIFIED
        try:
            sound = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            sound = {}
        sound = sound if isinstance(sound, dict) else {}
        said, now = [], {}
        for path in sorted(self.root.glob("??/*.pt")):
            if not _ENTRY.fullmatch(path.relative_to(self.root).as_posix()):
                said.append(f"{path} is not a router of the store (its name is no key): left alone")
                print(said[-1], file=sys.stderr, flush=True)
                continue
            try:
                stamp = file_stamp(path)
            except OSError:  # removed meanwhile by another build
                continue
            name = path.relative_to(self.root).as_posix()
            if sound.get(name) == stamp:
                now[name] = stamp
                continue
            try:
                problem = seal_problem(torch.load(path, weights_only=True))
            except Exception as exc:
                problem = load_problem(exc)
            if problem is None:
                now[name] = stamp
            else:
                said.append(self.discard(path, problem))
        if now != sound:
            text = json.dumps(now, sort_keys=True)
            try:
                atomic_write(record, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
            except OSError:  # a read-only or full store: checked again next time
                pass
        return said

    def discard(self, path: Path, problem: str) -> str:
        """Remove a damaged entry, saying so on stderr and in :data:`DAMAGE_LOG` (which the
        runner may show after the notebooks' own output)."""
        line = f"stored router {path} is damaged: {problem}; retraining"
        print(line, file=sys.stderr, flush=True)
        try:
            with open(self.root / DAMAGE_LOG, "a", encoding="utf-8") as log:
                log.write(line + "\n")
            path.unlink(missing_ok=True)
        except OSError:  # a read-only store: the entry is not used all the same
            pass
        return line

    def save(self, key: str, stored: dict) -> Path:
        """Write one policy atomically (:func:`racer_lib.records.io.atomic_write`), with the
        digest of its contents (:func:`~racer_lib.routing.policy.seal`); a
        :class:`~racer_lib.errors.WriteError` naming the file if the system refuses it."""
        path = self.path(key)
        blob = seal(stored)
        atomic_write(path, lambda tmp: write_torch(blob, tmp))
        return path

    def batches_path(self, inputs: str) -> Path:
        return self.root / f"{inputs[:32]}.batches.json"

    def batches(self, inputs: str) -> dict[str, list[tuple[str, tr.PolicyConfig]]]:
        """Each key trained on the inputs hashed as ``inputs``, with the batch it was first
        trained in (``(key, config)`` in order), so that a damaged policy is trained again
        in that batch, bit for bit (a damaged or absent index: {})."""
        path = self.batches_path(inputs)
        try:
            index = json.loads(path.read_text(encoding="utf-8"))
            if seal_problem(index):
                raise ValueError("digest mismatch")
            parts = [[(k, tr.PolicyConfig(**c)) for k, c in part] for part in index["batches"]]
        except FileNotFoundError:
            return {}
        except Exception as exc:  # damaged: policies are trained as a fresh store trains them
            print(f"batch index {path} is damaged ({exc}); ignoring it", file=sys.stderr)
            return {}
        return {key: part for part in parts for key, _ in part}

    def record_batch(self, inputs: str, part: list[tuple[str, tr.PolicyConfig]]) -> None:
        """Add a batch to the index of :meth:`batches` (atomically), before any of its policies
        is saved (:func:`train_stored`): a batch cut short by an error is trained again whole."""
        known = self.batches(inputs)
        if all(key in known for key, _ in part):
            return
        parts = {id(p): p for p in known.values()}.values()
        index = seal({"batches": [[[k, asdict(c)] for k, c in p] for p in [*parts, part]]})
        text = json.dumps(index, sort_keys=True)
        atomic_write(self.batches_path(inputs), lambda tmp: Path(tmp).write_text(text, "utf-8"))

    @contextmanager
    def lock(self, inputs: str):
        """A lock held while the policies of one input set are looked up and trained; a
        :class:`~racer_lib.errors.WriteError` naming the lock file if it cannot be made."""
        from filelock import FileLock

        path = self.root / f"{inputs[:32]}.lock"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(path))
            lock.acquire()
        except OSError as exc:
            raise WriteError(path, exc) from exc
        try:
            yield
        finally:
            lock.release()


def _stored(result: tr.TrainResult, p: int) -> dict:
    """What the store keeps of policy ``p`` of a training result."""
    columns = ["epoch", "lambda", "train_reward", "train_cost", "valid_accuracy", "valid_cost"]
    rows = result.history[result.history["policy"] == p][columns]
    return {
        "format": _STORE_FORMAT,
        "layers": [[w, b] for w, b in result.policies.policy_layers(p)],
        "history": {name: rows[name].tolist() for name in columns},
        "best_epoch": int(result.best_epoch[p]),
    }


def _assemble(
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
        for part, new in _plan(store, inputs, missing, settings, train, valid, memory_bytes):
            if new:  # write-ahead: the batch is known before any member is saved
                store.record_batch(inputs, part)
            result = tr.train_policies(
                train, valid, [c for _, c in part], settings, unit, progress=progress
            )
            for p, (key, _) in enumerate(part):
                if key in missing:
                    store.save(key, _stored(result, p))
                    found[key] = store.load(key)
            del result
    stored = [found[key] for key in keys]
    return _assemble(list(configs), settings, unit, int(train.x.shape[1]), stored), len(missing)


def _plan(store, inputs, missing, settings, train, valid, memory_bytes):
    """The batches that train the ``missing`` policies (key -> config), each with whether it is
    new: a policy trained before (now damaged or removed) is trained again in the batch it was
    first trained in, as the store's index records it, so that its bits are the first run's;
    the others in chunks that fit in ``memory_bytes`` (:func:`chunks`)."""
    known = store.batches(inputs) if missing else {}
    again: dict[int, list] = {}
    fresh = {}
    for key, config in missing.items():
        if key in known:
            again.setdefault(id(known[key]), known[key])
        else:
            fresh[key] = config
    plan = [(part, False) for part in again.values()]
    todo = list(fresh.items())
    start = 0
    for part in chunks(
        [c for _, c in todo], settings, int(train.x.shape[1]), valid.n, memory_bytes
    ):
        plan.append((todo[start : start + len(part)], True))
        start += len(part)
    return plan
