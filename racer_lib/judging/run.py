"""Running a judge over a shard of pairs: resumable, chunk by chunk, one part file per chunk.

:func:`run_judging` takes the pairs whose id hashes to shard ``i`` of ``n``
(:func:`racer_lib.judging.spec.shard_of`), writes one part file per chunk of ``batch_size``
items of one task (:mod:`racer_lib.judging.store`) and, restarted, judges only the items no
part holds. Each item draws from its own seed, so neither batching, sharding nor a restart
changes what it draws. Data parallelism = several processes, each with its own ``--shard i/n``
(e.g. one per GPU via ``CUDA_VISIBLE_DEVICES``, or one per machine into folders copied together
later). :func:`execute` runs one :class:`racer_lib.judging.spec.RunSpec` (what ``racer judge
run`` does): it loads the pairs and the backends, judges, and frees the backends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

import racer_lib.judging.prompts as prompts
from racer_lib.errors import ConfigError
from racer_lib.judging.backends import (
    Backend,
    Generation,
    Sampling,
    judging_sampling,
    make_backends,
)
from racer_lib.judging.spec import (
    ORDERS,
    SELF_ROUTE_MAX_TOKENS,
    TASKS,
    JudgeSpec,
    JudgingError,
    RunSpec,
    item_seed,
    shard_dir,
    shard_of,
)
from racer_lib.judging.store import (
    CONFIG_NAME,
    check_config,
    duplicates_error,
    lock,
    pin_routes,
    read_parts,
    run_config,
    write_part,
)
from racer_lib.records.io import atomic_write
from racer_lib.records.pairs import load_pairs, validate_pairs


@dataclass
class ShardResult:
    """What :func:`run_judging` did: items of the shard, already there, judged now, parts."""

    folder: Path
    n_pairs: int
    n_items: int
    n_done_before: int
    n_judged: int
    n_parts: int
    seconds: float
    judge: str = ""
    models: dict[str, str] = field(default_factory=dict)  # task -> the model's identity

    def summary(self) -> str:
        return (
            f"{self.folder}: {self.n_pairs} pairs, {self.n_items} items "
            f"({self.n_done_before} already there, {self.n_judged} judged now in "
            f"{self.seconds:.1f} s); {self.n_parts} part files"
        )


def _backends(spec: JudgeSpec, backend) -> dict[str, Backend]:
    if isinstance(backend, Mapping):
        missing = [t for t in spec.tasks if t not in backend]
        if missing:
            raise ConfigError(f"no backend for task(s) {', '.join(missing)}")
        return dict(backend)
    if spec.setup == "pair":
        raise ConfigError(
            "a pair judge needs a backend per mode: pass {'instruct': ..., "
            "'reasoning': ...} (make_backends builds it)"
        )
    return {t: backend for t in spec.tasks}


def _flip(verdict: str) -> str:
    return {"A": "B", "B": "A"}.get(verdict, verdict)


def run_judging(
    pairs: pd.DataFrame,
    backend: Backend | Mapping[str, Backend],
    run: RunSpec,
    *,
    progress: bool = False,
    routing=None,
) -> ShardResult:
    """Judge this shard's pairs into ``run.out/shard-I-of-N/part-*.parquet``; resumable.

    ``run`` (a :class:`racer_lib.judging.spec.RunSpec`) gives the judge (:attr:`RunSpec.judge`),
    the shard, ``batch_size``, ``seed``, the sampling (``temperature``, ``max_tokens``) and the
    dataset stored in the shard's config (with ``limit``, the count of pairs kept) so
    :func:`racer_lib.judging.merging.merge` can reload the pairs (``dataset=""``: pairs given
    in memory, none stored). Every (pair, task, order) item not already in a part is judged,
    in chunks of ``batch_size`` items of one task (instruct first, then self-routing, then
    reasoning, so a pair judge's two models need not be loaded at once); each chunk becomes one
    part file, written atomically. Each row holds the raw text, its thinking and answer, the
    verdict as presented (``verdict``) and in the pair's order (``verdict_pair``), tokens,
    thinking tokens, finish reason, seed and retry. Each item samples from :func:`item_seed`,
    so a resumed run gives the rows of an uninterrupted one. ``backend``: one backend for every
    task, or a mapping task -> backend (:func:`make_backends`). Backends are not closed at the
    end (the caller owns them, :func:`close_backends`); a pair judge's instruct model is closed
    before its reasoning model is loaded. ``routing`` (a
    :class:`racer_lib.routing.routed.Routing`): route-then-judge, each pair judged in the one
    mode its decision names (pinned in the shard's ``routes.csv``, the router in its config).
    """
    start_time = time.perf_counter()
    pairs = validate_pairs(pairs)
    spec, (i, n) = run.judge, run.shard
    if not 0 <= i < n:
        raise ConfigError(f"bad shard {run.shard}: need 0 <= i < n")
    if run.batch_size < 1:
        raise ConfigError(f"batch_size must be at least 1 (got {run.batch_size})")
    backends = _backends(spec, backend)
    mine = pairs[[shard_of(p, n) == i for p in pairs["id"]]].reset_index(drop=True)
    folder = shard_dir(run.out, run.shard)
    folder.mkdir(parents=True, exist_ok=True)
    config = run_config(run, backends, mine)
    config["route"] = None if routing is None else routing.config  # None: every mode
    if routing is not None and spec.self_route:
        raise ConfigError("a routed run judges one mode per pair; it asks no self-routing")
    with lock(folder):
        done, n_parts = _resume(folder, config, mine)
        modes = None if routing is None else _routed_modes(folder, routing, mine, done)
        items = [
            (task, order, row)
            for task in _TASK_ORDER
            if task in spec.tasks
            for order in (spec.orders if task != "self_route" else ORDERS[:1])
            for row in mine.itertuples(index=False)
            if modes is None or modes.get(row.id) == task
        ]
        todo = [it for it in items if (it[2].id, it[0], it[1]) not in done]
        n_parts += _judge_items(folder, todo, len(items), backends, run, progress)
    return ShardResult(
        folder,
        len(mine),
        len(items),
        len(items) - len(todo),
        len(todo),
        n_parts,
        time.perf_counter() - start_time,
        spec.record_name,
        config["models"],
    )


#: The order tasks are judged in: a pair judge's instruct model is done before the reasoning one.
_TASK_ORDER = ("instruct", "self_route", "reasoning")


def _resume(folder: Path, config: dict, mine: pd.DataFrame) -> tuple[set, int]:
    """Start or resume the shard of ``folder``: drop stale temporary parts, write (or check
    against) its config, and return the (pair, task, order) items its parts hold and the
    number of parts."""
    for stale in folder.glob(".part-*.tmp"):  # left by a killed run: never a whole part
        stale.unlink()
    cpath = folder / CONFIG_NAME
    if cpath.exists():
        check_config(cpath, config)
    else:
        atomic_write(cpath, lambda tmp: Path(tmp).write_text(json.dumps(config, indent=2)))
    parts, files = read_parts(folder)
    error = duplicates_error(parts, str(folder))
    if error is not None:
        raise error
    done = set(zip(parts["pair_id"], parts["task"], parts["order"], strict=True))
    unknown = sorted({p for p, _, _ in done} - set(mine["id"]))
    if unknown:
        raise JudgingError(
            f"{folder}: parts hold pairs that are not in this shard's pairs, e.g. {unknown[:3]}"
        )
    return done, len(files)


def _routed_modes(folder: Path, routing, mine: pd.DataFrame, done: set) -> dict[str, str]:
    """Route-then-judge: pair id -> the one task it is judged in, from ``routing``'s decisions
    (pinned in the shard's ``routes.csv``); parts in another mode are refused. A paced run
    (``routing.config["pace"]``) has decided its first rounds only: the others wait."""
    routes = routing.routes[routing.routes["id"].isin(set(mine["id"]))]
    if len(routes) != len(mine) and not routing.config.get("pace"):  # paced: the rounds so far
        raise ConfigError(f"{folder}: no routing decision for some of the shard's pairs")
    routes = pin_routes(folder, routes.reset_index(drop=True))
    modes = dict(zip(routes["id"], routes["decision"].map(dict(enumerate(TASKS))), strict=True))
    off = sorted(p for p, t, _ in done if modes.get(p) != t)
    if off:
        raise JudgingError(
            f"{folder}: parts hold judgments in a mode the router did not choose, e.g. {off[:3]}"
        )
    return modes


def _judge_items(
    folder: Path, todo: list, n_items: int, backends: dict, run: RunSpec, progress: bool
) -> int:
    """Judge ``todo`` task by task in chunks of ``run.batch_size``, one part per chunk; a
    backend no later task uses is closed once its task is done. Returns the parts written."""
    from tqdm import tqdm

    sampling = judging_sampling(run)
    route_sampling = dataclasses.replace(sampling, max_tokens=SELF_ROUTE_MAX_TOKENS)
    i, n = run.shard
    bar = tqdm(
        total=n_items,
        initial=n_items - len(todo),
        unit="item",
        desc=f"judging shard {i}/{n}",
        disable=not progress,
    )
    n_parts = 0
    try:
        task_order = [t for t in _TASK_ORDER if any(it[0] == t for it in todo)]
        for pos, task in enumerate(task_order):
            group = [it for it in todo if it[0] == task]
            for k in range(0, len(group), run.batch_size):
                chunk = group[k : k + run.batch_size]
                rows = _judge_chunk(chunk, run.judge, backends, sampling, route_sampling, run.seed)
                write_part(folder, rows)
                n_parts += 1
                bar.update(len(chunk))
            later = {id(backends[t]) for t in task_order[pos + 1 :]}
            if later and id(backends[task]) not in later:
                backends[task].close()  # a pair judge: free one model before the next
    finally:
        bar.close()
    return n_parts


def _judge_chunk(
    chunk, spec: JudgeSpec, backends, sampling: Sampling, route_sampling: Sampling, seed: int
) -> list[dict]:
    task = chunk[0][0]
    backend = backends[task]
    kwargs = (
        spec.chat_template_kwargs(task)
        if task != "self_route"
        else (None if spec.setup == "pair" else {"enable_thinking": False})
    )
    convs, seeds = [], []
    for _, order, row in chunk:
        a, b = (
            (row.response_a, row.response_b)
            if order == "original"
            else (row.response_b, row.response_a)
        )
        convs.append(spec.messages(task, row.prompt, a, b))
        seeds.append(item_seed(seed, row.id, task, order))
    gens = backend.generate(
        convs,
        route_sampling if task == "self_route" else sampling,
        seeds=seeds,
        chat_template_kwargs=kwargs,
    )
    if len(gens) != len(convs):
        raise RuntimeError(
            f"backend {backend.name} returned {len(gens)} generations for "
            f"{len(convs)} conversations"
        )
    retried: dict[int, Generation] = {}
    if spec.retry and task != "self_route":
        again = [j for j, g in enumerate(gens) if prompts.needs_retry(g.answer)]
        if again:
            rgens = backend.generate(
                [prompts.retry_messages(convs[j], gens[j].text) for j in again],
                sampling,
                seeds=[
                    item_seed(seed, chunk[j][2].id, task, chunk[j][1], attempt=1) for j in again
                ],
                chat_template_kwargs=kwargs,
            )
            retried = dict(zip(again, rgens, strict=True))
    rows = []
    for j, ((_, order, row), g) in enumerate(zip(chunk, gens, strict=True)):
        r = retried.get(j)
        if task == "self_route":
            verdict = prompts.parse_self_route(g.answer)
            parse, vpair = "self_route", verdict
        else:
            details = prompts.parse_verdict_details(r.answer if r is not None else g.answer)
            verdict, parse = details.verdict, details.reason
            vpair = verdict if order == "original" else _flip(verdict)
        n_tok = g.n_tokens + (r.n_tokens if r is not None else 0)
        n_think = g.n_thinking_tokens
        if r is not None and n_think is not None and r.n_thinking_tokens is not None:
            n_think += r.n_thinking_tokens
        rows.append(
            {
                "pair_id": row.id,
                "task": task,
                "order": order,
                "model": backend.model_id,
                "enable_thinking": None if kwargs is None else kwargs["enable_thinking"],
                "seed": seeds[j],
                "text": g.text,
                "thinking": g.thinking,
                "answer": g.answer,
                "verdict": verdict,
                "verdict_pair": vpair,
                "parse": parse,
                "n_tokens": n_tok,
                "n_thinking_tokens": n_think,
                "finish_reason": (r or g).finish_reason,
                "retried": r is not None,
                "retry_text": r.text if r is not None else None,
            }
        )
    return rows


def close_backends(backends: Mapping[str, Backend]) -> None:
    """Free every model of ``backends`` once (a model used by several tasks is one backend)."""
    for backend in {id(b): b for b in backends.values()}.values():
        backend.close()


def execute(
    run: RunSpec, pairs: pd.DataFrame | None = None, *, progress: bool = False, routing=None
) -> ShardResult:
    """Run ``racer judge run`` as ``run`` specifies: set the torch threads, load the pairs
    (unless given: the pairs of ``run.dataset``, first ``run.limit``), make the backends, judge
    the shard into ``run.out`` and free the backends. The shard's config names the dataset
    (a pairs file by its absolute path, :func:`racer_lib.records.pairs.dataset_ref`) so that
    :func:`racer_lib.judging.merging.merge` can reload the pairs. A run with ``run.router``
    (route, then judge) is :func:`racer_lib.routing.routed.execute_routed`, which loads the
    router and passes its decisions as ``routing``."""
    if run.router is not None and routing is None:
        raise ConfigError(
            "a routed run (RunSpec.router) is executed by racer_lib.routing.routed.execute_routed"
        )
    if pairs is None:
        pairs = load_pairs(run.dataset, run.limit)
    with open_backends(run) as backends:
        return run_judging(pairs, backends, run, progress=progress, routing=routing)


@contextlib.contextmanager
def open_backends(run: RunSpec):
    """The backends of ``run``'s judge (:func:`make_backends`, the torch CPU threads set
    first), freed on leaving (:func:`close_backends`)."""
    if run.threads:
        import torch

        torch.set_num_threads(run.threads)
    backends = make_backends(run.judge, run.backend, **run.backend_options())
    try:
        yield backends
    finally:
        close_backends(backends)
