"""The run's store: shard folders of atomically written part files, and their config.

Layout::

    OUT/shard-I-of-N/config.json            what the parts were made with (judge, backend and
                                            models, sampling, seed, shard, pairs fingerprint,
                                            dataset); a restart with other settings is refused
    OUT/shard-I-of-N/part-00000.parquet     one file per judged chunk, PART_COLUMNS, one row
    OUT/shard-I-of-N/part-00001.parquet     per (pair, task, order) item
    OUT/shard-I-of-N/.lock                  one writer per shard folder (an advisory lock)

A part is written to a temporary file and renamed (:func:`racer_lib.records.io.atomic_write`),
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

from racer_lib.judging.backends import Backend, judging_sampling
from racer_lib.judging.spec import SELF_ROUTE_MAX_TOKENS, JudgingError, RunSpec
from racer_lib.records.io import atomic_write
from racer_lib.records.pairs import dataset_ref

CONFIG_NAME = "config.json"
ROUTES_NAME = "routes.csv"  # a route-then-judge shard's decisions (racer_lib.routing.routed)
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


#: What a pair's judgments depend on (its texts) and are scored against (its label).
_PAIR_FIELDS = ("prompt", "response_a", "response_b", "label")


def _pair_digests(pairs: pd.DataFrame) -> dict[str, str]:
    """Per pair id, a short sha256 of each of :data:`_PAIR_FIELDS`, space-separated (one line
    per pair in ``config.json``), in the pairs' order."""
    return {
        str(row[0]): " ".join(hashlib.sha256(str(v).encode()).hexdigest()[:12] for v in row[1:])
        for row in pairs[["id", *_PAIR_FIELDS]].itertuples(index=False)
    }


def pairs_fingerprint(pairs: pd.DataFrame | Sequence[str]) -> str:
    """sha256 of the sorted pairs (which pairs, not their order): of each pair's id, texts and
    label for a pairs frame; of the ids alone for a sequence of ids (the shards written before
    the texts were hashed)."""
    if isinstance(pairs, pd.DataFrame):
        digests = _pair_digests(pairs)
        lines = [f"{i}\t{digests[i]}" for i in sorted(digests)]
    else:
        lines = sorted(map(str, pairs))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _pairs_name(config: Mapping[str, Any]) -> str:
    dataset = config.get("dataset")
    return str(dataset["name"]) if dataset else "the pairs given"


def _changed_pairs_error(
    where: str, old: Mapping[str, Any], new: Mapping[str, Any], name: str
) -> JudgingError | None:
    """The error for a shard whose pairs (``old``: its config's ``pairs``) are not ``new``'s:
    it names the pairs file, the first pair (in ``new``'s order) that changed and its field;
    ``None`` if nothing changed. ``old`` without ``digests`` (a shard from before the texts
    were hashed) is checked on its ids."""
    if old.get("fingerprint") == new.get("fingerprint"):
        return None
    tail = "; judge them into another folder (the judgments in this one are of the old pairs)"
    old_d, new_d = old.get("digests"), new.get("digests") or {}
    if old_d is None:
        if old.get("fingerprint") == pairs_fingerprint(list(new_d)):
            return None  # an older shard: only its ids were recorded, and they are the same
        return JudgingError(f"{where}: {name} holds other pairs than this shard was started with")
    for pid, digest in new_d.items():
        if pid not in old_d:
            return JudgingError(
                f"{where}: {name}: pair {pid!r} is not among the pairs this shard was started "
                f"with{tail}"
            )
        if digest != old_d[pid]:
            field = _PAIR_FIELDS[
                next(
                    k for k, (a, b) in enumerate(zip(digest.split(), old_d[pid].split())) if a != b
                )
            ]
            return JudgingError(
                f"{where}: {name}: pair {pid!r}, field {field!r} changed since this shard was "
                f"started{tail}"
            )
    gone = next((pid for pid in old_d if pid not in new_d), None)
    if gone is None:
        return None  # the same pairs, texts and labels
    return JudgingError(
        f"{where}: {name}: pair {gone!r} of this shard is no longer in the pairs{tail}"
    )


#: Shard folders this process has read: absolute path -> (each part's name and content key;
#: all of them as one frame). A part is written once, atomically, under a new name, so its
#: inode, size and mtime identify its content. A paced run reads its shard's parts after
#: every round: the parts read before are kept, only new ones are parsed and appended; any
#: other change (a part removed, replaced or rewritten) reads the folder afresh.
_SHARDS_READ: dict[str, tuple[tuple, pd.DataFrame]] = {}
_SHARDS_KEPT = 1000  # folders remembered at most (then forgotten, all at once)


def _content_key(path: Path) -> tuple[str, int, int, int]:
    stat = path.stat()
    return path.name, stat.st_ino, stat.st_size, stat.st_mtime_ns


def read_parts(folder: Path) -> tuple[pd.DataFrame, list[Path]]:
    """Every part file of a shard folder as one frame (column ``part``: its file), and the
    files (each parsed once while it stays the same: :data:`_SHARDS_READ`)."""
    files = sorted(p for p in folder.glob("part-*.parquet") if PART_RE.match(p.name))
    if not files:
        return pd.DataFrame(columns=PART_COLUMNS + ["part"]), []
    keys, where = tuple(_content_key(f) for f in files), os.path.abspath(folder)
    known, frame = _SHARDS_READ.get(where, ((), None))
    if frame is None or keys[: len(known)] != known:
        known, frame = (), None
    frames = [] if frame is None else [frame]
    for f in files[len(known) :]:
        part = pd.read_parquet(f)
        part["part"] = f.name
        frames.append(part)
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(_SHARDS_READ) >= _SHARDS_KEPT:
        _SHARDS_READ.clear()
    _SHARDS_READ[where] = (keys, frame)
    return frame, files


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
    atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    return path


def pin_routes(folder: Path, routes: pd.DataFrame) -> pd.DataFrame:
    """A route-then-judge shard's decisions (``id, p_reasoning, decision``): written atomically
    to ``routes.csv`` before its first judgment; a resumed run reads them back (the config
    pins the router and rule), so a pair's mode never changes mid-run."""
    path = folder / ROUTES_NAME
    if not path.exists():
        atomic_write(path, lambda tmp: routes.to_csv(tmp, index=False))
        return routes
    pinned = pd.read_csv(path, dtype={"id": str})
    if sorted(pinned["id"]) != sorted(routes["id"]):
        raise JudgingError(f"{path}: holds the decisions of other pairs than this shard's")
    return pinned


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
    run: RunSpec, backends: Mapping[str, Backend], pairs: pd.DataFrame
) -> dict[str, Any]:
    """A shard's ``config.json``: everything its outputs depend on (the judge, the models, the
    sampling, the seed, the shard of ``run``), and where its pairs came from (``run.dataset``
    and ``run.limit``, not compared on restart: a path may differ by machine; none for pairs
    given in memory). ``pairs``: the shard's pairs, recorded by a digest of each one's texts and
    label (:func:`_pair_digests`), so a restart or merge over pairs changed under the same ids is
    refused."""
    spec = run.judge
    return {
        "judge": spec.identity(),
        "backend": sorted({b.name for b in backends.values()})[0],
        "models": {t: backends[t].model_id for t in spec.tasks},
        "sampling": dataclasses.asdict(judging_sampling(run)),
        "seed": int(run.seed),
        "self_route_max_tokens": SELF_ROUTE_MAX_TOKENS,
        "shard": list(run.shard),
        "pairs": {
            "n": len(pairs),
            "fingerprint": pairs_fingerprint(pairs),
            "digests": _pair_digests(pairs),
        },
        "dataset": (
            {"name": dataset_ref(run.dataset), "limit": run.limit} if run.dataset else None
        ),
    }


def _read_config(path: Path) -> dict[str, Any]:
    """A shard's ``config.json``; a judge written under its former key ``kind`` (the set-up,
    renamed ``setup`` so that "mode" and "kind" no longer name it) is read as ``setup``."""
    config = json.loads(path.read_text())
    judge = config.get("judge") or {}
    if "kind" in judge and "setup" not in judge:
        config["judge"] = {"setup" if k == "kind" else k: v for k, v in judge.items()}
    return config


def check_config(path: Path, new: dict[str, Any]) -> None:
    """Refuse to resume the shard of ``path`` with settings other than it was started with."""
    old = _read_config(path)
    error = _changed_pairs_error(str(path), old.get("pairs") or {}, new["pairs"], _pairs_name(new))
    if error is not None:
        raise error
    keys = [k for k in new if k not in ("dataset", "pairs") and old.get(k) != new[k]]
    if keys:
        details = "; ".join(f"{k}: was {old.get(k)!r}, now {new[k]!r}" for k in keys)
        raise JudgingError(
            f"{path}: this shard was started with other settings ({details}); "
            "resume with the same ones or write to another folder"
        )


def check_shard_pairs(folder: Path, pairs: pd.DataFrame, name: str) -> None:
    """Refuse to merge the shard of ``folder`` over ``pairs`` (its share of the pairs named
    ``name``) when a pair's texts or label changed since it was judged; pairs missing on
    either side are left to the merge's completeness checks."""
    old = _read_config(folder / CONFIG_NAME).get("pairs") or {}
    if old.get("digests") is None:
        return  # an older shard: only its ids were recorded
    new_d = {k: v for k, v in _pair_digests(pairs).items() if k in old["digests"]}
    old_d = {k: v for k, v in old["digests"].items() if k in new_d}
    error = _changed_pairs_error(
        str(folder),
        {"fingerprint": str(sorted(old_d.items())), "digests": old_d},
        {"fingerprint": str(sorted(new_d.items())), "digests": new_d},
        name,
    )
    if error is not None:
        raise error


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
        cfg = _read_config(cpath)
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
