"""Scheduling: which chapters wait for which, and running the plan several notebooks at a time.

A chapter starts once the chapters it reads (:data:`READS`) or loads routers from
(:data:`AFTER`) have finished; both come from the chapter registry
(:mod:`racer_lib.paper.registry`). ``jobs`` notebooks (default: the cores) execute at once, each
in a worker process whose kernel gets its share of the cores (:func:`kernel_environment`) and the
policy store ``build/policies`` (:mod:`racer_lib.routing.store`).

While a notebook runs, papermill saves it cell by cell as ``<stem>.partial.ipynb``; it becomes
``<stem>.ipynb`` on success, or ``<stem>.failed.ipynb`` (and any older ``<stem>.ipynb`` is
removed) on failure, so ``--only`` never builds the book from a broken or outdated execution.
A chapter's results folder is emptied before it runs, so it holds only what its last run wrote
(never through a symbolic link: a link in it is removed itself, and a results folder that is a
link is refused in one line); the folders of judge runs in it (``racer judge run`` output,
marked by its ``config.json``) are kept, since a re-run resumes them (hours of GPU judging)
after checking their configuration.

While a notebook runs, the tqdm bar it is drawing on stderr is kept in ``<stem>.progress``
beside it (:func:`last_progress`), for the runner's bar to show; papermill passes it on as it
streams the outputs, which go into the executed notebook unchanged. A kernel is shut
down without the interrupt jupyter_client sends first (:func:`_kernel_manager`) unless it is
still busy.

No worker outlives the runner: each watches its parent and, when the runner is gone (killed by
any signal), kills its kernel and exits; an exception in the runner (Ctrl-C included) kills the
workers and their kernels. A kernel also exits by itself when its parent goes (ipykernel).
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from racer_lib.book.parameters import parameters_source
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


def _refuse_link(folder: Path, stem: str) -> None:
    """Refuse chapter ``stem``'s results ``folder`` when it is a symbolic link (dangling or not):
    it is emptied before the chapter runs, and emptying it would delete the files of whatever it
    points to. One line (:class:`PipelineError`) naming the folder and its target."""
    if not folder.is_symlink():
        return
    try:
        target = os.readlink(folder)
    except OSError:
        target = "?"
    raise PipelineError(
        f"notebook {stem!r}: its results folder {folder} is a symbolic link (to {target}); the "
        "runner empties that folder before the chapter runs and never through a link: remove "
        "the link (racer book build --results-dir writes every chapter's results elsewhere)"
    )


def _empty(folder: Path, stem: str = "") -> None:
    """Remove everything under ``folder`` but the folders of judge runs (which hold the run's
    ``config.json``: a re-run resumes them). Nothing is deleted through a symbolic link: a link
    inside ``folder`` is removed itself (what it points to stays as it was), and ``folder``
    itself being a link is refused (:func:`_refuse_link`, naming chapter ``stem``)."""
    from racer_lib.judging.store import CONFIG_NAME

    _refuse_link(folder, stem or folder.name)
    for entry in list(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            if not (entry / CONFIG_NAME).is_file():
                _empty(entry)
                if not any(entry.iterdir()):
                    entry.rmdir()
        else:
            entry.unlink()


_PROGRESS_WIDTH = 70  # characters of a running notebook's own progress line shown by the runner
SHUTDOWN_GRACE = 3.0  # seconds a kernel has to stop on a shutdown request before it is interrupted
KERNEL_STARTS = 3  # tries to start a notebook's kernel (:func:`_with_kernel_starts`)
#: What nbclient raises when a kernel is gone before its first reply: no cell has run yet.
_NOT_STARTED = "Kernel died before replying to kernel_info"
# ANSI escape sequences and the control characters but tab, line feed and carriage return
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def progress_file(layout: Layout, stem: str) -> Path:
    """Where the progress bar notebook ``stem`` draws on stderr is kept while it runs."""
    return layout.executed / f"{stem}.progress"


def last_progress(layout: Layout, stem: str, width: int = _PROGRESS_WIDTH) -> str:
    """The progress bar a running notebook is drawing on stderr (:class:`_LastLine`), cut to
    ``width`` characters; "" when there is none (or its file cannot be read)."""
    try:
        line = progress_file(layout, stem).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    line = re.sub(r"\s", " ", line).strip()
    return line if len(line) <= width else line[: width - 1] + "…"


class _LastLine:
    """papermill's ``stderr_file`` for one notebook: at each write, ``path`` gets the line a tqdm
    bar is drawing on the notebook's stderr (what follows the last carriage return, as tqdm
    redraws, unless a line feed ended it: a closed bar), or "" when none is. ``path`` is removed
    on leaving the ``with`` block; no error of its own reaches the run."""

    def __init__(self, path: Path) -> None:
        self.path, self.tail, self.shown = path, "", None

    def __enter__(self) -> _LastLine:
        self.write("")  # no line of an earlier run
        return self

    def __exit__(self, *_) -> None:
        for path in (self.path, self.path.with_name(self.path.name + ".tmp")):
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass

    def write(self, text: str) -> int:
        self.tail = (self.tail + text)[-4096:]
        _, redrawn, line = _CONTROL.sub("", self.tail).rpartition("\r")
        line = line.strip() if redrawn and "\n" not in line else ""
        if line != self.shown:
            try:
                partial = self.path.with_name(self.path.name + ".tmp")
                partial.write_text(line, encoding="utf-8")
                partial.replace(self.path)
                self.shown = line
            except OSError:  # a progress line is not worth failing a run for
                pass
        return len(text)

    def flush(self) -> None:
        pass


@functools.cache
def _kernel_manager() -> type:
    """jupyter_client's kernel manager, but a shutdown first asks the kernel to stop and sends
    the interrupt (SIGINT) only when it is still running after :data:`SHUTDOWN_GRACE` seconds.

    jupyter_client interrupts before asking; an idle ipykernel that the interrupt reaches as it
    finishes its last reply (papermill's ``kernel_info``) logs ``[IPKernelApp] ERROR |
    KeyboardInterrupt caught in kernel.`` at the end of a clean run. A busy kernel (the runner
    stopped mid-cell) is still interrupted, then terminated as jupyter_client does."""
    from jupyter_client.manager import AsyncKernelManager

    class KernelManager(AsyncKernelManager):
        async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
            if now or restart or not self.owns_kernel or not self.has_kernel:
                return await super().shutdown_kernel(now=now, restart=restart)
            self.shutting_down = True
            self.stop_restarter()
            await self.request_shutdown()
            deadline = time.monotonic() + SHUTDOWN_GRACE
            while await self.is_alive():
                if time.monotonic() > deadline:  # busy: interrupt, ask again, then terminate
                    return await super().shutdown_kernel()
                await asyncio.sleep(0.05)
            await self.finish_shutdown()
            await self.cleanup_resources()

    return KernelManager


def _with_kernel_starts(run, stem: str, starts: int = KERNEL_STARTS) -> None:
    """``run()``, started again (up to ``starts`` times in all) when its kernel died before
    its first reply, saying so on stderr.

    jupyter_client picks a kernel's TCP ports free and then lets the kernel bind them, so a
    process starting another kernel at that moment (a second notebook of the build, or another
    build) can take one first: the kernel stops with ``ZMQError: Address already in use`` before
    any cell has run (seen once in a test run with two builds side by side). Nothing ran, so
    starting it again is safe; any other failure is raised as it is."""
    for start in range(1, starts + 1):
        try:
            run()
            return
        except RuntimeError as exc:
            if _NOT_STARTED not in str(exc) or start == starts:
                raise
            print(
                f"notebook {stem!r}: its kernel stopped before it started ({exc}); "
                f"starting another ({start + 1} of {starts})",
                file=sys.stderr,
                flush=True,
            )


@functools.cache
def _literal_parameters() -> None:
    """Have papermill write the injected parameters cell of a notebook run on
    :data:`KERNEL_NAME` with :func:`racer_lib.book.parameters.parameters_source`: each checked
    value as a Python literal (``repr``), and nothing that is not plain data. papermill's own
    translator writes a value it does not know (bytes, a set) as ``str()`` between quotes,
    which a value holding a quote turns into code. Once per process; papermill looks a
    kernel's name up before its language."""
    from papermill.translators import PythonTranslator, papermill_translators

    class _Literal(PythonTranslator):
        @classmethod
        def codify(cls, parameters, comment="Parameters"):
            return parameters_source(parameters, comment)

    papermill_translators.register(KERNEL_NAME, _Literal)


def _execute(prepared: Prepared, layout: Layout, verbose: bool) -> Path:
    """Run one notebook with papermill; return the executed notebook's path."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    _literal_parameters()

    stem = prepared.stem
    results = layout.results_dir(stem)
    _refuse_link(results, stem)  # a link (dangling too) is never emptied nor written through
    try:
        if results.is_dir():
            _empty(results, stem)  # only what this run writes: no stale figure of a dropped judge
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PipelineError(
            f"notebook {stem!r}: cannot empty its results folder {results}: {exc.strerror or exc}"
        ) from None
    partial = layout.executed_notebook(stem, "partial")
    done, failed = layout.executed_notebook(stem), layout.executed_notebook(stem, "failed")
    try:
        with _LastLine(progress_file(layout, stem)) as last_line:
            _with_kernel_starts(
                functools.partial(
                    papermill.execute_notebook,
                    prepared.ipynb,
                    partial,
                    parameters=prepared.parameters,
                    kernel_name=KERNEL_NAME,
                    language="python",
                    cwd=layout.root,
                    progress_bar=verbose,
                    # Quiet kernels unless verbose (ipykernel warns about plain TCP at each start).
                    extra_arguments=[] if verbose else ["--IPKernelApp.log_level=ERROR"],
                    stderr_file=last_line,
                    kernel_manager_class=_kernel_manager(),
                ),
                stem,
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


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def cpu_count() -> int:
    """The cores this process may use (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def kernel_environment(jobs: int) -> dict[str, str]:
    """What every notebook's kernel finds in its environment: its share of the cores (the
    threads of numpy's BLAS, and of torch where a chapter keeps torch's default). Nothing else:
    the router store reaches a notebook as a parameter (``policy_store``,
    :data:`racer_lib.book.profiles.STORE_PARAMETER`)."""
    threads = max(1, cpu_count() // max(1, jobs))
    return {name: str(threads) for name in THREAD_VARIABLES}


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


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid``, read from /proc (none where there is no /proc)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [entry for entry in Path("/proc").iterdir() if entry.name.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def _kill_tree(pid: int, itself: bool = True) -> None:
    """SIGKILL the processes below ``pid`` (a worker's kernel), then ``pid`` itself."""
    for other in [*_descendants(pid), *([pid] if itself else [])]:
        try:
            os.kill(other, signal.SIGKILL)
        except OSError:  # gone already
            pass


def _worker_start(runner: int) -> None:
    """A worker's initializer: it ignores Ctrl-C (the runner stops it), and when the runner
    ``runner`` is gone or sends SIGTERM it kills its kernel and exits at once."""
    import threading

    def end(*_) -> None:
        _kill_tree(os.getpid(), itself=False)
        os._exit(1)

    def watch() -> None:
        while os.getppid() == runner:
            time.sleep(0.2)
        end()

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, end)
    threading.Thread(target=watch, name="racer-watch-runner", daemon=True).start()


def _stop_workers(pool) -> None:
    """Kill the pool's worker processes and their kernels."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.pid is not None:
            _kill_tree(process.pid)
    pool.shutdown(wait=False, cancel_futures=True)


def execute_plan(
    plan: list[Prepared],
    after: dict[str, list[str]],
    layout: Layout,
    jobs: int,
    env: dict[str, str],
    on_done,
    verbose: bool = False,
    on_start=None,
) -> None:
    """Execute ``plan`` with at most ``jobs`` notebooks at a time, each once the chapters it
    must follow (``after``, stems of ``plan``) have succeeded; among the ready ones the first in
    ``plan`` starts first (:func:`longest_first` orders a plan so that a long chapter does not
    run alone at the end). ``on_start(prepared)`` is
    called, in this process, as each one is about to start, ``on_done(prepared, path,
    seconds)`` as each one succeeds. After a failure nothing new starts; the running ones
    finish, then the first error is raised. ``jobs == 1`` runs them in this process, one after
    the other. An exception here (Ctrl-C) kills the workers and their kernels; a worker dies
    with this process (:func:`_worker_start`)."""
    on_start = on_start or (lambda item: None)
    if jobs <= 1 or len(plan) <= 1:
        for item in plan:
            on_start(item)
            on_done(item, *_execute_with(item, layout, verbose, env))
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # no inherited threads or open kernels
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(plan)),
        mp_context=context,
        initializer=_worker_start,
        initargs=(os.getpid(),),
    ) as pool:
        try:
            _run_pool(pool, plan, after, layout, jobs, env, verbose, on_start, on_done)
        except BaseException:
            _stop_workers(pool)
            raise


def longest_first(plan: list[Prepared], expected: Mapping[str, float]) -> list[Prepared]:
    """``plan`` longest expected first (``expected``: seconds per stem,
    :func:`expected_seconds`; a stable sort: equal ones keep their order)."""
    return sorted(plan, key=lambda item: -expected.get(item.stem, 0.0))


def read_timings(layout: Layout) -> dict[str, float]:
    """This build's last execution time of each chapter (``<build>/<profile>/timings.json``);
    a missing or damaged file, or an entry that is not a number, counts as none."""
    import json

    path = layout.build / "timings.json"
    try:
        last = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        last = {}
    last = last if isinstance(last, dict) else {}
    return {k: v for k, v in last.items() if isinstance(v, int | float)}


def expected_seconds(layout: Layout, typical: Mapping[str, float]) -> dict[str, float]:
    """How long each chapter is expected to run: its time in this build's last run
    (:func:`read_timings`) where there is one, else ``typical``
    (:data:`racer_lib.paper.registry.TYPICAL_SECONDS`)."""
    return {**typical, **read_timings(layout)}


def _run_pool(
    pool, plan: list[Prepared], after, layout, jobs, env, verbose, on_start, on_done
) -> None:
    """The scheduling loop of :func:`execute_plan` over a process pool."""
    from concurrent.futures import FIRST_COMPLETED, wait

    pending, running, done = list(plan), {}, set()
    error: BaseException | None = None
    while pending or running:
        for item in list(pending) if error is None else []:
            if len(running) < jobs and all(other in done for other in after[item.stem]):
                on_start(item)
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
