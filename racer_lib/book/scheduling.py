"""Scheduling: which chapters wait for which, and running the plan several notebooks at a time.

A chapter starts once the chapters it reads (:data:`READS`) or loads routers from
(:data:`AFTER`) have finished; both come from the chapter registry
(:mod:`racer_lib.paper.registry`). ``jobs`` notebooks (default: the cores) execute at once, each
in a worker process whose kernel gets its share of the cores (:func:`kernel_environment`) and the
policy store ``build/policies`` (:mod:`racer_lib.routing.store`).

While a notebook runs, papermill saves it cell by cell as ``<stem>.partial.ipynb``; it becomes
``<stem>.ipynb`` on success, or ``<stem>.failed.ipynb`` (and any older ``<stem>.ipynb`` is
removed) on failure, so ``--only`` never builds the book from a broken or outdated execution.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from racer_lib.book.profiles import Layout, PipelineError, Prepared, Profile
from racer_lib.paper import registry

KERNEL_NAME = "python3"
READS_ALL = registry.READS_ALL
# Chapters that read other chapters' results (stem -> stems, or READS_ALL); only chapters of the
# same profile count; a chapter's cache key includes the keys of the chapters it reads.
READS: dict[str, tuple[str, ...] | str] = dict(registry.READS)
# Chapters that must run after others without reading their results: they load routers the
# others train. Only the order is fixed; it does not enter the cache key (a loaded router is bit
# for bit the stored one).
AFTER: dict[str, tuple[str, ...]] = dict(registry.AFTER)


def chapter_reads(stem: str, profile: Profile) -> list[str]:
    """The chapters of ``profile`` run before ``stem`` whose results ``stem`` reads (READS)."""
    declared = READS.get(stem, ())
    before = list(profile.notebooks)[: list(profile.notebooks).index(stem)]
    if declared == READS_ALL:
        return before
    return [other for other in before if other in declared]


def chapter_after(stem: str, profile: Profile) -> list[str]:
    """The chapters of ``profile`` run before ``stem`` that must finish before it starts: those
    it reads (:data:`READS`) and those whose trained routers it loads (:data:`AFTER`)."""
    before = list(profile.notebooks)[: list(profile.notebooks).index(stem)]
    wanted = set(chapter_reads(stem, profile)) | set(AFTER.get(stem, ()))
    return [other for other in before if other in wanted]


def _execute(prepared: Prepared, layout: Layout, verbose: bool) -> Path:
    """Run one notebook with papermill; return the executed notebook's path."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    stem = prepared.stem
    layout.results_dir(stem).mkdir(parents=True, exist_ok=True)
    partial = layout.executed_notebook(stem, "partial")
    done, failed = layout.executed_notebook(stem), layout.executed_notebook(stem, "failed")
    try:
        papermill.execute_notebook(
            prepared.ipynb,
            partial,
            parameters=prepared.parameters,
            kernel_name=KERNEL_NAME,
            language="python",
            cwd=layout.root,
            progress_bar=verbose,
            # Quiet kernels unless verbose (ipykernel warns about plain TCP on every start).
            extra_arguments=[] if verbose else ["--IPKernelApp.log_level=ERROR"],
        )
    except PapermillExecutionError as exc:
        partial.replace(failed)
        done.unlink(missing_ok=True)  # never leave an executed notebook of older code behind
        # papermill counts the cell it injects right after the parameters cell: undo that.
        index = exc.cell_index - 1 if exc.cell_index > prepared.parameters_cell else exc.cell_index
        first_line = next((line for line in exc.source.splitlines() if line.strip()), "")
        raise PipelineError(
            f"notebook {stem!r} ({layout.notebook(stem)}) failed in cell {index} "
            f"(0-based, markdown cells included), which starts with {first_line!r}:\n"
            f"  {exc.ename}: {exc.evalue}\n"
            f"executed part saved to {failed}"
        ) from None
    except Exception as exc:  # kernel died, could not start, timed out, ...
        if partial.exists():
            partial.replace(failed)
        done.unlink(missing_ok=True)
        raise PipelineError(
            f"notebook {stem!r} could not be executed: {type(exc).__name__}: {exc}"
        ) from exc
    failed.unlink(missing_ok=True)
    return partial.replace(done)


POLICY_STORE = (
    "policies"  # <build_dir>/policies: the routers chapters share (racer_lib.routing.store)
)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def cpu_count() -> int:
    """The cores this process may use (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def kernel_environment(jobs: int, store: Path) -> dict[str, str]:
    """What every notebook's kernel finds in its environment: its share of the cores (the
    threads of numpy's BLAS, and of torch where a chapter keeps torch's default) and the policy
    store shared by the chapters (:data:`racer_lib.routing.store.ENV_STORE`)."""
    from racer_lib.routing.store import ENV_STORE

    threads = max(1, cpu_count() // max(1, jobs))
    return {**{name: str(threads) for name in THREAD_VARIABLES}, ENV_STORE: str(store)}


def _execute_with(
    prepared: Prepared, layout: Layout, verbose: bool, env: dict[str, str]
) -> tuple[Path, float]:
    """Run one notebook with ``env`` in its kernel's environment; return its path and seconds.

    The kernel inherits this process's environment, which is restored afterwards."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        start = time.perf_counter()
        path = _execute(prepared, layout, verbose)
        return path, time.perf_counter() - start
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def execute_plan(
    plan: list[Prepared],
    after: dict[str, list[str]],
    layout: Layout,
    jobs: int,
    env: dict[str, str],
    on_done,
    verbose: bool = False,
) -> None:
    """Execute ``plan`` with at most ``jobs`` notebooks at a time, each once the chapters it
    must follow (``after``, stems of ``plan``) have succeeded; among the ready ones the first in
    ``plan`` starts first. ``on_done(prepared, path, seconds)`` is called, in this process, as
    each one succeeds. After a failure nothing new starts; the running ones finish, then the
    first error is raised. ``jobs == 1`` runs them in this process, one after the other."""
    if jobs <= 1 or len(plan) <= 1:
        for item in plan:
            on_done(item, *_execute_with(item, layout, verbose, env))
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    pending, running, done = list(plan), {}, set()
    error: BaseException | None = None
    context = multiprocessing.get_context("spawn")  # no inherited threads or open kernels
    with ProcessPoolExecutor(max_workers=min(jobs, len(plan)), mp_context=context) as pool:
        while pending or running:
            for item in list(pending) if error is None else []:
                if len(running) < jobs and all(other in done for other in after[item.stem]):
                    future = pool.submit(_execute_with, item, layout, verbose, env)
                    running[future] = item
                    pending.remove(item)
            if not running:
                break  # what is left waits for a chapter that failed
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                item = running.pop(future)
                try:
                    path, seconds = future.result()
                except PipelineError as exc:
                    error = error or exc
                    continue
                except Exception as exc:  # the worker process died
                    error = error or PipelineError(
                        f"notebook {item.stem!r} could not be executed: {type(exc).__name__}: {exc}"
                    )
                    continue
                done.add(item.stem)
                on_done(item, path, seconds)
    if error is not None:
        raise error
