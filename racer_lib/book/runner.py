"""The papermill runner: execute a profile's notebooks, then build the book.

It ties together :mod:`~racer_lib.book.profiles` (the profile and its checks),
:mod:`~racer_lib.book.cache` (what can be reused), :mod:`~racer_lib.book.scheduling` (the
parallel plan) and :mod:`~racer_lib.book.build` (the book). Repository layout it works on
(``root`` holds ``notebooks/`` and ``profiles/``)::

    notebooks/NN_name.md      jupytext MyST notebooks, one cell tagged ``parameters``
    profiles/NAME.yaml        description, optional ``extends``, ordered ``notebooks`` mapping
    book/                     Jupyter Book 1.x sources (_config.yml, _toc.yml template, pages)

Outputs, with their defaults (each overridable, see :func:`run_profile`)::

    results/<profile>/<stem>/                     what each notebook writes (``results_dir``)
    build/<profile>/executed/<stem>.ipynb         the executed notebooks
    build/<profile>/executed/<stem>.failed.ipynb  the executed part of a notebook that failed
    build/<profile>/executed/<stem>.progress      the tqdm bar a running notebook draws
    build/<profile>/cache/<stem>.json             the key of a chapter's last successful run
    build/<profile>/digests.json                  files' stamps, to hash unchanged ones once
    build/<profile>/build.lock                    held by the build of the profile under way
    build/<profile>/book/                         the staged book sources
    book/_build/html/index.html                   the built book (<book_out>/_build/html)

Notebooks run with the repository root as working directory, so relative paths such as
``data/...`` resolve against the repository.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from racer_lib.book.build import (
    check_book_inputs,
    damaged_executed,
    make_book,
    stage_missing_page,
)
from racer_lib.book.cache import (
    CacheEntry,
    Digests,
    cache_entry,
    cache_path,
    digests_for,
    library_hash,
    output_digests,
    read_key,
    rerun_reasons,
    stored_key,
    write_key,
)
from racer_lib.book.lock import build_lock
from racer_lib.book.profiles import (
    Folders,
    Layout,
    PipelineError,
    Prepared,
    Profile,
    check_set_declared,
    find_root,
    load_profile,
    prepare,
    resolve_only,
)
from racer_lib.book.requirements import missing_requirements, missing_sentence
from racer_lib.book.scheduling import (
    chapter_after,
    cpu_count,
    execute_plan,
    expected_seconds,
    kernel_environment,
    last_progress,
    longest_first,
    read_timings,
)
from racer_lib.paper import registry
from racer_lib.records.io import atomic_write

REFRESH_SECONDS = 1.0  # how often the bar's line on the running chapters is redrawn
#: ... where stderr is not a terminal (a log file, CI): each redraw there adds to the log
LOG_REFRESH_SECONDS = 30.0


def refresh_seconds(stream) -> float:
    """How often the bar is redrawn on ``stream``: :data:`REFRESH_SECONDS` on a terminal,
    :data:`LOG_REFRESH_SECONDS` on anything else; tqdm's own ``TQDM_MININTERVAL``, when set,
    overrides both."""
    import os

    if os.environ.get("TQDM_MININTERVAL"):
        return float(os.environ["TQDM_MININTERVAL"])
    tty = getattr(stream, "isatty", lambda: False)()
    return REFRESH_SECONDS if tty else LOG_REFRESH_SECONDS


@dataclass
class RunResult:
    """What :func:`run_profile` produced."""

    profile: str
    executed: list[Path] = field(default_factory=list)
    results_dirs: dict[str, Path] = field(default_factory=dict)
    html_index: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # execution time per notebook
    unavailable: dict[str, list[str]] = field(default_factory=dict)  # stem -> what is missing
    reused: list[str] = field(default_factory=list)  # unchanged since their last run: not run
    jobs: int = 1  # notebooks run at a time
    wall_seconds: float = 0.0  # from the first notebook's start to the last one's end

    def summary(self) -> str:
        """Human-readable list of where everything went."""
        lines = [f"profile {self.profile}", "executed notebooks:"]
        lines += [f"  {path}" for path in self.executed] or ["  (none)"]
        lines.append("results:")
        lines += [f"  {stem}: {path}" for stem, path in self.results_dirs.items()] or ["  (none)"]
        if self.unavailable:
            lines.append("not run (their pages say what is missing and how to get it):")
            lines += [f"  {stem}: {'; '.join(m)}" for stem, m in self.unavailable.items()]
        if self.reused:
            lines.append(f"reused (unchanged since their last run): {', '.join(self.reused)}")
        if self.seconds:
            lines.append(
                f"executed in {self.wall_seconds:.0f} s with {self.jobs} at a time "
                f"({sum(self.seconds.values()):.0f} s of notebook time): "
                + ", ".join(f"{k} {v:.0f} s" for k, v in self.seconds.items())
            )
        if self.html_index is not None:
            lines.append(f"book: {self.html_index}")
        return "\n".join(lines)


def _record_timings(layout: Layout, seconds: dict[str, float]) -> None:
    """Merge this run's execution times into ``<build>/<profile>/timings.json`` (nothing to
    merge when nothing ran; a warning if the file cannot be written)."""
    if not seconds:
        return
    path = layout.build / "timings.json"
    timings = read_timings(layout) | {stem: round(s, 3) for stem, s in seconds.items()}
    text = json.dumps(timings, indent=2) + "\n"
    try:
        atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    except OSError as exc:
        _say(f"warning: execution times not recorded in {path}: {exc.strerror or exc}")


def _refuse_linked(layout: Layout) -> None:
    """None of the folders the build writes into, empties or replaces under the named
    ``--build-dir`` and ``--results-dir`` is a symbolic link (refused in one line: nothing is
    written, emptied or deleted through it)."""
    for folder in (layout.results, layout.build, layout.executed, layout.policy_store):
        if folder.is_symlink():
            raise PipelineError(
                f"{folder} is a symbolic link (to {os.readlink(folder)}); the build writes, "
                "empties and deletes in that folder and never through a link: remove the link "
                "(--build-dir and --results-dir choose other folders)"
            )


def _check_folders(layout: Layout) -> None:
    """The results and build folders exist or can be made, before any key is touched."""
    for what, folder in (("results", layout.results), ("build", layout.executed)):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PipelineError(
                f"cannot write the {what} folder {folder}: {exc.strerror or exc}"
            ) from None


def run_profile(
    profile: str | Profile,
    only: Iterable[str] | None = None,
    build_book: bool = True,
    root: Path | str | None = None,
    folders: Folders | None = None,
    verbose: bool = False,
    force: bool = False,
    jobs: int | None = None,
) -> RunResult:
    """Execute the notebooks of ``profile`` in order, then (optionally) build the book.

    Args:
        profile: name of ``profiles/<profile>.yaml``, or that profile loaded (``--set``:
            :meth:`~racer_lib.book.profiles.Profile.with_set`).
        only: run only these notebooks (stems or unique prefixes); the book then uses the
            other notebooks' earlier executions from ``<build_dir>/<profile>/executed`` (one
            that is damaged is named and run again too).
        build_book: build the HTML book after running.
        root: repository root (default: found by walking up from the cwd).
        folders: where the run writes (:class:`~racer_lib.book.profiles.Folders`): executed
            notebooks go to ``<build_dir>/<profile>/executed``, the staged book to
            ``<build_dir>/<profile>/book``, results to ``<results_root>/<profile>/<stem>``, the
            HTML to ``<book_out>/_build/html`` (replaced on every build); by default under
            ``root`` (``build``, ``results``, ``book``).
        verbose: show papermill's per-cell progress and the Jupyter Book output.
        force: execute every notebook, even those whose last run can be reused.
        jobs: notebooks executed at a time (default: the cores this process may use), each
            kernel with its share of the cores' threads
            (:func:`~racer_lib.book.scheduling.kernel_environment`); a chapter starts once the
            chapters it reads or follows (:func:`~racer_lib.book.scheduling.chapter_after`)
            are done. The results do not depend on it: chapters pin torch's threads in their
            parameters, and the routers they share are trained by the same chapter in any order.

    Execution cache (:mod:`~racer_lib.book.cache`): a notebook runs again only when its key
    changed (its source, parameters as injected, ``racer_lib``'s code, the contents of the
    files its parameters name, what its requirements resolve to, the keys of the chapters it
    reads) or a file it wrote is missing or changed; otherwise its executed notebook and results
    are reused. A key is written only after a successful execution and removed as the chapter
    starts (or gets its missing-data page), so a failed, killed or unavailable chapter is never
    reused, and one that does not start keeps it. One build of a profile at a time
    (:mod:`~racer_lib.book.lock`).
    """
    root_path = Path(root).resolve() if root is not None else find_root()
    resolved = profile if isinstance(profile, Profile) else load_profile(profile, root_path)
    profile = resolved.name
    layout = (folders or Folders()).layout(root_path, profile)
    to_run = _chapters_to_run(resolved, only, build_book, layout)
    result = RunResult(profile=profile)
    with tempfile.TemporaryDirectory(prefix="racer-") as tmp:
        prepared = _checked(resolved, to_run, layout, Path(tmp), build_book)
        unmet = missing_requirements(resolved, to_run, root_path)
        if unmet and resolved.on_missing == "error":
            raise PipelineError(
                f"profile {profile!r} cannot run:\n"
                + "\n".join(
                    f"  {stem}: {missing_sentence(profile, stem, m)}" for stem, m in unmet.items()
                )
            )
        _check_folders(layout)
        with build_lock(layout.build, profile, _say):
            _say(f"profile {profile}: {resolved.description or '(no description)'}")
            digests = digests_for(layout)
            _verify_store(layout)
            try:
                plan = _plan(prepared, resolved, layout, unmet, force, result, digests)
                jobs = max(1, int(jobs or cpu_count()))
                _execute_plan(plan, resolved, layout, jobs, verbose, result, digests)
            finally:
                try:
                    digests.save()
                except OSError:  # a read-only build: files are hashed again next time
                    pass
            result.executed = [plan.paths[stem] for stem in to_run]
            _record_timings(layout, result.seconds)
            if build_book:
                result.html_index = make_book(resolved, layout, verbose)
    return result


def _chapters_to_run(
    profile: Profile, only: Iterable[str] | None, build_book: bool, layout: Layout
) -> list[str]:
    """The stems ``--only`` names (all without it), in run order; with the book built, any
    other chapter whose earlier executed notebook is damaged too (said on stderr)."""
    to_run = resolve_only(only, profile) if only else list(profile.notebooks)
    if build_book and only:  # a damaged execution of another chapter: run that one too
        damaged = damaged_executed(profile, to_run, layout)
        for stem, problem in damaged.items():
            _say(f"running {stem} too: {problem}")
        to_run = [stem for stem in profile.notebooks if stem in to_run or stem in damaged]
    return to_run


def _checked(
    profile: Profile, to_run: list[str], layout: Layout, tmp: Path, build_book: bool
) -> list[Prepared]:
    """The notebooks ``to_run`` prepared in ``tmp`` with every check made before a run: their
    parameters (:func:`~racer_lib.book.profiles.prepare`), the names of ``set``, the book's
    inputs and no folder of the build a symbolic link. Nothing is written outside ``tmp``."""
    _refuse_linked(layout)
    prepared = [prepare(stem, profile, layout, tmp) for stem in to_run]
    check_set_declared(profile, prepared, layout, tmp)
    if build_book:
        check_book_inputs(profile, to_run, layout)
    return prepared


def dry_run(
    profile: str | Profile,
    only: Iterable[str] | None = None,
    build_book: bool = True,
    root: Path | str | None = None,
    folders: Folders | None = None,
) -> list[str]:
    """What :func:`run_profile` checks before it runs anything (the profile, ``--set``, every
    parameter, the book's inputs, the folders), without fetching data, executing a notebook
    or writing a file (but in a temporary folder); the stems it would run, in order. A
    :class:`~racer_lib.book.profiles.PipelineError` (one line) for what it would refuse."""
    root_path = Path(root).resolve() if root is not None else find_root()
    resolved = profile if isinstance(profile, Profile) else load_profile(profile, root_path)
    layout = (folders or Folders()).layout(root_path, resolved.name)
    to_run = _chapters_to_run(resolved, only, build_book, layout)
    with tempfile.TemporaryDirectory(prefix="racer-") as tmp:
        _checked(resolved, to_run, layout, Path(tmp), build_book)
    return to_run


def _say(line: str) -> None:
    """A line on stderr that does not break the progress bar."""
    from tqdm import tqdm

    tqdm.write(line, file=sys.stderr)


@dataclass
class _Plan:
    """What a run executes (in run order), the cache entries to store after each succeeds, and
    the executed notebook of every chapter (reused, stood in for, or run)."""

    items: list[Prepared] = field(default_factory=list)
    entries: dict[str, CacheEntry] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)


def _plan(
    prepared: list[Prepared],
    profile: Profile,
    layout: Layout,
    unmet: dict[str, list],
    force: bool,
    result: RunResult,
    digests: Digests,
) -> _Plan:
    """Decide, chapter by chapter in run order, what to run: a chapter whose requirements are
    not met gets its stand-in page, an unchanged one is reused, the others are planned (each
    with its cache entry and the reasons it runs again, which are printed)."""
    plan = _Plan()
    library = library_hash()
    keys = {  # chapters not run now keep the key of their last successful run
        stem: (stored_key(layout, stem) or {}).get("key")
        for stem in profile.notebooks
        if stem not in {item.stem for item in prepared}
    }
    reran: set[str] = set()
    for item in prepared:
        if item.stem in unmet:
            _build_write(cache_path(layout, item.stem).unlink, missing_ok=True)
            plan.paths[item.stem] = stage_missing_page(item, profile.name, unmet[item.stem], layout)
            result.unavailable[item.stem] = [what for _, what in unmet[item.stem]]
            keys[item.stem] = None  # no valid run: its readers see it as changed once
            continue
        entry = cache_entry(item, profile, layout, library, keys, digests)
        keys[item.stem] = entry.key
        stored = read_key(layout, item.stem)
        reasons = (
            ["--force"]
            if force
            else rerun_reasons(entry, stored, layout, item.stem, reran, digests)
        )
        result.results_dirs[item.stem] = layout.results_dir(item.stem)
        if not reasons:
            _say(f"reused {item.stem}: unchanged")
            plan.paths[item.stem] = layout.executed_notebook(item.stem)
            result.reused.append(item.stem)
            continue
        _say(f"re-running {item.stem}: {', '.join(reasons)}")
        reran.add(item.stem)  # its key is removed as it starts: one that never starts keeps it
        plan.entries[item.stem] = entry
        plan.items.append(item)
    return plan


def _execute_plan(
    plan: _Plan,
    profile: Profile,
    layout: Layout,
    jobs: int,
    verbose: bool,
    result: RunResult,
    digests: Digests,
) -> None:
    """Execute the planned chapters ``jobs`` at a time, each after the planned chapters it
    follows; remove each one's cache key as it starts, store it with the digests of the files
    it wrote as it succeeds."""
    from tqdm import tqdm

    from racer_lib.routing.store import damage_since

    store = layout.policy_store
    env = kernel_environment(jobs)
    offset = damage_since(store)[1]
    after = {
        item.stem: [o for o in chapter_after(item.stem, profile) if o in plan.entries]
        for item in plan.items
    }
    start = time.perf_counter()
    every = refresh_seconds(sys.stderr)
    with (
        tqdm(
            total=len(plan.items),
            desc=profile.name,
            unit="notebook",
            file=sys.stderr,
            mininterval=every,
        ) as bar,
        _Running(bar, layout, every) as running,
    ):

        def on_start(item: Prepared) -> None:
            _build_write(cache_path(layout, item.stem).unlink, missing_ok=True)
            running.start(item.stem)

        def on_done(item: Prepared, path: Path, seconds: float) -> None:
            nonlocal offset
            lines, offset = damage_since(store, offset)  # what the notebooks found damaged
            for line in lines:
                _say(f"{item.stem}: {line}")
            plan.paths[item.stem] = path
            result.seconds[item.stem] = seconds
            entry = plan.entries[item.stem]
            entry.outputs = output_digests(layout.results_dir(item.stem), digests)
            entry.executed = digests(path)
            _build_write(write_key, layout, item.stem, entry)
            running.done(item.stem, seconds)
            bar.update()

        first = plan.items  # one at a time: in run order, each after what it reads
        if jobs > 1:  # the pool waits for what a chapter follows: the longest ready starts first
            first = longest_first(first, expected_seconds(layout, registry.TYPICAL_SECONDS))
        execute_plan(first, after, layout, jobs, env, on_done, verbose, on_start)
    result.wall_seconds = time.perf_counter() - start
    result.jobs = jobs


def _duration(seconds: float) -> str:
    """``seconds`` as ``7 s``, ``12 min 03 s`` or ``2 h 05 min``."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"


class _Running:
    """The chapters under way, on the bar: ``running <stem> <time> (<the tqdm bar it draws>)``
    for each, redrawn every ``every`` seconds (:func:`refresh_seconds`) by a thread while the
    ``with`` block lasts; the last one finished and its time when none runs."""

    def __init__(self, bar, layout: Layout, every: float = REFRESH_SECONDS) -> None:
        self.bar, self.layout, self.every = bar, layout, every
        self.started: dict[str, float] = {}
        self.finished = ""
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._redraw, name="racer-progress", daemon=True)

    def __enter__(self) -> _Running:
        self.thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.stop.set()
        self.thread.join()

    def start(self, stem: str) -> None:
        with self.lock:
            self.started[stem] = time.monotonic()
        self.show()

    def done(self, stem: str, seconds: float) -> None:
        with self.lock:
            self.started.pop(stem, None)
            self.finished = f"{stem} {_duration(round(seconds))}"
        self.show()

    def show(self) -> None:
        """Set the bar's postfix to the running chapters (and redraw it)."""
        with self.lock:  # one drawing at a time: none shows a chapter another saw finish
            now, parts = time.monotonic(), []
            for stem, since in self.started.items():
                line = last_progress(self.layout, stem)
                parts.append(f"{stem} {_duration(now - since)}" + (f" ({line})" if line else ""))
            self.bar.set_postfix_str("running " + "; ".join(parts) if parts else self.finished)

    def _redraw(self) -> None:
        while not self.stop.wait(self.every):
            try:
                if self.started:
                    self.show()
            except (OSError, ValueError):  # stderr closed: the run goes on without the bar
                return


def _verify_store(layout: Layout) -> None:
    """Check the router store's entries against their digests; a damaged one is named on
    stderr, removed, and trained again by the chapter that needs it
    (:meth:`racer_lib.routing.store.PolicyStore.verify`)."""
    from racer_lib.routing.store import PolicyStore

    PolicyStore(layout.policy_store).verify()


def _build_write(write, *args, **kwargs) -> None:
    """``write(*args, **kwargs)``, a write into the build folder; a one-line error if it fails."""
    try:
        write(*args, **kwargs)
    except OSError as exc:
        name = exc.filename or "the build folder"
        raise PipelineError(f"cannot write {name}: {exc.strerror or exc}") from None
