"""The OOD benchmarks' domain table in racer_lib.paper.numbers is the one printed in the paper's
LaTeX
source (table ``tab:benchmark``), and agrees with the simulator's cell sizes."""

import re

import pytest

from racer_lib.paper.numbers import BENCHMARK_DOMAINS
from racer_lib.records import simulate
from tests.test_paper_numbers import TEX

#: The benchmark names of the table's first column, as the simulator names them.
BENCHMARKS = {
    "JudgeBench": "judgebench",
    "RewardBench": "rewardbench",
    "RewardBench 2": "rewardbench2",
}
ROW = re.compile(
    r"^\s*(?:([A-Za-z][A-Za-z0-9 ]*?)~\\cite\{[^}]*\})?\s*&\s*([A-Za-z ]+?)\s*&"
    r"\s*(\d+)\s*&\s*([0-9.]+)\\%",
    re.M,
)


def domain_rows(tex: str, label: str = "tab:benchmark") -> dict[tuple[str, str], tuple[int, float]]:
    """``(benchmark, domain) -> (count, proportion)`` of the table labelled ``label``; a row
    without a benchmark name belongs to the last one named."""
    start = tex.index(rf"\label{{{label}}}")
    body = tex[tex.index(r"\midrule", start) : tex.index(r"\bottomrule", start)]
    rows, bench = {}, None
    for name, domain, count, share in ROW.findall(body):
        bench = BENCHMARKS[name.strip()] if name else bench
        rows[(bench, domain.strip().lower().replace(" ", "_"))] = (int(count), float(share))
    return rows


def test_domain_rows_reads_the_tabularx():
    tex = (
        "\\label{tab:x}\n\\midrule\nJudgeBench~\\cite{a}\n& Coding & 73 & 11.8\\% & text \\\\\n"
        "& Precise IF & 9 & 1.0\\% & more \\\\\n\\midrule\nRewardBench~\\cite{b}\n"
        "& Math & 4 & 15.0\\% & x \\\\\n\\bottomrule\n"
    )
    assert domain_rows(tex, "tab:x") == {
        ("judgebench", "coding"): (73, 11.8),
        ("judgebench", "precise_if"): (9, 1.0),
        ("rewardbench", "math"): (4, 15.0),
    }


@pytest.mark.skipif(not TEX.is_file(), reason=f"{TEX} is not there")
def test_benchmark_domains_are_the_papers_table():
    assert domain_rows(TEX.read_text()) == BENCHMARK_DOMAINS


def test_simulator_draws_the_papers_counts():
    for bench in simulate.OOD_BENCHMARKS:
        sizes = {key[2]: n for key, n in simulate.RECIPES[bench].items()}
        paper = {domain: n for (b, domain), (n, _) in BENCHMARK_DOMAINS.items() if b == bench}
        assert sizes == paper, bench
