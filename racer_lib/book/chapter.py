"""What every chapter does around its results: set-up, provenance, and writing files.

A notebook starts with ``out = chapter.setup(results_dir, torch_threads)`` and writes each
table with :func:`save_table` and each figure with :func:`save_figure`. Both put the records'
provenance on what they write (a ``provenance`` column first; the figure's stamp) and print
where the file went, so a reader of the executed notebook sees every output path. A sentence
that states a result of the run is generated from the CSVs the run wrote (:class:`Prose`).
Each figure and table shown is recorded with its anchor on the page in the chapter's
``anchors.json`` (:data:`racer_lib.paper.evidence.ANCHORS_JSON`), where the reproduction
report finds each claim's evidence.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from racer_lib.book import page
from racer_lib.claims.families import PER_SEED
from racer_lib.errors import RacerError
from racer_lib.paper import plots
from racer_lib.paper.evidence import ANCHORS_JSON
from racer_lib.records.io import atomic_write
from racer_lib.records.schema import combined_provenance  # noqa: F401  (chapters call chapter.combined_provenance)


def setup(results_dir: str | os.PathLike, torch_threads: int = 0) -> Path:
    """Pin torch to ``torch_threads`` (0 keeps its default), set the book's figure style, and
    create and return the chapter's output folder ``results_dir``. tqdm's "IProgress not found"
    warning (a kernel without ipywidgets, whose bars are text) is kept off the page."""
    warnings.filterwarnings("ignore", message="IProgress not found")
    if torch_threads:  # small batched policies run fastest on one thread (see Re-running)
        import torch

        torch.set_num_threads(torch_threads)
    plots.set_style()
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    _NUMBERS.update(chapter=_chapter_number(out), figure=0, table=0, out=out)
    _SHOWN.clear()
    (out / ANCHORS_JSON).unlink(missing_ok=True)  # a re-executed chapter starts afresh
    return out


#: The chapter being run, its output folder and how many figures and tables it has shown
#: (captions' numbers).
_NUMBERS: dict[str, Any] = {"chapter": "", "figure": 0, "table": 0, "out": None}
#: What the chapter has shown so far: one entry per figure and table (see :func:`_record`).
_SHOWN: list[dict[str, str]] = []
#: Rows of a table shown in full; a longer one is collapsed under a "show all" toggle.
_MAX_ROWS = 15


def _chapter_number(results_dir: str | os.PathLike) -> str:
    """The chapter's number from its folder name (``07_budget_frontier`` -> ``"5"``)."""
    head = Path(results_dir).name.split("_", 1)[0]
    return str(int(head)) if head.isdigit() else ""


def _next_number(kind: str) -> str:
    _NUMBERS[kind] += 1
    return f"{_NUMBERS['chapter']}.{_NUMBERS[kind]}" if _NUMBERS["chapter"] else str(_NUMBERS[kind])


def _record(kind: str, number: str, **about: str) -> None:
    """Record a figure or table on the page with its anchor
    (:func:`racer_lib.book.page.anchor`) and ``about`` it (``file``: the PNG or CSV it shows,
    ``paper``: the paper's artifact it regenerates, ``caption``) in the chapter's
    :data:`ANCHORS_JSON`, so that the report can link a claim to its evidence."""
    anchor = page.anchor(kind, number)
    if _NUMBERS["out"] is None or any(s["anchor"] == anchor for s in _SHOWN):
        return
    _SHOWN.append({"kind": kind, "number": number, "anchor": anchor})
    _SHOWN[-1].update({k: str(v) for k, v in about.items() if v})
    text = json.dumps(_SHOWN, indent=1, ensure_ascii=False) + "\n"
    atomic_write(
        Path(_NUMBERS["out"]) / ANCHORS_JSON, lambda tmp: Path(tmp).write_text(text, "utf-8")
    )


def _displayed(html: str, kind: str, number: str, **about: str) -> Any:
    """``html`` as an IPython ``HTML`` object that records its anchor (:func:`_record`) when,
    and only when, it is displayed: a table numbered but never shown gets no anchor."""
    from IPython.display import HTML

    class Shown(HTML):
        def record(self) -> None:
            _record(kind, number, **about)

        def _repr_html_(self):
            self.record()
            return super()._repr_html_()

    return Shown(html)


def _shown_path(path: str | os.PathLike) -> str:
    """``path`` as a reader should see it: relative to the working folder (the repository when
    the runner executes a chapter), the data mirror as ``$RACER_DATA_DIR``, the home folder as
    ``~`` (:func:`racer_lib.book.staging.relative_paths`); never the machine's absolute path where a
    relative one exists."""
    from racer_lib.book.staging import relative_paths

    return relative_paths(Path(path).as_posix(), Path.cwd())


def save_table(
    rows: Any, path: str | os.PathLike, provenance: str | None = None, **columns: Any
) -> pd.DataFrame:
    """Write ``rows`` (a DataFrame or anything it is built from) as a CSV without index.

    ``provenance`` and then ``columns`` (name = value) are inserted as the first columns, in
    that order. Prints the path; returns the frame as written.
    """
    frame = pd.DataFrame(rows).copy()
    front = ({"provenance": provenance} if provenance is not None else {}) | columns
    for i, (name, value) in enumerate(front.items()):
        frame.insert(i, name, value)
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))
    print(f"wrote {_shown_path(path)}")
    return frame


def save_figure(
    fig: plt.Figure,
    path: str | os.PathLike,
    provenance: str,
    show: bool = True,
    *,
    caption: str = "",
    alt: str = "",
    paper: str = "",
) -> Path | None:
    """Stamp ``fig`` with the records' provenance (:func:`racer_lib.paper.plots.stamp`), save it as
    PNG, print the path and, with ``show``, display it as a numbered figure.

    Returns the saved path when the figure is not shown; a shown figure returns nothing, so
    that a cell ending with it echoes no ``PosixPath(...)`` under the figure.

    The figure is shown as ``Figure <chapter>.<k>`` with ``caption``, the paper's figure it
    regenerates (``paper``, e.g. ``"Fig. 4"``) and a line saying where its records come from;
    ``alt`` describes it for a reader who cannot see it (both are required to show it).
    """
    if not show:
        plots.stamp(fig, provenance)
        saved = plots.save(fig, path)
        print(f"wrote {_shown_path(saved)}")
        plt.close(fig)
        return saved
    from IPython.display import HTML, display

    html = figure(fig, path, provenance, caption=caption, alt=alt, paper=paper)
    display(HTML(html), metadata={"racer": {"figure": Path(path).name}})
    return None


def figure(
    fig: plt.Figure,
    path: str | os.PathLike,
    provenance: str,
    *,
    caption: str,
    alt: str,
    paper: str = "",
) -> str:
    """What :func:`save_figure` shows, as HTML to place elsewhere on the page (a panel glued
    above the code): ``fig`` stamped, saved as PNG (path printed), numbered, captioned and
    recorded among the chapter's anchors (:func:`_record`); closes ``fig``."""
    if not caption.strip() or not alt.strip():
        raise ValueError(f"{path}: a shown figure needs a caption and an alt text")
    plots.stamp(fig, provenance)
    saved = plots.save(fig, path)
    print(f"wrote {_shown_path(saved)}")
    number = _next_number("figure")
    _record("figure", number, file=saved.name, paper=paper, caption=caption)
    html = page.figure_html(fig, saved, number, caption, alt, provenance, paper=paper)
    plt.close(fig)
    return html


def render(
    table: pd.DataFrame,
    caption: str,
    provenance: str | None = None,
    *,
    digits: int | dict[str, int] = 2,
    index: bool | None = None,
    max_rows: int = _MAX_ROWS,
    csv: str | os.PathLike | None = None,
    verbatim: bool = False,
) -> Any:
    """``table`` as :func:`show` displays it (without a finding's per-seed family,
    :data:`racer_lib.claims.families.PER_SEED`), numbered and captioned, but not displayed: an
    ``IPython.display.HTML`` for a cell that changes the HTML before displaying it (the report
    links its claims tables). It takes the next table number: display what it returns."""
    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(table)
    # a finding's per-seed family is data for the redraws, never a cell of the page
    frame = frame.drop(columns=PER_SEED, errors="ignore")
    if "provenance" in frame.columns and frame["provenance"].nunique(dropna=False) == 1:
        provenance = provenance or str(frame["provenance"].iloc[0])
        frame = frame.drop(columns="provenance")
    number = _next_number("table")
    return _displayed(
        page.table_html(
            frame,
            number,
            caption,
            provenance,
            page.TableLayout(digits, index, max_rows, csv, verbatim),
        ),
        "table",
        number,
        file=Path(csv).name if csv else "",
        caption=caption,
    )


def show(
    table: pd.DataFrame,
    caption: str,
    provenance: str | None = None,
    *,
    digits: int | dict[str, int] = 2,
    index: bool | None = None,
    max_rows: int = _MAX_ROWS,
    csv: str | os.PathLike | None = None,
    verbatim: bool = False,
) -> None:
    """Display ``table`` as a numbered, captioned table that fits the page.

    Numbers get ``digits`` decimals (a dict gives them per column; integers stay integers);
    text cells wrap instead of being cut; a ``provenance`` column holding one value becomes
    the caption's provenance line (``provenance`` gives it directly). A table longer than
    ``max_rows`` rows shows its first rows with the rest under a "show all" toggle; ``csv``
    (the file the table was saved to) is offered for download beside the caption;
    ``verbatim`` marks cells quoted as written (judges' answers, which may hold TeX).

    The table is displayed here and nothing is returned, so that every table a cell shows
    appears (a returned object would render only as a cell's last line) and none twice.
    """
    from IPython.display import HTML, display

    layout = {"digits": digits, "index": index, "max_rows": max_rows, "csv": csv}
    shown = render(table, caption, provenance, **layout, verbatim=verbatim)
    shown.record()  # here, not in the display hook, which would swallow a failed write
    display(HTML(shown.data))


def show_html(
    table: str, caption: str, provenance: str | None = None, verbatim: bool = False
) -> None:
    """Display a table already rendered as HTML (``<table>...</table>``, e.g. one with coloured
    marks) as :func:`show` displays a DataFrame: numbered, captioned, with its provenance."""
    from IPython.display import HTML, display

    number = _next_number("table")
    html = page.wrap_table(table, number, caption, provenance, verbatim)
    shown = _displayed(html, "table", number, caption=caption)
    shown.record()  # here, not in the display hook, which would swallow a failed write
    display(HTML(shown.data))


class Prose:
    """The numbers a chapter's result sentences state, read from the CSVs the run wrote.

    A result sentence is Markdown in the notebook, with each number of the run glued in
    (MyST-NB's ``glue``): a code cell reads the number from a result CSV and glues it under a
    name, ``prose.glue("gap", prose.value("area.csv", "gap", agg="mean", judge="qwen3-4b"))``,
    and the Markdown cell after it says ``the mean gap is {glue:text}`gap:.1f` points``.
    :meth:`value` reads a number back from the CSV (never from a number typed into the
    notebook), :meth:`text` a word of a text column (a status, a method's name), and
    :meth:`glue` glues it and records it, with where it came from, in ``out/prose.csv``
    (columns ``name``, ``value``, ``csv``, ``column``, ``where``, ``agg``). A re-run with
    other parameters or records rewrites every number; :func:`check_prose` reads each recorded
    value back from its CSV and checks that every ``{glue:text}`` of the executed notebook's
    Markdown names a recorded value (``tests/test_prose.py``).

    A sentence about the paper quotes the paper's number (:mod:`racer_lib.paper.numbers`) as
    the paper's; it is not a result of the run and is not glued through this class.
    """

    AGGREGATES = ("one", "mean", "min", "max", "sum", "count")

    def __init__(self, out: str | os.PathLike, file: str = "prose.csv"):
        self.out = Path(out)
        self.path = self.out / file
        self.rows: list[dict[str, Any]] = []
        if self.path.exists():  # a re-executed chapter starts afresh
            self.path.unlink()

    def _path(self, csv: str | os.PathLike) -> Path:
        return Path(csv) if Path(csv).is_absolute() or Path(csv).exists() else self.out / csv

    def value(self, csv: str | os.PathLike, column: str, agg: str = "one", **where: Any) -> Value:
        """The number in ``column`` of the CSV ``csv`` (a name inside ``out`` or a path) on the
        rows where each ``where`` column equals its value. ``agg="one"`` demands exactly one
        such row; ``mean``, ``min``, ``max``, ``sum`` and ``count`` reduce them."""
        path = self._path(csv)
        return Value(*_read_value(path, column, agg, where), path, column, agg, where)

    def text(self, csv: str | os.PathLike, column: str, **where: Any) -> Value:
        """The text in ``column`` of the one row of ``csv`` where each ``where`` column equals
        its value (a status such as ``reproduced``, a method's name)."""
        path = self._path(csv)
        return Value(_read_text(path, column, where), 1, path, column, "text", where)

    def glue(self, name: str, value: Value) -> None:
        """Glue ``value`` under ``name`` for the Markdown (``{glue:text}`name:.2f```) and
        record it in ``prose.csv``. Returns nothing, so that a cell ending in a glue shows
        nothing on the page."""
        from myst_nb import glue

        if not isinstance(value, Value):
            raise TypeError(
                f"glued value {name!r} is {type(value).__name__}, not a Value read from a CSV; "
                "use Prose.value or Prose.text"
            )
        if any(row["name"] == name for row in self.rows):
            raise ValueError(f"{name!r} is glued twice in this chapter")
        glue(name, value.value, display=False)
        self.rows.append(
            {
                "name": name,
                "value": value.value,
                "csv": _relative(value.csv, self.out),
                "column": value.column,
                "where": json.dumps(value.where, sort_keys=True, default=str),
                "agg": value.agg,
            }
        )
        table = pd.DataFrame(self.rows)
        atomic_write(self.path, lambda tmp: table.to_csv(tmp, index=False))

    def glue_reads(self, reads: Iterable[tuple[str, Any, str, str, dict[str, Any]]]) -> Prose:
        """Glue every ``(name, csv, column, agg, where)`` of ``reads`` (a chapter module's
        ``PROSE_READS``): :meth:`value` with ``agg``, or :meth:`text` where ``agg`` is
        ``"text"``. Returns this Prose (``prose = chapter.Prose(out).glue_reads(...)``)."""
        for name, csv, column, agg, where in reads:
            if agg == "text":
                self.glue(name, self.text(csv, column, **where))
            else:
                self.glue(name, self.value(csv, column, agg, **where))
        return self


@dataclass(frozen=True)
class Value:
    """A number (or a word) read from a result CSV, with where it came from (see
    :class:`Prose`)."""

    value: float | str
    n_rows: int
    csv: Path
    column: str
    agg: str
    where: dict[str, Any]

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


def _read_text(path: Path, column: str, where: dict[str, Any]) -> str:
    """The text of ``column`` on the one row of ``path`` that matches ``where``."""
    table = pd.read_csv(path, keep_default_na=False)
    rows = table[_matching(table, path, [column, *where], where)]
    if len(rows) != 1:
        raise ValueError(f"{path}: {len(rows)} rows match {where}; a text needs exactly one")
    return str(rows[column].iloc[0])


def _matching(table: pd.DataFrame, path: Path, names: list[str], where: dict[str, Any]):
    """The mask of ``table``'s rows where each ``where`` column equals its value."""
    for name in names:
        if name not in table.columns:
            raise KeyError(f"{path}: no column {name!r} (columns: {', '.join(table.columns)})")
    mask = pd.Series(True, index=table.index)
    for name, wanted in where.items():
        col = table[name]
        mask &= col.astype(str) == str(wanted) if col.dtype == object else col == wanted
    return mask


def _read_value(path: Path, column: str, agg: str, where: dict[str, Any]) -> tuple[float, int]:
    """``(value, rows used)``: the reduction ``agg`` of ``column`` over the matching rows."""
    if agg not in Prose.AGGREGATES:
        raise ValueError(f"agg must be one of {', '.join(Prose.AGGREGATES)}; got {agg!r}")
    table = pd.read_csv(path)
    names = [column, *where] if agg != "count" else list(where)
    rows = table[_matching(table, path, names, where)]
    if agg == "count":
        return float(len(rows)), len(rows)
    if rows.empty or (agg == "one" and len(rows) != 1):
        raise ValueError(
            f"{path}: {len(rows)} rows match {where}; {agg!r} needs "
            + ("exactly one" if agg == "one" else "at least one")
        )
    values = pd.to_numeric(rows[column])
    reduced = values.iloc[0] if agg == "one" else getattr(values, agg)()
    return float(reduced), len(rows)


def _relative(path: Path, out: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(out.resolve()))
    except ValueError:
        return str(path)


#: A glued value in a Markdown cell: ``{glue:text}`name:.2f``` (the format spec is optional).
_GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([^`:]+)(?::([^`]*))?`")


def check_prose(prose_csv: str | os.PathLike, notebook: str | os.PathLike | None = None) -> list:
    """Problems with the glued values recorded in ``prose_csv`` (empty when all is well): each
    is read back from its CSV and must equal the recorded value. With ``notebook`` (the executed
    notebook), every ``{glue:text}`` of its Markdown must name a recorded value, formatted by a
    spec that applies to it."""
    prose_csv = Path(prose_csv)
    out = prose_csv.parent
    problems, recorded = [], {}
    for row in pd.read_csv(prose_csv, keep_default_na=False).to_dict("records"):
        recorded[row["name"]] = row
        csv = Path(row["csv"]) if Path(row["csv"]).is_absolute() else out / row["csv"]
        where = json.loads(row["where"])
        try:
            if row["agg"] == "text":
                again, same = _read_text(csv, row["column"], where), None
                same = again == str(row["value"])
            else:
                again, _ = _read_value(csv, row["column"], row["agg"], where)
                same = math.isclose(again, float(row["value"]), rel_tol=1e-9, abs_tol=1e-12)
        except (OSError, KeyError, ValueError) as err:
            problems.append(f"{prose_csv}: {row['name']}: {err}")
            continue
        if not same:
            problems.append(
                f"{prose_csv}: {row['name']} is {row['value']} on the page but {again} in {csv}"
            )
    if notebook is not None:
        problems += _check_glued(Path(notebook), recorded)
    return problems


def _check_glued(notebook: Path, recorded: dict[str, dict]) -> list[str]:
    """Every glue role of ``notebook``'s Markdown names a value of ``recorded``."""
    import nbformat

    problems = []
    cells = nbformat.read(notebook, as_version=4).cells
    for i, cell in enumerate(c for c in cells if c.cell_type == "markdown"):
        for name, spec in _GLUE_ROLE.findall(cell.source):
            if name not in recorded:
                problems.append(f"{notebook.name}: Markdown cell {i}: {name!r} is not glued")
                continue
            try:
                if spec:
                    value = recorded[name]["value"]
                    format(value if recorded[name]["agg"] == "text" else float(value), spec)
            except ValueError as err:
                problems.append(f"{notebook.name}: Markdown cell {i}: {name}:{spec}: {err}")
    return problems


def read_result(out: str | os.PathLike, folder: str | os.PathLike, name: str) -> pd.DataFrame:
    """Another chapter's result table ``name`` in ``folder`` (relative to this chapter's output
    folder ``out``, e.g. ``"../04_reasoning_vs_instruct"``, or absolute), for a chapter that
    reads what earlier chapters wrote. A missing file is a
    :class:`racer_lib.errors.MissingFileError` that says which chapter to run first; one that
    leads (links followed, as the runner's check and cache key resolve it:
    :func:`racer_lib.book.parameters.resolve_path`) out of the profile's results folder and the
    working folder (the repository) an :class:`~racer_lib.errors.InputError`, never read."""
    from racer_lib.book.parameters import allowed_folders, outside, resolve_path
    from racer_lib.errors import InputError, MissingFileError

    found = resolve_path(Path(folder) / name, out)
    path = found or Path(out) / folder / name
    root = Path.cwd()  # the repository, where the runner executes a chapter
    if found is None or outside(found, root, Path(out)):
        raise InputError(
            f"{folder} (relative to {out}) leads outside the results folder "
            f"{allowed_folders(root, Path(out))[-1]} and the working folder {root}: never read"
        )
    if not path.is_file():
        raise MissingFileError(
            f"{path} is not there: run the chapter {Path(folder).name} first, with the same "
            f"profile (racer book build --profile ... --only {Path(folder).name[:2]}), or point "
            "this chapter's parameter at its results folder"
        )
    print(f"read {_shown_path(path)}")
    return pd.read_csv(path)


def profile_chapters(profile: str, results_root: str | Path, exclude: str = "") -> list[str]:
    """The chapters ``profile`` runs (``profiles/<profile>.yaml``, ``extends`` resolved), less
    ``exclude``; for a name that is no profile, the chapter folders under ``results_root``."""
    from racer_lib.book.profiles import find_root, load_profile

    try:
        stems = list(load_profile(profile, find_root()).notebooks)
    except (RacerError, OSError):
        stems = sorted(p.name for p in Path(results_root).glob("*") if p.is_dir())
    return [s for s in stems if s != exclude]
