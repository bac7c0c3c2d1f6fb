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

Writes ``results/bench/paper_sim_07.json`` and the re-running page's paragraph,
``book/_paper_sim_time.md`` (included by ``book/rerun.md``). About ten minutes on two cores.
"""

from __future__ import annotations

import os
import platform
import resource
import tempfile
import time
from pathlib import Path

from racer_lib.book import profiles, scheduling
from racer_lib.paper import experiments
from racer_lib.paper.chapters import robustness_ablation
from racer_lib.records import simulate
from racer_lib.routing.policy import ARCHS

ROOT = Path(__file__).resolve().parent.parent
STEM = "07_budget_frontier"
PROFILE = "paper-sim"
JUDGE, BUDGET = "qwen3-4b", 3.0
EPOCHS = int(os.environ.get("RACER_BENCH_PAPER_EPOCHS", "2"))  # of the end-to-end run
PAGE = ROOT / "book" / "_paper_sim_time.md"
MIX_TRAIN = sum(simulate.RECIPES["training_mix"].values())  # pairs of the 40k mixture
TRAIN_SHARE = simulate.SPLIT_SHARES["train"]
TARGET_S = 8 * 3600  # issue 24: the profile overnight on a laptop


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


def _macs(dim: int, arch: str = "mlp") -> int:
    """Multiply-adds of one router's forward pass on one pair."""
    sizes = [dim, *ARCHS[arch], 1]
    return sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))


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
        _, configs = robustness_ablation.ablation_plan(
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
    settings = train.TrainSettings(epochs=1, lr=p.get("lr", 1e-4), precision=precision)
    start = time.perf_counter()
    train.train_policies(parts["train"], parts["valid"], configs, settings, unit, progress=False)
    return (time.perf_counter() - start) / len(configs)


def run() -> dict:
    with tempfile.TemporaryDirectory(prefix="racer-paper-sim-") as tmp:
        seconds, peak = _run(EPOCHS, Path(tmp))
    profile = profiles.load_profile(PROFILE, ROOT)
    fp32 = _policy_epoch(profile)
    return summarise(seconds, peak, fp32, _policy_epoch(profile, "bf16"))


def summarise(
    seconds: float, peak: int, policy_epoch_s: float, policy_epoch_bf16_s: float | None = None
) -> dict:
    """The result of :func:`run` from the chapter's wall time and peak memory and the time of
    one policy-epoch (in fp32, and in bf16 when measured: the profile's training then scales by
    their ratio)."""
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
        f"training is not included.{bf16}\n\n"
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
        f"{_hours(result['projected_profile_bf16_s'] or float('nan'))} bf16 [target <= 8 hours: "
        f"{'met' if any(result['meets_target'].values()) else 'NOT met'}] "
        f"(page: {PAGE})"
    )
