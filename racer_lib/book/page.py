"""How a chapter's figures and tables appear on the book's page (HTML for the notebook output).

:func:`figure_html` shows a saved PNG as a numbered figure with a caption, the paper's figure
number, a provenance line and a description as alt text, at its true size (never upscaled;
narrowed to the column when wider), with the data the browser check
(:mod:`racer_lib.book.bookcheck`)
needs to tell whether its smallest text is still legible. :func:`table_html` shows a table
compactly: numbers with a fixed number of decimals, text that wraps instead of being cut, long
tables collapsed, the CSV offered for download. The book's stylesheet (``book/_static/racer.css``)
sizes both; :func:`racer_lib.book.chapter.save_figure` and :func:`racer_lib.book.chapter.show` call
them.
"""

from __future__ import annotations

import base64
import html
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.text import Text

from racer_lib.evaluation import intervals
from racer_lib.paper.plots import CAPTION_LINES

#: CSS pixels per inch: a figure is shown at its true size on the page.
_CSS_DPI = 96
#: The smallest text a reader should have to read, in points at the displayed size.
MIN_FONT_PT = 9.0
#: CSVs up to this size are embedded in the page for download (larger ones are named).
_MAX_EMBEDDED_CSV = 2_000_000


def provenance_line(provenance: str | None) -> str:
    """The caption's sentence on where the records come from."""
    if not provenance:
        return ""
    return CAPTION_LINES.get(provenance, f"Records: {provenance}.")


def anchor(kind: str, number: str) -> str:
    """The page anchor of a numbered figure or table: ``anchor("figure", "7.1")`` is
    ``figure-7-1`` (a link to ``07_budget_frontier.html#figure-7-1`` opens at it)."""
    return f"{kind}-{number.replace('.', '-')}"


def png_size(path: str | os.PathLike) -> tuple[int, int]:
    """Width and height in pixels of a PNG file (from its header)."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    return struct.unpack(">II", head[16:24])


def smallest_font(fig: plt.Figure) -> float:
    """The smallest font size (points) of any visible, non-empty text of ``fig`` (drawn
    first: tick labels get their text when the figure is drawn)."""
    fig.canvas.draw()
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_figure() is not None
    ]
    return float(min(sizes)) if sizes else math.inf


def displayed_font(font_pt: float, width_px: float, shown_px: float) -> float:
    """Points at which text of ``font_pt`` reads when a figure of natural width ``width_px``
    (CSS pixels at true size) is shown ``shown_px`` wide."""
    return font_pt * min(1.0, shown_px / width_px) if width_px > 0 else font_pt


def figure_html(
    fig: plt.Figure,
    png: str | os.PathLike,
    number: str,
    caption: str,
    alt: str,
    provenance: str | None,
    paper: str = "",
) -> str:
    """A saved figure as ``<figure>``: the PNG inline, at true size, with its caption."""
    png = Path(png)
    dpi = plt.rcParams["savefig.dpi"]
    dpi = fig.dpi if dpi == "figure" else float(dpi)
    width_px, _ = png_size(png)
    width_css = round(width_px * _CSS_DPI / dpi)
    font = smallest_font(fig)
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    regenerates = f"Regenerates the paper's {html.escape(paper)}. " if paper else ""
    return (
        f'<figure class="racer-figure" id="{anchor("figure", number)}">'
        f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}" '
        f'width="{width_css}" data-width-px="{width_css}" data-font-pt="{font:g}" '
        f'data-file="{html.escape(png.name)}" title="Click to enlarge">'
        f'<figcaption><span class="racer-number">Figure {number}.</span> {regenerates}'
        f"{html.escape(caption.strip())} "
        f'<span class="racer-provenance">{html.escape(provenance_line(provenance))}</span>'
        "</figcaption></figure>"
    )


#: Columns that hold p-values: shown as ``< 0.001`` or to two decimals, never ``0.00``.
P_COLUMNS = ("p", "p_other", "p-value")


def number_text(value: float, digits: int = 2) -> str:
    """A float as a table cell: ``digits`` decimals; a nonzero value that would read ``0.00``
    or ``-0.00`` gets two significant digits instead (``-0.0031``); ``-0.0`` reads ``0.00``;
    ``–`` when not finite."""
    if not math.isfinite(value):
        return "–"
    if value != 0 and round(value, digits) == 0:
        return np.format_float_positional(value, precision=2, fractional=False, trim="-")
    return f"{value + 0.0:.{digits}f}"


def _format_column(values: pd.Series, digits: int, name: Any = "") -> pd.Series:
    if pd.api.types.is_bool_dtype(values):
        return values.map({True: "yes", False: "no"})
    if pd.api.types.is_integer_dtype(values):
        return values.map(lambda v: f"{v:,}" if abs(v) >= 10_000 else str(v))
    if pd.api.types.is_float_dtype(values):
        if name in P_COLUMNS:
            return values.map(intervals.p_text)
        return values.map(lambda v: number_text(v, digits))
    return values.map(lambda v: "–" if v is None or (isinstance(v, float) and v != v) else v)


def formatted(frame: pd.DataFrame, digits: int | dict[Any, int] = 2) -> pd.DataFrame:
    """``frame`` with every cell as the text the page shows (decimals fixed per column)."""
    cells = {
        i: _format_column(
            frame.iloc[:, i], digits.get(col, 2) if isinstance(digits, dict) else digits, col
        )
        for i, col in enumerate(frame.columns)
    }
    out = pd.DataFrame(cells, index=frame.index).astype(object)
    out.columns = frame.columns
    return out


def _download(csv: str | os.PathLike | None, rows: int) -> str:
    if not csv:
        return ""
    path = Path(csv)
    if path.is_file() and path.stat().st_size <= _MAX_EMBEDDED_CSV:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return (
            f' <a class="racer-download" download="{html.escape(path.name)}" '
            f'href="data:text/csv;base64,{data}">Download {html.escape(path.name)}</a>'
        )
    return f" Full table: <code>{html.escape(path.name)}</code> in the chapter's results."


def wrap_table(
    table: str,
    number: str,
    caption: str,
    provenance: str | None,
    verbatim: bool = False,
    link: str = "",
    extra: str = "",
) -> str:
    """A rendered ``<table>`` in the block the book's stylesheet sizes: ``Table <number>.``, the
    caption, the provenance line and ``link`` (a download) above it, ``extra`` (a collapsed
    rest) after it. ``verbatim`` marks cells quoted as written (judges' answers), which the
    book check does not read as the page's own maths."""
    kind = "racer-table racer-verbatim" if verbatim else "racer-table"
    head = (
        f'<p class="racer-caption"><span class="racer-number">Table {number}.</span> '
        f"{html.escape(caption.strip())} "
        f'<span class="racer-provenance">{html.escape(provenance_line(provenance))}</span>'
        f"{link}</p>"
    )
    return f'<div class="{kind}" id="{anchor("table", number)}">{head}{table}{extra}</div>'


@dataclass(frozen=True)
class TableLayout:
    """How a table is laid out on the page: ``digits`` decimals (per column with a dict),
    the index shown or not (``None``: unless it is a plain range), the first ``max_rows`` rows
    with the rest collapsed, the CSV offered for download, cells quoted ``verbatim``."""

    digits: int | dict[Any, int] = 2
    index: bool | None = None
    max_rows: int = 15
    csv: str | os.PathLike | None = None
    verbatim: bool = False


def table_html(
    frame: pd.DataFrame,
    number: str,
    caption: str,
    provenance: str | None,
    layout: TableLayout = TableLayout(),
) -> str:
    """A table as compact HTML (:func:`wrap_table`): long tables collapsed, CSV for download."""
    index = layout.index
    if index is None:
        index = not isinstance(frame.index, pd.RangeIndex)
    shown = formatted(frame, layout.digits)
    max_rows, verbatim = layout.max_rows, layout.verbatim

    def body(rows: pd.DataFrame) -> str:
        return rows.to_html(index=index, border=0, classes="racer-table-body", escape=True)

    link = _download(layout.csv, len(frame))
    if len(frame) <= max_rows:
        return wrap_table(body(shown), number, caption, provenance, verbatim, link)
    rest = f"<details><summary>Show all {len(frame):,} rows</summary>{body(shown)}</details>"
    return wrap_table(body(shown.head(max_rows)), number, caption, provenance, verbatim, link, rest)
