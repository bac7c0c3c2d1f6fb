"""The batch-of-policies trainer against a plain one-policy-at-a-time PyTorch loop (16 policies).

Two measurements, in this process, one after the other:

* **Sim profile** (simulated qwen3-4b training mixture at scale 0.25: ~8k train pairs, 32-d
  embeddings, the paper's MLP, batch 64, 16 policies with different budgets, seeds and
  variants): :func:`racer_lib.routing.train.train_policies` on all 16 against 16 sequential
  :func:`racer_lib.routing.train.train_reference` runs doing the same steps. Two ratios: against the
  plain loop as a user would write it (PyTorch's default AdamW, ``fused=False``; the headline
  ``ratio``) and against the same loop given the fused AdamW the batch uses
  (``ratio_same_optimizer``, target >= 6x, issue 24). ``ratio_ceiling`` is the ratio the
  batch could reach if its matrix products ran at this machine's measured fp32 matmul peak and
  it did nothing else: the same-optimizer loop's time over the batch's matmul FLOPs at peak.
  The batch also evaluates every policy on the validation split after each epoch and keeps
  the best checkpoints; the reference loop does neither, so the ratios are if anything
  conservative. Both sides are warmed up before timing,
  and the three are timed in interleaved rounds (the best of each side counts).
* **Paper sizes** (40k simulated pairs of 7680-d embeddings, 32k of them train; MLP; batch 64;
  16 policies): a fixed 150 steps of ``train_policies`` (one epoch over the first 9,600 train
  pairs, then its validation pass over 256 pairs; a full 500-step epoch takes one to several
  minutes on two shared cores, too long to repeat). The FLOPs of its matrix products (forward
  and backward of every layer, with no input gradient for the first layer, plus the
  validation forward pass) over the wall time, against this machine's fp32 matmul peak (best
  of several large square ``torch.matmul``, measured in this run before and after every
  round); target >= 65 %, or the bf16 path (issue 24). Four settings are timed in
  interleaved rounds: the default (one first-layer matmul per policy, fp32), seed groups
  (``group_seeds=True``), bf16 (``precision="bf16"``) and bf16 in seed groups.
  Every setting asks ``train_policies`` to have glibc's malloc keep freed memory for reuse
  while it trains (``keep_freed_memory=True``, as the book's runner asks;
  :func:`racer_lib.routing.train._keeping_freed_memory`), so no step's fresh gradient comes
  from a fresh mmap whose pages fault in one at a time. Then ``PROFILE_STEPS`` steps run under
  ``torch.profiler``: the time by operation (gather, forward and backward matmuls, the rest of
  forward and backward, optimizer, worst-case weights, validation, other, the interpreter) is
  the JSON's ``where_the_time_goes``, with the matmuls' own rate and the optimizer's memory
  bandwidth, which say what bounds the fraction of peak on this machine.
  ``meets_target`` says, target by target, whether it holds.

The sweep time of the sim profile is the sum of its notebooks' execution times, which
``racer book build`` keeps in ``build/sim/timings.json``; run ``make book`` (or ``racer book build
--profile sim``) first, otherwise the result says it is missing.
CPU timings on a shared machine are noisy (another process on one of two cores slows every
multi-threaded PyTorch op): the load average before and after is recorded.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

from racer_lib.records.simulate import simulate
from racer_lib.routing import steps
from racer_lib.routing import train as tr
from racer_lib.routing.policy import matmul_flops

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import PEAK_N, REPEATS, peak_gflops, stream_gb_per_s  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SWEEP_FILE = ROOT / "build" / "sim" / "timings.json"

POLICIES = 16
BATCH = 64
SIM = {"judge": "qwen3-4b", "recipe": "training_mix", "scale": 0.25, "dim": 32, "seed": 0}
SIM_EPOCHS = 2
SIM_ROUNDS = 3  # interleaved; the best time of each side counts
SIM_ROUND_LIMIT_S = 60.0  # no second round after a slower first one (a loaded machine)
PAPER = {"judge": "qwen3-4b", "recipe": "training_mix", "scale": 1.0, "dim": 7680, "seed": 0}
PAPER_STEPS = 150  # a fixed number of steps (an epoch is 500): see _paper_sizes
PAPER_VALID = 256
PAPER_ROUNDS = 2
PAPER_ROUND_LIMIT_S = 120.0  # no second round after a slower first one (a loaded machine)
BF16_DATA = {"judge": "qwen3-4b", "recipe": "training_mix", "scale": 0.25, "dim": 768, "seed": 0}
BF16_EPOCHS = 5
TARGET_RATIO, TARGET_FRACTION = 6.0, 0.65  # issue 24
PROFILE_STEPS = 40  # paper-size steps run under torch.profiler for the breakdown
HIDDEN = (256, 128, 64)


def _configs() -> list[tr.PolicyConfig]:
    """16 policies: 8 budgets x 2 seeds (budgets outside, seeds inside, as the chapters' grids),
    the four variants in turn over the budgets: two seed groups of eight."""
    variants = list(tr.VARIANTS)
    budgets = np.linspace(1.5, 5.0, POLICIES // 2)
    return [
        tr.PolicyConfig(
            budget=float(budgets[i // 2]),
            seed=i % 2,
            variant=variants[(i // 2) % 4],
            tau_r=0.5,
            tau_c=0.5,
        )
        for i in range(POLICIES)
    ]


def _data(spec: dict):
    t0 = time.perf_counter()
    records, emb = simulate(
        spec["judge"], spec["recipe"], seed=spec["seed"], dim=spec["dim"], scale=spec["scale"]
    )
    unit, sp = tr.splits(records, emb)
    del records, emb
    return unit, sp["train"], sp["valid"], time.perf_counter() - t0


def _head(split: tr.Split, n: int) -> tr.Split:
    return tr.Split(split.name, split.x[:n], split.r[:n], split.c[:n])


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _sequential(train, valid, configs, settings) -> float:
    t0 = time.perf_counter()
    for config in configs:
        tr.train_reference(train, valid, config, settings)
    return time.perf_counter() - t0


def _sim_profile() -> dict:
    unit, train, valid, data_s = _data(SIM)
    configs = _configs()
    base = tr.TrainSettings(epochs=SIM_EPOCHS, batch_size=BATCH, keep_freed_memory=True)
    plain, fused = replace(base, fused=False), replace(base, fused=True)
    # Warm up every code path on a slice (allocator, kernels, optimizer state creation).
    warm_train = _head(train, 8 * BATCH)
    warm_settings = tr.TrainSettings(epochs=1, keep_freed_memory=True)
    tr.train_policies(warm_train, valid, configs, warm_settings, unit, progress=False)
    for settings in (plain, fused):
        _sequential(warm_train, valid, configs[:2], replace(settings, epochs=1))
    # Interleaved rounds, best of each side: a burst of load from elsewhere on a shared
    # machine hits one round, not the ratio. A second round only if the first was quick.
    rounds = {"batched": [], "plain": [], "fused": []}
    for _ in range(SIM_ROUNDS):
        rounds["batched"].append(
            _timed(lambda: tr.train_policies(train, valid, configs, fused, unit, progress=False))[0]
        )
        rounds["plain"].append(_sequential(train, valid, configs, plain))
        rounds["fused"].append(_sequential(train, valid, configs, fused))
        if sum(r[-1] for r in rounds.values()) > SIM_ROUND_LIMIT_S:
            break
    batched_s, plain_s, fused_s = (min(rounds[k]) for k in ("batched", "plain", "fused"))
    steps = SIM_EPOCHS * -(-train.n // BATCH)
    dim, peak = int(train.x.shape[1]), peak_gflops()
    flops = SIM_EPOCHS * (
        _matmul_flops(train.n, dim, POLICIES, backward=True)
        + _matmul_flops(valid.n, dim, POLICIES, backward=False)
    )
    matmuls_at_peak_s = flops / peak / 1e9
    return {
        "train_pairs": train.n,
        "valid_pairs": valid.n,
        "dim": dim,
        "epochs": SIM_EPOCHS,
        "steps_per_policy": steps,
        "data_s": data_s,
        "batched_s": batched_s,
        "reference_plain_s": plain_s,
        "reference_fused_s": fused_s,
        "ratio": plain_s / batched_s,
        "ratio_same_optimizer": fused_s / batched_s,
        "rounds": rounds,
        "ratio_same_optimizer_by_round": [
            f / b for f, b in zip(rounds["fused"], rounds["batched"], strict=True)
        ],
        "batched_ms_per_step": 1e3 * batched_s / steps,
        "gflop": flops / 1e9,
        "peak_gflops": peak,
        "batched_fraction_of_peak": matmuls_at_peak_s / batched_s,
        "matmuls_at_peak_s": matmuls_at_peak_s,
        "ratio_ceiling": fused_s / matmuls_at_peak_s,
        "ratio_ceiling_note": "the same-optimizer loop's time over the time the batch's matrix "
        "products (forward, backward, validation) would take at the measured fp32 matmul peak, "
        "with nothing else: no trainer on this machine doing these products in fp32 beats it",
        "reference_plain_ms_per_step": 1e3 * plain_s / (steps * POLICIES),
    }


def _matmul_flops(n_rows: int, dim: int, policies: int, backward: bool) -> float:
    """FLOPs of the matrix products of ``n_rows`` rows through ``policies`` MLPs
    (:func:`racer_lib.routing.policy.matmul_flops`)."""
    return policies * matmul_flops(dim, "mlp", n_rows, backward)


def _paper_sizes() -> dict:
    unit, full_train, valid, data_s = _data(PAPER)
    configs = _configs()
    settings = tr.TrainSettings(epochs=1, batch_size=BATCH, keep_freed_memory=True)
    # A fixed number of steps: one epoch over the first PAPER_STEPS x 64 train pairs, then the
    # end-of-epoch validation pass over a small validation slice (counted too).
    train, valid = _head(full_train, PAPER_STEPS * BATCH), _head(valid, PAPER_VALID)
    dim = int(train.x.shape[1])
    flops = _matmul_flops(train.n, dim, POLICIES, backward=True) + _matmul_flops(
        valid.n, dim, POLICIES, backward=False
    )

    def epoch(way):
        return _timed(lambda: tr.train_policies(train, valid, configs, way, unit, progress=False))[
            0
        ]

    # Warm up on a slice: kernels, allocator, optimizer state, every setting timed.
    ways = {
        "per_policy": settings,  # the defaults
        "seed_groups": replace(settings, group_seeds=True),
        "bf16": replace(settings, precision="bf16"),
        "bf16_seed_groups": replace(settings, precision="bf16", group_seeds=True),
    }
    for way in ways.values():
        tr.train_policies(_head(train, 4 * BATCH), valid, configs, way, unit, progress=False)
    peaks, rounds = [peak_gflops()], {name: [] for name in ways}
    for _ in range(PAPER_ROUNDS):  # interleaved; the best of each counts
        for name, way in ways.items():
            rounds[name].append(epoch(way))
        peaks.append(peak_gflops())
        if sum(r[-1] for r in rounds.values()) > PAPER_ROUND_LIMIT_S:
            break
    peak, best = max(peaks), {name: min(times) for name, times in rounds.items()}
    achieved = {name: flops / seconds / 1e9 for name, seconds in best.items()}
    profile = _profile(train, valid, configs, settings, unit, peak)
    return {
        "full_train_pairs": full_train.n,
        "dim": dim,
        "timed": f"{PAPER_STEPS} steps: one train_policies epoch over the first "
        f"{train.n} of the {full_train.n} train pairs, then its validation pass "
        f"over {valid.n} validation pairs",
        "steps": PAPER_STEPS,
        "data_s": data_s,
        "seconds": best["per_policy"],
        "rounds": rounds,
        "ms_per_step": {name: 1e3 * seconds / PAPER_STEPS for name, seconds in best.items()},
        "gflop": flops / 1e9,
        "achieved_gflops": achieved["per_policy"],
        "achieved_gflops_by_setting": achieved,
        "peak_gflops": peak,
        "peak_gflops_measured": peaks,
        "peak_matmul": f"{PEAK_N}x{PEAK_N} fp32 torch.matmul, best of {REPEATS}, "
        "before and after every round",
        "fraction_of_peak": achieved["per_policy"] / peak,
        "fraction_of_peak_seed_groups": achieved["seed_groups"] / peak,
        "bf16_fraction_of_fp32_peak": max(achieved["bf16"], achieved["bf16_seed_groups"]) / peak,
        "seed_groups_speedup": best["per_policy"] / best["seed_groups"],
        "bf16_speedup": best["per_policy"] / best["bf16"],
        "bf16_seed_groups_speedup": best["per_policy"] / best["bf16_seed_groups"],
        "settings_timed": {
            "per_policy": "train_policies, TrainSettings() (the defaults: fp32, one first-layer "
            "matmul per policy)",
            "seed_groups": "TrainSettings(group_seeds=True): the first layers of the policies "
            "sharing a seed as one matmul per seed",
            "bf16": "TrainSettings(precision='bf16'): matmuls with bfloat16 inputs (as autocast), "
            "fp32 master weights, loss and optimizer",
            "bf16_seed_groups": "TrainSettings(precision='bf16', group_seeds=True)",
        },
        "profile": profile,
    }


def _bf16_accuracy() -> dict:
    """bf16 against fp32 on the same seeds over a budget sweep: validation accuracy (points) and
    cost of the selected checkpoints, 8 budgets x 2 seeds, at ``BF16_DATA`` sizes."""
    unit, train, valid, _ = _data(BF16_DATA)
    configs = _configs()
    out = {}
    for precision in ("fp32", "bf16"):
        settings = tr.TrainSettings(
            epochs=BF16_EPOCHS, lr=1e-3, precision=precision, keep_freed_memory=True
        )
        result = tr.train_policies(train, valid, configs, settings, unit, progress=False)
        history = result.history.set_index(["policy", "epoch"])
        picks = [history.loc[(p, e)] for p, e in enumerate(result.best_epoch)]
        out[precision] = {
            "valid_accuracy": [float(row["valid_accuracy"]) for row in picks],
            "valid_cost": [float(row["valid_cost"]) for row in picks],
        }
    acc = np.subtract(out["bf16"]["valid_accuracy"], out["fp32"]["valid_accuracy"])
    cost = np.subtract(out["bf16"]["valid_cost"], out["fp32"]["valid_cost"])
    return {
        "data": BF16_DATA,
        "epochs": BF16_EPOCHS,
        "budgets": [c.budget for c in configs],
        "seeds": [c.seed for c in configs],
        "fp32": out["fp32"],
        "bf16": out["bf16"],
        "accuracy_difference_points": {
            "mean": float(acc.mean()),
            "mean_abs": float(np.abs(acc).mean()),
            "max_abs": float(np.abs(acc).max()),
        },
        "cost_difference": {
            "mean_abs": float(np.abs(cost).mean()),
            "max_abs": float(np.abs(cost).max()),
        },
    }


@contextmanager
def _labelled(owner, name: str, label: str):
    """``owner.name`` wrapped in a profiler label for the duration (this process only)."""
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):
        with torch.profiler.record_function(label):
            return original(*args, **kwargs)

    setattr(owner, name, wrapped)
    try:
        yield
    finally:
        setattr(owner, name, original)


# Profiler categories: a labelled call of the trainer's own functions (the label covers every
# op inside it), else the top-level op's name.
_LABELS = {
    "gather": "gather",
    "dro weights": "DRO weights",
    "validation": "validation",
    "initialisation": "initialisation (the policies' weights)",
}


# The labelled passes of a step (racer_lib.routing.steps.Step), split by their children.
_PASSES = {
    "forward": ("forward matmuls", "forward bias, ReLU"),
    "backward": ("backward matmuls", "backward other ops"),
}


def _category(event) -> str | None:
    name = event.name
    if name in _LABELS:
        return _LABELS[name]
    if name in _PASSES:
        return None  # split by its children
    if name.startswith("Optimizer."):
        return "optimizer"
    return "other (objective, dual step, bookkeeping)"


def _child_category(parent: str, child) -> str:
    if child.name in _LABELS:
        return _LABELS[child.name]
    matmuls, rest = _PASSES[parent]
    return matmuls if child.name == "aten::bmm" else rest


def _profile(train, valid, configs, settings, unit, peak: float) -> dict:
    """Where the time of ``PROFILE_STEPS`` paper-size steps goes, by operation.

    One ``train_policies`` epoch over ``PROFILE_STEPS`` x 64 train pairs (and its validation
    pass) under ``torch.profiler``, with the gather, the policies' forward pass, the worst-case
    weights and the validation pass labelled. Every top-level profiler event is put in one
    category; ``python`` is the wall time no event covers (the interpreter between ops).
    Matmul rates are the matmuls' FLOPs over their time; the optimizer's bandwidth counts
    the fused AdamW's 7 passes over the parameters (reads parameter, gradient, two moments;
    writes parameter, two moments), next to a streaming ``a += b`` over as many floats
    (:func:`machine.stream_gb_per_s`). ``fraction_of_peak_if_matmuls_at_peak``: what the steps
    would reach if every matmul ran at the measured peak and the rest took what it took.
    """
    part = _head(train, PROFILE_STEPS * BATCH)
    dim = int(part.x.shape[1])
    acts = [torch.profiler.ProfilerActivity.CPU]
    with (
        _labelled(steps.Step, "forward", "forward"),
        _labelled(steps.Step, "backward", "backward"),
        _labelled(tr, "PolicyBatch", "initialisation"),
        _labelled(tr, "gather", "gather"),
        _labelled(steps, "gather", "gather"),
        _labelled(steps.dro, "batch_weights_torch", "dro weights"),
        _labelled(tr, "_evaluate", "validation"),
        torch.profiler.profile(activities=acts) as prof,
    ):
        wall = _timed(
            lambda: tr.train_policies(part, valid, configs, settings, unit, progress=False)
        )[0]
    ms = {}
    for event in prof.events():
        if event.cpu_parent is not None:
            continue
        cat = _category(event)
        if cat is None:  # a labelled pass of the training steps
            for child in event.cpu_children:
                sub = _child_category(event.name, child)
                ms[sub] = ms.get(sub, 0.0) + child.cpu_time_total / 1e3
        else:
            ms[cat] = ms.get(cat, 0.0) + event.cpu_time_total / 1e3
    ms["python"] = max(0.0, 1e3 * wall - sum(ms.values()))
    params = sum(p.numel() for p in tr.PolicyBatch(list(range(len(configs))), dim).parameters())
    fwd = _matmul_flops(part.n, dim, len(configs), backward=False)
    bwd = _matmul_flops(part.n, dim, len(configs), backward=True) - fwd
    val = _matmul_flops(valid.n, dim, len(configs), backward=False)
    optimizer_gb = 7 * 4 * params * PROFILE_STEPS / max(ms["optimizer"], 1e-9) / 1e6
    stream_gb = stream_gb_per_s(params)
    matmul_s = (ms.get("forward matmuls", 0) + ms.get("backward matmuls", 0)) / 1e3
    rest_s = wall - matmul_s - ms.get("validation", 0) / 1e3
    ceiling = (fwd + bwd) / 1e9 / peak / ((fwd + bwd) / 1e9 / peak + rest_s)
    return {
        "steps": PROFILE_STEPS,
        "tool": "torch.profiler (CPU), trainer functions labelled; top-level events",
        "wall_s": wall,
        "ms": ms,
        "ms_per_step": {k: v / PROFILE_STEPS for k, v in ms.items()},
        "share": {k: v / (1e3 * wall) for k, v in ms.items()},
        "forward_matmul_gflops": fwd / max(ms.get("forward matmuls", 0), 1e-9) / 1e6,
        "backward_matmul_gflops": bwd / max(ms.get("backward matmuls", 0), 1e-9) / 1e6,
        "optimizer_gb_per_s": optimizer_gb,
        "stream_gb_per_s": stream_gb,
        "optimizer_fraction_of_stream_bandwidth": optimizer_gb / stream_gb,
        "fraction_of_peak": (fwd + bwd + val) / wall / 1e9 / peak,
        "fraction_of_peak_if_matmuls_at_peak": ceiling,
        "bound": f"the fused AdamW step takes {ms['optimizer'] / 1e3 / wall:.0%} of the time, "
        f"at {optimizer_gb / stream_gb:.0%} of this machine's streaming bandwidth; with every "
        f"matmul at the measured peak the steps would reach {ceiling:.0%} of it",
        "note": "profiled steps run slower than the timed ones (profiler overhead); the "
        "shares say where the time goes",
    }


def _sweep() -> dict:
    if not SWEEP_FILE.exists():
        return {
            "sim_sweep_s": None,
            "sim_sweep_note": f"missing: {SWEEP_FILE.relative_to(ROOT)} "
            "does not exist (run the sim profile first: make book)",
        }
    timings = json.loads(SWEEP_FILE.read_text())
    return {
        "sim_sweep_s": float(sum(timings.values())),
        "sim_sweep_notebooks": timings,
        "sim_sweep_note": f"sum of the notebook times in {SWEEP_FILE.relative_to(ROOT)}",
    }


def run() -> dict:
    load_before = os.getloadavg()
    sim = _sim_profile()
    paper = _paper_sizes()
    bf16 = _bf16_accuracy()
    load_after = os.getloadavg()
    fraction = max(paper["fraction_of_peak"], paper["bf16_fraction_of_fp32_peak"])
    return {
        "name": "train_batched_vs_reference",
        "ratio": sim["ratio"],
        "ratio_same_optimizer": sim["ratio_same_optimizer"],
        "ratio_ceiling": sim["ratio_ceiling"],
        "fraction_of_peak": paper["fraction_of_peak"],
        "bf16_fraction_of_fp32_peak": paper["bf16_fraction_of_fp32_peak"],
        "seed_groups_speedup": paper["seed_groups_speedup"],
        "bf16_speedup": paper["bf16_speedup"],
        "bf16_accuracy_difference_points": bf16["accuracy_difference_points"],
        "target": {
            "ratio_same_optimizer": TARGET_RATIO,
            "fraction_of_peak": TARGET_FRACTION,
            "fraction_note": "fp32, or the bf16 path's FLOP rate against the fp32 peak",
        },
        "meets_target": {
            "ratio_same_optimizer": bool(sim["ratio_same_optimizer"] >= TARGET_RATIO),
            "fraction_of_peak": bool(fraction >= TARGET_FRACTION),
        },
        "bf16_vs_fp32": bf16,
        "where_the_time_goes": paper["profile"]["share"],
        "timings": {"sim_profile": sim, "paper_sizes": paper},
        **_sweep(),
        "settings": {
            "policies": POLICIES,
            "batch_size": BATCH,
            "arch": "mlp",
            "hidden": list(HIDDEN),
            "sim_data": SIM,
            "paper_data": PAPER,
            "configs": [asdict(c) for c in _configs()],
            "headline_reference": "train_reference, TrainSettings(fused=False): "
            "PyTorch's default AdamW, one policy at a time",
            "batched": "train_policies, TrainSettings() (the defaults: fused AdamW, fp32, "
            "per policy)",
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
            "load_average_before": load_before,
            "load_average_after": load_after,
            "machine": platform.platform(),
            "processor": platform.processor(),
            "python": platform.python_version(),
        },
    }


def line(result: dict) -> str:
    sim, paper = result["timings"]["sim_profile"], result["timings"]["paper_sizes"]
    shares = sorted(paper["profile"]["share"].items(), key=lambda kv: -kv[1])[:4]
    where = ", ".join(f"{k} {v:.0%}" for k, v in shares)
    sweep = (
        f"sim sweep {result['sim_sweep_s']:.0f} s"
        if result["sim_sweep_s"] is not None
        else "sim sweep time missing"
    )
    met = result["meets_target"]
    acc = result["bf16_accuracy_difference_points"]
    return (
        f"{result['name']}: {result['ratio']:.2f}x faster than 16 plain loops "
        f"({result['ratio_same_optimizer']:.2f}x vs the same loop with fused AdamW, of a "
        f"{result['ratio_ceiling']:.2f}x ceiling with every matmul at the fp32 peak; batch "
        f"{sim['batched_s']:.1f} s, plain {sim['reference_plain_s']:.1f} s, fused "
        f"{sim['reference_fused_s']:.1f} s, {sim['train_pairs']} pairs x {sim['epochs']} "
        f"epochs); paper sizes: {paper['steps']} steps in {paper['seconds']:.1f} s, "
        f"{paper['achieved_gflops']:.0f} GFLOP/s = {paper['fraction_of_peak']:.0%} of "
        f"{paper['peak_gflops']:.0f} GFLOP/s fp32 peak ("
        f"default trainer; seed groups {paper['seed_groups_speedup']:.2f}x); bf16 "
        f"{paper['bf16_speedup']:.2f}x faster ({paper['bf16_seed_groups_speedup']:.2f}x in seed "
        "groups), the faster reaching "
        f"{paper['bf16_fraction_of_fp32_peak']:.0%} of the fp32 peak, validation accuracy "
        f"{acc['mean_abs']:.2f} points from fp32 on average (at most {acc['max_abs']:.2f}); "
        f"time: {where}; {sweep} [target >= {TARGET_RATIO:g}x same optimizer: "
        f"{'met' if met['ratio_same_optimizer'] else 'NOT met'}; >= {TARGET_FRACTION:.0%} of "
        f"peak: {'met' if met['fraction_of_peak'] else 'NOT met'}]"
    )
