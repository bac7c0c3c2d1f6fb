"""What every chapter does around its results: set-up, provenance, and writing files.

A notebook starts with ``out = chapter.setup(results_dir, torch_threads)`` and writes each
table with :func:`save_table` and each figure with :func:`save_figure`. Both put the records'
provenance on what they write (a ``provenance`` column first; the figure's stamp) and print
where the file went, so a reader of the executed notebook sees every output path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from . import plots


def setup(results_dir: str | os.PathLike, torch_threads: int = 0) -> Path:
    """Pin torch to ``torch_threads`` (0 keeps its default), set the book's figure style, and
    create and return the chapter's output folder ``results_dir``."""
    if torch_threads:  # small batched policies run fastest on one thread (see Re-running)
        import torch

        torch.set_num_threads(torch_threads)
    plots.set_style()
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out


def combined_provenance(provenances: Iterable[str]) -> str:
    """The one provenance shared by all of ``provenances``, or ``"mixed"``."""
    kinds = set(provenances)
    return kinds.pop() if len(kinds) == 1 else "mixed"


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
    frame.to_csv(path, index=False)
    print(f"wrote {path}")
    return frame


def save_figure(
    fig: plt.Figure, path: str | os.PathLike, provenance: str, show: bool = True
) -> Path:
    """Stamp ``fig`` with the records' provenance (:func:`racer_lib.plots.stamp`), save it as
    PNG, print the path and, with ``show``, display it."""
    plots.stamp(fig, provenance)
    saved = plots.save(fig, path)
    print(f"wrote {saved}")
    if show:
        plt.show()
    return saved
