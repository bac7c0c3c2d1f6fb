"""The paper's judges on a GPU, from a notebook: what this machine can run, and the commands.

The paper's records come from Qwen3-1.7B, 4B and 8B, each a ``hybrid`` judge (thinking off for
instruct, on for reasoning) run with vLLM at temperature 0.6. :func:`plan` makes one
:class:`GpuJob` per model: its :class:`racer_lib.judging.spec.RunSpec` (into
``OUT/gpu/<model>``), its records file (``OUT/<dataset>_<model>.parquet``,
:func:`racer_lib.judging.spec.records_name`) and what this machine lacks to run it
(:func:`missing_here`: a CUDA GPU, vLLM, the model's files in the local Hugging Face cache).
:func:`write_script` writes the jobs' ``racer judge run`` / ``racer judge merge`` lines to a
shell script; :func:`select` decides, by the chapter's ``run_gpu`` setting (``"auto"``, ``True``
or ``False``), which jobs run here and says why the others do not.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from racer_lib.errors import ConfigError
from racer_lib.judging.merging import merge
from racer_lib.judging.run import execute
from racer_lib.judging.spec import RunSpec, merge_command_string, model_tag, records_name
from racer_lib.records.pairs import dataset_ref, load_pairs

RUN_GPU = ("auto", True, False)


def check_run_gpu(run_gpu: str | bool) -> None:
    """Refuse a ``run_gpu`` setting other than ``"auto"``, ``True`` or ``False``."""
    if run_gpu not in RUN_GPU:
        raise ConfigError(f"run_gpu must be 'auto', True or False (got {run_gpu!r})")


def _in_hf_cache(model_id: str) -> bool:
    """Whether the model's ``config.json`` is in the local Hugging Face cache."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(model_id, "config.json"), str)


def missing_here(model: str) -> list[str]:
    """What this machine lacks to judge with ``model`` on vLLM (empty: nothing)."""
    import torch

    missing = []
    if not torch.cuda.is_available():
        missing.append("no CUDA GPU (torch.cuda.is_available() is False)")
    if importlib.util.find_spec("vllm") is None:
        missing.append("vLLM is not installed (pip install 'racer-companion[gpu]')")
    if not _in_hf_cache(model):
        missing.append(
            f"{model} is not in the local Hugging Face cache (huggingface-cli download {model})"
        )
    return missing


@dataclass(frozen=True)
class GpuJob:
    """One model to judge on a GPU: the run, its records file, what this machine lacks."""

    run: RunSpec
    records: Path
    missing: tuple[str, ...]

    @property
    def commands(self) -> tuple[str, str]:
        """The ``racer judge run`` and ``racer judge merge`` lines of the job."""
        return self.run.command_string(), merge_command_string(self.run.out, self.records)

    def execute(self) -> pd.DataFrame:
        """Judge, merge into :attr:`records` and return the records (printing each step)."""
        print(f"running: {self.commands[0]}")
        pairs = load_pairs(self.run.dataset, self.run.limit)
        print(execute(self.run, pairs, progress=False).summary())
        records = merge(self.run.out, pairs, out=self.records)
        print(f"wrote {len(records)} judge records to {self.records}")
        return records


def plan(
    models: Sequence[str],
    dataset: str,
    out: str | os.PathLike,
    *,
    max_tokens: int,
    batch_size: int,
    seed: int,
) -> list[GpuJob]:
    """A :class:`GpuJob` per model: a hybrid judge on vLLM judging every pair of ``dataset``
    into ``out/gpu/<model>``, its records written to ``out/<dataset>_<model>.parquet``."""
    out = Path(out)
    return [
        GpuJob(
            RunSpec(
                dataset_ref(dataset),
                model,
                out / "gpu" / model_tag(model),
                backend="vllm",
                setup="hybrid",
                max_tokens=max_tokens,
                batch_size=batch_size,
                seed=seed,
            ),
            out / records_name(dataset, model),
            tuple(missing_here(model)),
        )
        for model in models
    ]


def write_script(jobs: Sequence[GpuJob], path: str | os.PathLike) -> Path:
    """A bash script of every job's command lines (run, then merge), to run on a GPU machine."""
    lines = [
        "#!/usr/bin/env bash",
        "# The paper's judges on a GPU (vLLM); written by notebooks/02_judging.md.",
        "set -euo pipefail",
        *(line for job in jobs for line in job.commands),
    ]
    path = Path(path)
    path.write_text("\n".join(lines) + "\n")
    return path


def select(
    jobs: Sequence[GpuJob], run_gpu: str | bool, script: str | os.PathLike | None = None
) -> list[GpuJob]:
    """The jobs to run here: with ``"auto"`` those that lack nothing, with ``False`` none, with
    ``True`` all (a :class:`racer_lib.errors.ConfigError` names what any of them lacks).
    Prints which jobs are skipped, why, and the command lines they would run (also in
    ``script``, when given)."""
    check_run_gpu(run_gpu)
    if run_gpu is True:
        blocked = [f"{job.run.model}: {'; '.join(job.missing)}" for job in jobs if job.missing]
        if blocked:
            raise ConfigError(
                "run_gpu is True but the GPU cell cannot run:\n  " + "\n  ".join(blocked)
            )
    to_run = [job for job in jobs if run_gpu is not False and not job.missing]
    skipped = [job for job in jobs if all(job is not j for j in to_run)]
    if skipped:
        print(f"GPU cell skipped for {len(skipped)} of {len(jobs)} models (run_gpu = {run_gpu!r}):")
        for job in skipped:
            print(f"  {job.run.model}: " + ("; ".join(job.missing) or "run_gpu is False"))
        print("it would run:")
        for job in skipped:
            print("  " + "\n  ".join(job.commands))
        if script is not None:
            print(f"(also written to {script})")
    return to_run
