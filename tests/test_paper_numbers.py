"""The paper's numbers in racer_lib.paper are the ones printed in the paper's LaTeX source.

The source lies in ``../shared/paper`` beside the checkout (as in CI); without it the checks
are skipped.
"""

import re
from pathlib import Path

import pytest

from racer_lib.paper import BETA_SENSITIVITY

TEX = Path(__file__).resolve().parents[2] / "shared" / "paper" / "racer_paper.tex"


def table_rows(tex: str, label: str) -> list[list[float]]:
    """The numeric rows of the tabular labelled ``label``: one list of numbers per row."""
    start = tex.index(rf"\label{{{label}}}")
    body = tex[tex.index(r"\midrule", start) : tex.index(r"\bottomrule", start)]
    rows = []
    for line in body.split(r"\\"):
        numbers = re.findall(r"\$(-?[0-9.]+)\$", line)
        if numbers:
            rows.append([float(n) for n in numbers])
    return rows


def test_table_rows_reads_a_tabular():
    tex = (
        "\\label{tab:x}\n\\begin{tabular}{lc}\n\\midrule\n$1$ & $2.5$ \\\\\n"
        "$0.1$ & $3$ \\\\\n\\bottomrule\n"
    )
    assert table_rows(tex, "tab:x") == [[1.0, 2.5], [0.1, 3.0]]


@pytest.mark.skipif(not TEX.is_file(), reason=f"{TEX} is not there")
def test_beta_sensitivity_is_the_papers_table():
    rows = table_rows(TEX.read_text(), "tab:beta_sensitivity")
    from_tex = {
        (row[0], budget): (row[1 + 2 * i], row[2 + 2 * i])
        for row in rows
        for i, budget in enumerate((2.0, 3.0, 4.0))
    }
    assert from_tex == BETA_SENSITIVITY
