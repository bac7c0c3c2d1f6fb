"""Chapter 07 of the ``paper-sim`` profile for one judge and one budget, end to end, and the
projected time of the whole profile on this machine.

1. The chapter runs through papermill with the profile's parameters (40,000 simulated pairs,
   7680-d embeddings, 20 seeds, the three benchmarks) for one judge and one budget, at
   ``EPOCHS`` epochs (the wall time and the kernel's peak resident memory are recorded).
2. One **policy-epoch** (one router, one epoch over the 32,000 training pairs, with its
   validation pass) is timed directly: the same 20 routers trained for one epoch on the same
   simulated records in this process, divided by 20. (Differencing chapter runs at two epoch
   counts was tried first: on a shared machine the noise exceeded the difference.)

The projection multiplies out: the chapter at the profile's 60 epochs is the measured run plus
the remaining epochs' policy-epochs; the whole profile is, for every chapter of ``paper-sim``
that trains routers, its routers (grid sizes from the profile's parameters, as the chapters
build them) times its epochs, each policy-epoch scaled by the chapter's training pairs and by
the multiply-adds of its router at its embedding dimension. Routers that chapter 10 loads from
chapter 07 (racer_lib.routing.store) count once. Chapter 07's work besides training counts per
judge;
other chapters' work besides training (e.g. 03's cvxpy solves at n = 40,000) is not projected.

The **floor** is what no trainer on this machine can beat while it keeps the paper's
optimizer (AdamW with float32 moments, every step, appendix B.3): for every chapter, the fused
AdamW's measured time per parameter times the parameters it steps (every policy, every step),
plus the chapter's matrix products (forward and backward of every step, the validation pass of
every epoch) at this machine's measured matmul peak, in fp32 and in bf16 (square 4096 x 4096
``torch.matmul``, best of several). The optimizer is memory-bound (it reads and writes every
parameter and both moments once a step) and no grouping of the matrix products changes how
many parameters it steps. The **hard floor** puts the optimizer at the least memory traffic
any AdamW with float32 parameters and moments needs (read and write each of the three,
:data:`ADAMW_BYTES` per parameter and step) at this machine's streaming bandwidth. When the
hard floor exceeds the 8-hour target, the target cannot be met here without changing the
protocol.

Writes ``results/bench/paper_sim_07.json`` and the re-running page's paragraph,
``book/_paper_sim_time.md`` (included by ``book/rerun.md``). About ten minutes on two cores.
"""

from __future__ import annotations

import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

from racer_lib.book import profiles, scheduling
from racer_lib.paper import experiments, shift
from racer_lib.records import simulate
from racer_lib.routing.policy import ARCHS, matmul_flops, n_parameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import best_time, peak_gflops, stream_gb_per_s  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STEM = "07_budget_frontier"
PROFILE = "paper-sim"
JUDGE, BUDGET = "qwen3-4b", 3.0
EPOCHS = int(os.environ.get("RACER_BENCH_PAPER_EPOCHS", "2"))  # of the end-to-end run
PAGE = ROOT / "book" / "_paper_sim_time.md"
MIX_TRAIN = sum(simulate.RECIPES["training_mix"].values())  # pairs of the 40k mixture
TRAIN_SHARE = simulate.SPLIT_SHARES["train"]
TARGET_S = 8 * 3600  # issue 24: the profile overnight on a laptop
BATCH = 64  # the paper's minibatch (appendix B.3), the profile's too
VALID_PER_TRAIN = simulate.SPLIT_SHARES["valid"] / TRAIN_SHARE


def _run(epochs: int, work: Path) -> tuple[float, int]:
    """Chapter 07 at ``epochs`` for one judge and one budget; (seconds, peak kernel RSS)."""
    import jupytext
    import nbformat
    import papermill

    profile = profiles.load_profile(PROFILE, ROOT)
    out = work / f"e{epochs}"
    out.mkdir(parents=True)
    params = {
        **profile.notebooks[STEM],
        "judges": [JUDGE],
        "budgets": [BUDGET],
        "epochs": epochs,
        "profile": PROFILE,
        "results_dir": str(out),
    }
    ipynb = work / f"{STEM}.ipynb"
    nbformat.write(jupytext.read(ROOT / "notebooks" / f"{STEM}.md"), ipynb)
    env = scheduling.kernel_environment(1, work / "policies")  # one notebook: every core
    os.environ.update(env)
    start = time.perf_counter()
    papermill.execute_notebook(
        ipynb, out / "executed.ipynb", parameters=params, kernel_name=scheduling.KERNEL_NAME,
        language="python", cwd=ROOT, progress_bar=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
    return seconds, peak


def _macs(dim: int, arch: str = "mlp") -> float:
    """Multiply-adds of one router's forward pass on one pair."""
    return matmul_flops(dim, arch) / 2


def workload(profile: profiles.Profile) -> list[dict]:
    """Per training chapter of ``profile``: routers, epochs, training pairs, dimension."""
    nb = profile.notebooks
    rows = []

    def add(stem, routers, rows_train, p):
        rows.append(
            {"chapter": stem, "routers": routers, "epochs": p["epochs"], "train_pairs": rows_train,
             "dim": p["dim"]}
        )  # fmt: skip

    def mix(p):  # training pairs of the 40k mixture at the chapter's scale
        return round(MIX_TRAIN * p["scale"] * TRAIN_SHARE)

    if "06_training_dynamics" in nb:
        p = nb["06_training_dynamics"]
        add("06_training_dynamics", len(p["budgets"]) * p["n_seeds"], mix(p), p)
    if STEM in nb:
        p = nb[STEM]
        add(STEM, len(p["judges"]) * len(p["budgets"]) * p["n_seeds"], mix(p), p)
    if "08_robustness_ablation" in nb:
        p = nb["08_robustness_ablation"]
        _, configs = shift.ablation_plan(
            p["taus_r"], p["taus_c"], p["budget"], experiments.seeds(0, p["n_seeds"])
        )
        for subset in ("magpie_ultra", "wildguardmix"):  # the chapter's two shifts
            pairs = round(sum(simulate.RECIPES[subset].values()) * p["scale"] * TRAIN_SHARE)
            add(f"08_robustness_ablation ({subset})", len(configs), pairs, p)
    if "09_beta_sensitivity" in nb:
        p = nb["09_beta_sensitivity"]
        add("09_beta_sensitivity", len(p["betas"]) * len(p["budgets"]) * p["n_seeds"], mix(p), p)
    if "10_advanced_baselines" in nb:
        p, q = nb["10_advanced_baselines"], nb.get(STEM, {})
        shared = (
            set(p["budgets"]) <= set(q.get("budgets", ()))
            and p["n_seeds"] <= q.get("n_seeds", 0)
            and all(p[k] == q.get(k) for k in ("scale", "dim", "epochs"))
        )
        routers = 0 if shared else len(p["judges"]) * len(p["budgets"]) * p["n_seeds"]
        add("10_advanced_baselines", routers, mix(p), p)
    if "12_llama_family" in nb:
        p = nb["12_llama_family"]
        add("12_llama_family", len(p["budgets"]) * p["n_seeds"], mix(p), p)
    return rows


def _policy_epoch(profile: profiles.Profile, precision: str = "fp32") -> float:
    """Seconds of one policy-epoch: chapter 07's routers for one budget, one epoch, timed, with
    the matrix products in ``precision`` (``TrainSettings.precision``)."""
    from racer_lib.records.sets import judge_set
    from racer_lib.routing import train

    p = profile.notebooks[STEM]
    records, embeddings = judge_set(
        JUDGE, "training_mix", seed=p["seed"], dim=p["dim"], scale=p["scale"]
    )
    unit, parts = train.splits(records, embeddings)
    del records, embeddings
    configs = experiments.grid([BUDGET], experiments.seeds(p["seed"], p["n_seeds"]))
    settings = train.TrainSettings(
        epochs=1, lr=p.get("lr", 1e-4), precision=precision, keep_freed_memory=True
    )
    start = time.perf_counter()
    train.train_policies(parts["train"], parts["valid"], configs, settings, unit, progress=False)
    return (time.perf_counter() - start) / len(configs)


ADAMW_BYTES = 6 * 4  # per parameter and step, at the least: read and write it and both moments


def rates(policies: int = 20, dim: int = 7680) -> dict:
    """This machine's rates that bound training: the fused AdamW's seconds per parameter (one
    step over ``policies`` routers' parameters at ``dim``, as one chapter-07 batch), the
    streaming bandwidth over as many floats, the fp32 and bf16 matmul peaks (GFLOP/s), and
    the rates PyTorch reaches here on the first layer's own products, forward (``64 x dim`` by
    ``dim x 256``) and weight gradient (``dim x 64`` by ``64 x 256``), for ``policies``
    routers at once."""
    import torch

    numel = policies * n_parameters(dim)
    param = torch.nn.Parameter(torch.rand(numel))
    param.grad = torch.rand(numel)
    opt = torch.optim.AdamW([param], lr=1e-4, weight_decay=0.01, fused=True)
    adamw_s = best_time(opt.step) / numel
    del opt, param
    first, width = {}, ARCHS["mlp"][0]
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        x = torch.rand(policies, BATCH, dim, dtype=dtype)
        w = torch.rand(policies, dim, width, dtype=dtype)
        g = torch.rand(policies, BATCH, width, dtype=dtype)
        flops = 2.0 * policies * BATCH * dim * width
        first[name] = {
            "forward": flops / best_time(lambda x=x, w=w: torch.bmm(x, w)) / 1e9,
            "weight_gradient": flops / best_time(lambda x=x, g=g: torch.bmm(x.mT, g)) / 1e9,
        }
        del x, w, g
    return {
        "adamw_s_per_parameter": adamw_s,
        "stream_gb_per_s": stream_gb_per_s(numel),
        "peak_gflops": {"fp32": peak_gflops(torch.float32), "bf16": peak_gflops(torch.bfloat16)},
        "first_layer_gflops": first,
    }


def floor(row: dict, measured: dict) -> dict:
    """The least time of a chapter's training on this machine with the paper's optimizer
    (see the module's docstring), with fp32 and with bf16 matrix products, from :func:`rates`:
    ``floor_*`` with the optimizer at the fused AdamW's measured rate, ``hard_floor_*`` with
    it at the streaming bandwidth moving :data:`ADAMW_BYTES` per parameter (no AdamW keeping
    float32 parameters and moments in memory moves less), and ``kernel_floor_*`` with the
    first layer's products at the rates PyTorch's kernels reach on their shapes here (the
    other layers' at the peak)."""
    steps = row["routers"] * row["epochs"] * -(-row["train_pairs"] // BATCH)
    valid = round(row["train_pairs"] * VALID_PER_TRAIN)
    flops = (
        row["routers"]
        * row["epochs"]
        * (
            matmul_flops(row["dim"], rows=row["train_pairs"], backward=True)
            + matmul_flops(row["dim"], rows=valid)
        )
    )
    stepped = steps * n_parameters(row["dim"])
    optimizer_s = stepped * measured["adamw_s_per_parameter"]
    traffic_s = stepped * ADAMW_BYTES / measured["stream_gb_per_s"] / 1e9
    out = {
        "optimizer_s": optimizer_s,
        "optimizer_traffic_s": traffic_s,
        "matmul_gflop": flops / 1e9,
    }
    for name, peak in measured["peak_gflops"].items():
        out[f"floor_{name}_s"] = optimizer_s + flops / peak / 1e9
        out[f"hard_floor_{name}_s"] = traffic_s + flops / peak / 1e9
    width, runs = ARCHS["mlp"][0], row["routers"] * row["epochs"]
    forward = runs * 2.0 * (row["train_pairs"] + valid) * row["dim"] * width
    gradient = runs * 2.0 * row["train_pairs"] * row["dim"] * width
    for name, rate in measured.get("first_layer_gflops", {}).items():
        rest = (flops - forward - gradient) / measured["peak_gflops"][name]
        first = forward / rate["forward"] + gradient / rate["weight_gradient"]
        out[f"kernel_floor_{name}_s"] = optimizer_s + (first + rest) / 1e9
    return out


def run() -> dict:
    with tempfile.TemporaryDirectory(prefix="racer-paper-sim-") as tmp:
        seconds, peak = _run(EPOCHS, Path(tmp))
    profile = profiles.load_profile(PROFILE, ROOT)
    fp32 = _policy_epoch(profile)
    bf16 = _policy_epoch(profile, "bf16")
    return summarise(seconds, peak, fp32, bf16, rates())


def summarise(
    seconds: float,
    peak: int,
    policy_epoch_s: float,
    policy_epoch_bf16_s: float | None = None,
    measured: dict | None = None,
) -> dict:
    """The result of :func:`run` from the chapter's wall time and peak memory, the time of
    one policy-epoch (in fp32, and in bf16 when measured: the profile's training then scales by
    their ratio) and, when given, this machine's :func:`rates` (the floor)."""
    profile = profiles.load_profile(PROFILE, ROOT)
    p05 = profile.notebooks[STEM]
    policies = p05["n_seeds"]
    other_s = max(0.0, seconds - EPOCHS * policies * policy_epoch_s)
    reference = mix_pairs = round(MIX_TRAIN * p05["scale"] * TRAIN_SHARE)
    rows = workload(profile)
    for row in rows:
        scale = row["train_pairs"] / reference * _macs(row["dim"]) / _macs(p05["dim"])
        row["policy_epochs"] = row["routers"] * row["epochs"]
        row["projected_s"] = row["policy_epochs"] * policy_epoch_s * scale
    training_s = sum(row["projected_s"] for row in rows)
    other_05_s = other_s * len(p05["judges"])
    bf16 = (policy_epoch_bf16_s or policy_epoch_s) / policy_epoch_s
    for row in rows:
        row["projected_bf16_s"] = row["projected_s"] * bf16
        if measured:
            row.update(floor(row, measured))
    floors = (
        {
            f"{kind}{name}": sum(row[f"{kind}{name}_s"] for row in rows) + other_05_s
            for kind in ("floor_", "hard_floor_", "kernel_floor_")
            for name in ("fp32", "bf16")
            if f"{kind}{name}_s" in rows[0]
        }
        if measured
        else None
    )
    one_run_s = seconds + (p05["epochs"] - EPOCHS) * policies * policy_epoch_s
    result = {
        "name": "paper_sim_07",
        "chapter": STEM,
        "judge": JUDGE,
        "budget": BUDGET,
        "policies": policies,
        "train_pairs": mix_pairs,
        "dim": p05["dim"],
        "epochs_run": EPOCHS,
        "seconds": seconds,
        "peak_kernel_rss_gb": peak / 2**30,
        "policy_epoch_s": policy_epoch_s,
        "other_work_s_per_judge": other_s,
        "projected_one_judge_one_budget_s": one_run_s,
        "projected_profile_training_s": training_s,
        "projected_profile_s": training_s + other_05_s,
        "policy_epoch_bf16_s": policy_epoch_bf16_s,
        "projected_profile_bf16_s": training_s * bf16 + other_05_s if policy_epoch_bf16_s else None,
        "floor_s": floors,
        "rates": measured,
        "target_verdict": verdict(floors, TARGET_S) if floors else None,
        "target_s": TARGET_S,
        "meets_target": {
            "fp32": bool(training_s + other_05_s <= TARGET_S),
            "bf16": bool(policy_epoch_bf16_s and training_s * bf16 + other_05_s <= TARGET_S),
        },
        "by_chapter": rows,
        "settings": {
            "profile": PROFILE,
            "threads": scheduling.kernel_environment(1, Path("."))["OMP_NUM_THREADS"],
            "machine": platform.platform(),
            "processor": platform.processor(),
            "cores": scheduling.cpu_count(),
            "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d"),
        },
    }
    PAGE.write_text(page(result), encoding="utf-8")
    return result


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} hours" if seconds >= 5400 else f"{seconds / 60:.0f} minutes"


def verdict(floors: dict, target: float) -> str:
    """Whether ``target`` seconds can be met, from the floors of :func:`floor` (summed)."""
    if floors["hard_floor_bf16"] > target:
        return (
            "out of reach, at the rates this run measured, for any trainer that keeps the protocol"
        )
    if floors.get("kernel_floor_bf16", 0.0) > target:
        return "out of reach with PyTorch's kernels at the rates this run measured"
    return "within reach of a faster trainer at the rates this run measured"


def _bound_text(floors: dict, rates_: dict, target: float) -> str:
    first = rates_["first_layer_gflops"]["bf16"]
    return (
        " No trainer can go below a floor on this machine while it keeps the paper's optimizer: "
        "AdamW steps every parameter and both its float32 moments at every step (the fused "
        f"kernel at {rates_['adamw_s_per_parameter'] * 1e9:.2f} ns per parameter here), and the "
        "matrix products cannot run faster than the measured matmul peak "
        f"({rates_['peak_gflops']['fp32']:.0f} GFLOP/s in float32, "
        f"{rates_['peak_gflops']['bf16']:.0f} in bfloat16). With nothing but these, the "
        f"profile takes {_hours(floors['floor_fp32'])} with float32 products and "
        f"{_hours(floors['floor_bf16'])} with bfloat16 ones; an optimizer moving only "
        f"the {ADAMW_BYTES} bytes per parameter and step that it must, at the streaming "
        f"bandwidth measured in the same run ({rates_['stream_gb_per_s']:.0f} GB/s; it varies "
        "from run to run on a shared machine), would leave "
        f"{_hours(floors['hard_floor_bf16'])} in bfloat16. With the first layer's products at "
        "the rates PyTorch reaches on their own shapes here (in bfloat16, "
        f"{first['forward']:.0f} GFLOP/s forward and {first['weight_gradient']:.0f} for the "
        "weight gradient, whose inner dimension is the minibatch of 64), the floor is "
        f"{_hours(floors['kernel_floor_bf16'])}. The {target / 3600:g}-hour target is "
        f"therefore {verdict(floors, target)}."
    )


def page(result: dict) -> str:
    """The re-running page's paragraph on the time of ``paper-sim``, from a measurement."""
    rows = "\n".join(
        f"| {r['chapter']} | {r['routers']:,} | {r['epochs']} | {r['train_pairs']:,} | {r['dim']} "
        f"| {_hours(r['projected_s'])} | {_hours(r.get('projected_bf16_s') or r['projected_s'])} |"
        for r in result["by_chapter"]
    )
    bf16 = (
        f" With the matrix products in bfloat16 (`racer book build --profile paper-sim --set "
        f"'trainer={{precision: bf16}}'`: float32 weights, loss and optimizer), one "
        f"policy-epoch took {result['policy_epoch_bf16_s']:.1f} s and the profile would take "
        f"about **{_hours(result['projected_profile_bf16_s'])}** (the last column); the "
        "book's own numbers are computed in float32."
        if result.get("policy_epoch_bf16_s")
        else ""
    )
    floors, target = result.get("floor_s"), result["target_s"]
    bound = _bound_text(floors, result.get("rates"), target) if floors else ""
    s = result["settings"]
    return (
        f"Measured on {s['date']} on {s['cores']} CPU cores ({s['machine']}) by "
        "`make bench-paper-sim`: "
        f"chapter 07 of `paper-sim` for one judge ({result['judge']}) and one budget "
        f"(C = {result['budget']:g}), {result['policies']} seeds, {result['train_pairs']:,} "
        f"training pairs of {result['dim']}-d embeddings, ran end to end in "
        f"{result['seconds']:.0f} s with {result['epochs_run']} epochs of training, with at most "
        f"{result['peak_kernel_rss_gb']:.1f} GB resident. One policy-epoch (one router, one "
        f"epoch) took {result['policy_epoch_s']:.1f} s, so the chapter at the profile's "
        f"epochs takes about {_hours(result['projected_one_judge_one_budget_s'])} for this one "
        f"judge and budget, and the whole profile about "
        f"**{_hours(result['projected_profile_s'])}** on this machine: training, multiplied "
        "out per chapter below (each policy-epoch scaled by the chapter's training pairs and "
        "router size), plus chapter 07's other work per judge; the other chapters' work besides "
        f"training is not included.{bf16}{bound}\n\n"
        "| chapter | routers trained | epochs | training pairs | dim | projected (fp32) "
        "| projected (bf16) |\n"
        "|---|---:|---:|---:|---:|---:|---:|\n" + rows + "\n"
    )


def line(result: dict) -> str:
    return (
        f"{result['name']}: chapter 07 of paper-sim, one judge and one budget: "
        f"{result['seconds']:.0f} s at {result['epochs_run']} epochs; peak "
        f"{result['peak_kernel_rss_gb']:.1f} GB; {result['policy_epoch_s']:.1f} s per "
        f"policy-epoch ({result['policy_epoch_bf16_s'] or float('nan'):.1f} s in bf16); "
        f"projected profile {_hours(result['projected_profile_s'])} fp32, "
        f"{_hours(result['projected_profile_bf16_s'] or float('nan'))} bf16; floor "
        + (
            f"{_hours(result['floor_s']['floor_fp32'])} fp32, "
            f"{_hours(result['floor_s']['floor_bf16'])} bf16 (at the streaming bandwidth "
            f"{_hours(result['floor_s']['hard_floor_bf16'])}, at PyTorch's first-layer kernel "
            f"rates {_hours(result['floor_s']['kernel_floor_bf16'])}; {result['target_verdict']})"
            if result.get("floor_s")
            else "not measured"
        )
        + " [target <= 8 hours: "
        f"{'met' if any(result['meets_target'].values()) else 'NOT met'}] "
        f"(page: {PAGE})"
    )
