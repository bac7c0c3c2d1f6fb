"""The run's store: shard folders of atomically written part files, and their config.

Layout::

    OUT/shard-I-of-N/config.json            what the parts were made with (judge, backend and
                                            models, sampling, seed, shard, pairs fingerprint,
                                            dataset); a restart with other settings is refused
    OUT/shard-I-of-N/part-00000.parquet     one file per judged chunk, PART_COLUMNS, one row
    OUT/shard-I-of-N/part-00001.parquet     per (pair, task, order) item
    OUT/shard-I-of-N/.lock                  one writer per shard folder (an advisory lock)

A part is written to a temporary file and renamed (:func:`racer_lib.records._atomic_write`),
so a killed run leaves whole parts only. Duplicated items (two runs writing one shard) are an
error naming the part files (:func:`duplicates_error`). :func:`read_shards` reads every shard of
a run and checks that they were made with the same settings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from racer_lib.judging.backends import Backend, Sampling
from racer_lib.judging.spec import JudgeSpec, JudgingError
from racer_lib.records import _atomic_write

CONFIG_NAME = "config.json"
PART_RE = re.compile(r"^part-(\d{5,})\.parquet$")
SHARD_RE = re.compile(r"^shard-(\d+)-of-(\d+)$")
PART_COLUMNS = [
    "pair_id",
    "task",
    "order",
    "model",
    "enable_thinking",
    "seed",
    "text",
    "thinking",
    "answer",
    "verdict",
    "verdict_pair",
    "parse",
    "n_tokens",
    "n_thinking_tokens",
    "finish_reason",
    "retried",
    "retry_text",
]


def pairs_fingerprint(ids: Sequence[str]) -> str:
    """sha256 of the sorted ids (which pairs, not their order)."""
    return hashlib.sha256("\n".join(sorted(map(str, ids))).encode()).hexdigest()[:16]


def read_parts(folder: Path) -> tuple[pd.DataFrame, list[Path]]:
    """Every part file of a shard folder as one frame (column ``part``: its file), and the
    files."""
    files = sorted(p for p in folder.glob("part-*.parquet") if PART_RE.match(p.name))
    if not files:
        return pd.DataFrame(columns=PART_COLUMNS + ["part"]), []
    frames = []
    for f in files:
        frame = pd.read_parquet(f)
        frame["part"] = f.name
        frames.append(frame)
    return pd.concat(frames, ignore_index=True), files


def duplicates_error(parts: pd.DataFrame, where: str) -> JudgingError | None:
    """The error to raise when an item is in ``parts`` twice (naming its part files), else
    ``None``."""
    key = ["pair_id", "task", "order"]
    dup = parts.duplicated(key, keep=False)
    if not dup.any():
        return None
    rows = parts[dup].sort_values(key)
    first = rows.iloc[0]
    files = sorted(
        rows[
            (rows.pair_id == first.pair_id)
            & (rows.task == first.task)
            & (rows.order == first.order)
        ]["part"]
    )
    ids = sorted(rows["pair_id"].unique())
    return JudgingError(
        f"{where}: duplicate judgments of {len(ids)} pair(s), e.g. "
        f"{first.pair_id!r} ({first.task}, {first.order}) in {', '.join(files)}; "
        "were two runs writing the same shard? Remove the duplicate parts"
    )


def write_part(folder: Path, rows: list[dict]) -> Path:
    """Write ``rows`` (:data:`PART_COLUMNS`) atomically as the folder's next part file."""
    numbers = [int(m[1]) for p in folder.iterdir() if (m := PART_RE.match(p.name))]
    path = folder / f"part-{(max(numbers) + 1) if numbers else 0:05d}.parquet"
    frame = pd.DataFrame(rows, columns=PART_COLUMNS)
    frame["n_thinking_tokens"] = frame["n_thinking_tokens"].astype("Int64")
    frame["enable_thinking"] = frame["enable_thinking"].astype("boolean")
    frame["seed"] = frame["seed"].astype("int64")
    frame["n_tokens"] = frame["n_tokens"].astype("int64")
    _atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    return path


@contextlib.contextmanager
def lock(folder: Path):
    """One writer per shard folder (an advisory lock, released when the process dies)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    fh = open(folder / ".lock", "w")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise JudgingError(f"{folder}: another process is judging this shard now") from None
        yield
    finally:
        fh.close()


def run_config(
    spec: JudgeSpec,
    backends: Mapping[str, Backend],
    sampling: Sampling,
    seed: int,
    self_route_max_tokens: int,
    shard: tuple[int, int],
    ids: Sequence[str],
    dataset: str | None,
    limit: int | None,
) -> dict[str, Any]:
    """A shard's ``config.json``: everything its outputs depend on, and where its pairs came
    from (``dataset``, not compared on restart: a path may differ by machine)."""
    return {
        "judge": spec.identity(),
        "backend": sorted({b.name for b in backends.values()})[0],
        "models": {t: backends[t].model_id for t in spec.tasks},
        "sampling": dataclasses.asdict(sampling),
        "seed": int(seed),
        "self_route_max_tokens": int(self_route_max_tokens),
        "shard": list(shard),
        "pairs": {"n": len(ids), "fingerprint": pairs_fingerprint(ids)},
        "dataset": None if dataset is None else {"name": str(dataset), "limit": limit},
    }


def check_config(path: Path, new: dict[str, Any]) -> None:
    """Refuse to resume the shard of ``path`` with settings other than it was started with."""
    old = json.loads(path.read_text())
    keys = [k for k in new if k != "dataset" and old.get(k) != new[k]]
    if keys:
        details = "; ".join(f"{k}: was {old.get(k)!r}, now {new[k]!r}" for k in keys)
        raise JudgingError(
            f"{path}: this shard was started with other settings ({details}); "
            "resume with the same ones or write to another folder"
        )


def shard_folders(out_dir: Path) -> dict[tuple[int, int], Path]:
    """The shard folders of a run, by ``(i, n)``."""
    found = {}
    for p in out_dir.iterdir() if out_dir.is_dir() else []:
        m = SHARD_RE.match(p.name)
        if m and p.is_dir():
            found[(int(m[1]), int(m[2]))] = p
    return found


def read_shards(out_dir: str | os.PathLike) -> tuple[pd.DataFrame, dict[str, Any], int]:
    """Every part of every shard folder, the common config (shard fields dropped) and N."""
    out_dir = Path(out_dir)
    folders = shard_folders(out_dir)
    if not folders:
        raise JudgingError(
            f"{out_dir}: no shard folders (shard-I-of-N) to merge; run "
            f"`racer judge run ... --out {out_dir}` first"
        )
    counts = sorted({n for _, n in folders})
    if len(counts) > 1:
        raise JudgingError(
            f"{out_dir}: shard folders of different splits "
            f"({', '.join(f'of-{n}' for n in counts)}); keep one split"
        )
    n = counts[0]
    configs, frames = {}, []
    for (i, _), folder in sorted(folders.items()):
        cpath = folder / CONFIG_NAME
        if not cpath.exists():
            raise JudgingError(f"{folder}: no {CONFIG_NAME}; not a judging shard folder")
        cfg = json.loads(cpath.read_text())
        for key in ("shard", "pairs"):  # per shard
            cfg.pop(key, None)
        configs[i] = cfg
        parts, _ = read_parts(folder)
        parts["shard"] = i
        frames.append(parts)
    first_i, first = next(iter(configs.items()))
    for i, cfg in configs.items():
        keys = [
            k
            for k in set(first) | set(cfg)  # a pairs file's path may differ by machine
            if k != "dataset" and first.get(k) != cfg.get(k)
        ]
        if keys:
            raise JudgingError(
                f"{out_dir}: shard {i}/{n} was run with other settings than "
                f"shard {first_i}/{n} ({', '.join(sorted(keys))})"
            )
    return pd.concat(frames, ignore_index=True), first, n
