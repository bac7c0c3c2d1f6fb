"""The book: staging its sources (the executed notebooks as the reader sees them, the table of
contents filtered to the profile's chapters, the introduction's and the citation page's includes)
and building the HTML with Jupyter Book 1.x (warnings are errors).

Outputs: ``build/<profile>/book/`` (the staged sources), ``build/<profile>/book-build.log`` and
``<book_out>/_build/html/index.html``. A chapter whose requirements are not met gets a generated
page saying what is missing (:func:`stage_missing_page`), and the introduction says which
chapters of this build ran on real data, on simulated records, on your records, or not at all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from racer_lib.book import cite
from racer_lib.book import staging as staging_mod
from racer_lib.book.profiles import Layout, PipelineError, Prepared, Profile
from racer_lib.book.requirements import missing_sentence
from racer_lib.paper import registry
from racer_lib.records.sources import YAML_BUILD_ERRORS

_INTRO_INCLUDE = "_chapters.md"  # written into the staged book; book/intro.md includes it
_CITATION_INCLUDE = "_citation.md"  # BibTeX from CITATION.cff; book/cite.md includes it
_CITE_BOX = "_cite_box.html"  # the "cite this page" box; book/_ext/racer_book.py ends pages with it
#: The files the staging writes beside its copy of book/ (a rebuild removes them as its own).
_WRITTEN = (_INTRO_INCLUDE, _CITATION_INCLUDE, _CITE_BOX)
_TOC_NOTEBOOK_PREFIX = "notebooks/"
_IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|Error:")  # lines of a build log to show
# Sphinx copies every rendered image (notebook outputs and Markdown figures) to _images/.
_IMG_TAG = re.compile(r"<img\b[^>]*\bsrc=\"[^\"]*_images/", re.IGNORECASE)
#: A figure shown by racer_lib.book.chapter.save_figure (its PNG inline in a <figure>).
_FIGURE_TAG = re.compile(r'<figure class="racer-figure"')
# jupyter_book has no __main__; this is what its `jupyter-book` console script runs.
_JUPYTER_BOOK = "from jupyter_book.cli.main import main; main()"


def toc_files(entries: Any) -> Iterator[str]:
    """Every ``file:`` named anywhere in a parsed _toc.yml."""
    if isinstance(entries, dict):
        if isinstance(entries.get("file"), str):
            yield entries["file"]
        for value in entries.values():
            yield from toc_files(value)
    elif isinstance(entries, list):
        for item in entries:
            yield from toc_files(item)


def toc_stem(file: str) -> str | None:
    """The notebook stem of a toc ``file:`` entry, or None for other pages."""
    if not file.startswith(_TOC_NOTEBOOK_PREFIX):
        return None
    name = file[len(_TOC_NOTEBOOK_PREFIX) :]
    return name.removesuffix(".ipynb").removesuffix(".md")


def _read_toc(layout: Layout) -> dict[str, Any]:
    path = layout.book_src / "_toc.yml"
    if not path.is_file():
        raise PipelineError(f"no table of contents at {path}")
    try:
        toc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, *YAML_BUILD_ERRORS) as exc:  # UnicodeDecodeError too
        problem = " ".join(str(exc).split()) or type(exc).__name__
        raise PipelineError(f"{path}: cannot be read as YAML ({problem})") from None
    if not isinstance(toc, dict):
        raise PipelineError(f"{path} must hold a mapping")
    return toc


def check_book_inputs(profile: Profile, to_run: list[str], layout: Layout) -> None:
    """Before running: the toc lists every notebook, the registry's chapters in the registry's
    order (:data:`racer_lib.paper.registry.STEMS`), and skipped ones were executed before."""
    listed = [toc_stem(file) for file in toc_files(_read_toc(layout))]
    absent = [stem for stem in profile.notebooks if stem not in listed]
    if absent:
        raise PipelineError(
            f"book/_toc.yml has no entry 'file: {_TOC_NOTEBOOK_PREFIX}<stem>' for notebook(s) "
            f"{', '.join(absent)} of profile {profile.name!r}"
        )
    chapters = [stem for stem in listed if stem in registry.BY_STEM]
    if chapters != [stem for stem in registry.STEMS if stem in chapters]:
        raise PipelineError(
            f"book/_toc.yml lists the chapters in another order than the chapter registry "
            f"(racer_lib/paper/registry.py): {', '.join(chapters)}"
        )
    for stem in profile.notebooks:
        if stem not in to_run and not layout.executed_notebook(stem).is_file():
            raise PipelineError(
                f"notebook {stem} has not been executed for profile {profile.name}; "
                "run without --only"
            )


def executed_problem(path: Path) -> str | None:
    """How the executed notebook at ``path`` cannot be read as a notebook (its bytes cut or
    changed by hand: not JSON, not a notebook, unreadable); None if it can (or is absent)."""
    import nbformat

    if not path.is_file():
        return None
    try:
        nbformat.read(path, as_version=4)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    except Exception as exc:  # nbformat's NotJSONError, a validation or a reader error
        return f"not a notebook ({' '.join(str(exc).split())[:80] or type(exc).__name__})"
    return None


def damaged_executed(profile: Profile, to_run: list[str], layout: Layout) -> dict[str, str]:
    """The chapters of ``profile`` not in ``to_run`` (``--only``) whose earlier executed
    notebook, which the book would be built from, is damaged (:func:`executed_problem`):
    stem -> what is wrong, naming the file."""
    damaged = {}
    for stem in profile.notebooks:
        path = layout.executed_notebook(stem)
        problem = None if stem in to_run else executed_problem(path)
        if problem is not None:
            damaged[stem] = f"its executed notebook {path} {problem}"
    return damaged


def stage_missing_page(prepared: Prepared, profile: str, unmet: list, layout: Layout) -> Path:
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


def _filter_toc(entries: Any, keep: set[str]) -> Any:
    """Drop toc entries of notebooks not in ``keep``, and containers left empty."""
    if isinstance(entries, list):
        kept = [_filter_toc(item, keep) for item in entries]
        return [item for item in kept if item is not None]
    if not isinstance(entries, dict):
        return entries
    file = entries.get("file")
    stem = toc_stem(file) if isinstance(file, str) else None
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


def _staged_by_us(relative: Path, layout: Layout) -> bool:
    """Whether a file ``relative`` to the staged book is one :func:`_stage_book` writes: a copy
    of a file of ``book/``, a chapter's executed notebook, an include, or Python's bytecode."""
    parts = relative.parts
    if parts[0] == "notebooks" and len(parts) == 2 and relative.suffix == ".ipynb":
        return layout.notebook(relative.stem).is_file()
    return (
        relative.as_posix() in _WRITTEN
        or "__pycache__" in parts
        or (layout.book_src / relative).is_file()
    )


def _clear_staging(layout: Layout) -> None:
    """Remove the staged book of an earlier build, never through a symbolic link and never a
    file the staging did not write (under a ``--build-dir`` named by mistake): either is
    refused in one line (:class:`PipelineError`) and left as it is."""
    staging = layout.staging
    if staging.is_symlink():
        raise PipelineError(
            f"the staged book folder {staging} is a symbolic link (to {os.readlink(staging)}); "
            "the build replaces that folder and never through a link: remove the link"
        )
    if not staging.exists():
        return
    for path in sorted(staging.rglob("*")):
        relative = path.relative_to(staging)
        if (path.is_symlink() or path.is_file()) and not _staged_by_us(relative, layout):
            raise PipelineError(
                f"the staged book folder {staging} holds {relative.as_posix()}, which the build "
                "did not write: never deleted; move it away or choose another --build-dir"
            )
    shutil.rmtree(staging)


def _stage_book(profile: Profile, layout: Layout) -> Path:
    """Copy book/ to build/<profile>/book with the executed notebooks and a filtered toc."""
    staging = layout.staging
    _clear_staging(layout)
    shutil.copytree(
        layout.book_src, staging, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints")
    )
    (staging / "notebooks").mkdir(exist_ok=True)
    # results and build folders elsewhere (--results-dir, --build-dir) read as the defaults
    folders = {
        layout.results: f"results/{profile.name}",
        layout.build: f"build/{profile.name}",
        layout.policy_store: "build/policies",
    }
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
    (staging / _INTRO_INCLUDE).write_text(statement, encoding="utf-8")
    cff = layout.root / "CITATION.cff"
    citation = (
        cite.citation_page(cff, cite.build_commit(layout.root))
        if cff.is_file()
        else "This checkout has no `CITATION.cff`, so there is nothing to cite from yet.\n"
    )
    (staging / _CITATION_INCLUDE).write_text(citation, encoding="utf-8")
    box = cite.cite_box(cff, cite.build_commit(layout.root), profile.name) if cff.is_file() else ""
    (staging / _CITE_BOX).write_text(box, encoding="utf-8")
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
        any(mime in output.get("data", {}) for mime in _IMAGE_MIMES)
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


#: What Jupyter Book writes under ``<book_out>/_build``: the pages, Sphinx's doctrees and the
#: executed notebooks it copies. Anything else there is somebody's, and never deleted.
_BOOK_OUTPUT = frozenset({"html", ".doctrees", "jupyter_execute"})


def _book_output(layout: Layout) -> Path:
    """The book's output folder ``<book_out>/_build``, checked before anything is written: the
    build replaces it, so a symbolic link there, a file, or an entry Jupyter Book does not
    write (a ``--book-out`` named by mistake) is refused in one line (:class:`PipelineError`)
    and left as it is."""
    build = layout.book_out / "_build"
    if build.is_symlink():
        raise PipelineError(
            f"the book's output folder {build} is a symbolic link (to {os.readlink(build)}); the "
            "build replaces that folder and never through a link: remove the link"
        )
    if build.exists() and not build.is_dir():
        raise PipelineError(f"the book's output folder {build} is a file: move it away")
    for entry in sorted(build.iterdir()) if build.exists() else ():
        if entry.name not in _BOOK_OUTPUT or entry.is_symlink() or not entry.is_dir():
            raise PipelineError(
                f"the book's output folder {build} holds {entry.name}, which the build did not "
                "write: never deleted; move it away or choose another --book-out"
            )
    return build


def make_book(profile: Profile, layout: Layout, verbose: bool = False) -> Path:
    """Stage and build the book (no execution, warnings are errors); return index.html."""
    build = _book_output(layout)
    staging = _stage_book(profile, layout)
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
