"""The paper's numbers in racer_lib.paper.numbers are the ones printed in the paper's LaTeX source.

The source lies in ``../shared/paper`` beside the checkout (as in CI); without it the checks
are skipped.
"""

import re
from pathlib import Path

import pytest

from racer_lib.paper.numbers import ARTIFACTS, BETA_SENSITIVITY, CHAPTER_ARTIFACTS

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


def float_numbers(tex: str) -> list[tuple[str, str]]:
    """``(first label, "Fig. N" / "Table N")`` of every figure and table environment, numbered
    in order of appearance as LaTeX numbers them (one counter per kind, appendix included)."""
    counts = {"figure": 0, "table": 0}
    found = []
    for kind, body in re.findall(r"\\begin\{(figure|table)\*?\}(.*?)\\end\{\1\*?\}", tex, re.S):
        counts[kind] += 1
        label = re.search(r"\\label\{((?!subfig:)[^}]*)\}", body).group(1)
        found.append((label, f"{'Fig.' if kind == 'figure' else 'Table'} {counts[kind]}"))
    return found


def test_float_numbers_counts_each_kind_apart():
    tex = (
        "\\begin{figure}\\label{fig:a}\\end{figure}\\begin{table}\\label{tab:b}\\end{table}"
        "\\begin{figure*}\\label{subfig:x}\\label{fig:c}\\end{figure*}"
    )
    assert float_numbers(tex) == [("fig:a", "Fig. 1"), ("tab:b", "Table 1"), ("fig:c", "Fig. 2")]


@pytest.mark.skipif(not TEX.is_file(), reason=f"{TEX} is not there")
def test_artifact_numbers_are_the_compiled_papers():
    numbers = float_numbers(TEX.read_text())
    first = {}
    for label, number in numbers:
        first.setdefault(label, number)
    assert ARTIFACTS == first


def test_chapter_titles_carry_the_paper_artifact_numbers():
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    for stem, labels in CHAPTER_ARTIFACTS.items():
        title = re.search(r"^# (.+)$", (notebooks / f"{stem}.md").read_text(), re.M).group(1)
        for label in labels:
            assert re.search(rf"\b{re.escape(ARTIFACTS[label])}\b", title), (stem, title, label)
