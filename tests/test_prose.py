"""Result sentences state numbers computed by the run (racer_lib.book.chapter.Prose), not typed.

A result sentence is Markdown with the run's numbers glued in (``{glue:text}`name:.1f```).
Two checks on the smoke build of ``tests/conftest.py`` (the ``smoke`` fixture, shared with
``test_smoke_profile.py``; ``full-smoke`` with the real-data chapters 02, 13, 14 and 15 when the
data files are at hand):

* every ``prose.csv`` the build wrote passes :func:`racer_lib.book.chapter.check_prose` (each glued
  value read back from its CSV; each ``{glue:text}`` of the executed notebook's Markdown names a
  glued value), and every chapter states at least one glued value from its own CSVs;
* the Markdown cells of those chapters' executed notebooks state no number beyond an allow-list:
  the paper's numbers, parameter values, dataset definitions and section numbers, each list
  commented with why. A result typed into the Markdown fails here, with its notebook.
"""

import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from racer_lib.book import chapter

pytestmark = pytest.mark.slow

#: The chapters whose result sentences come from Prose; the real-data ones run only in
#: ``full-smoke``.
CONVERTED = [
    "04_reasoning_vs_instruct",
    "05_dro_theory",
    "06_training_dynamics",
    "07_budget_frontier",
    "08_robustness_ablation",
    "09_beta_sensitivity",
    "10_advanced_baselines",
    "11_self_routing",
    "12_llama_family",
    "03_motivation_and_benchmarks",
    "01_reproduction_report",
    "16_simulator_sensitivity",
    "17_your_own_judge",
    "18_keeping_the_budget",
]
REAL_DATA = ["02_judging", "13_llmbar_judges", "14_llmbar_routing", "15_llmbar_shift"]

#: Numbers the Markdown of a chapter may state, and why. Section numbers of the paper ("5.2"),
#: chapter numbers ("02") and model sizes ("4B") count as numbers here.
ALLOWED = {
    # the paper's judges (Qwen3-1.7B, 4B, 8B), its temperature 0.6, the GPU cap 8,192 (the
    # parameter gpu_max_tokens), SmolLM2-135M, chapter 04
    "02_judging": {"0.6", "04", "1", "2", "4", "8", "8,192", "135"},
    # the panels of Fig. 2 (upper, lower) name no number; "2" is the figure's
    "04_reasoning_vs_instruct": {"2"},
    # the paper's Theorems 3.1, 4.1, 4.2 and Eq. (7); the 2 of a λ²/2 term written in prose
    "05_dro_theory": {"1", "2", "3.1", "4.1", "4.2", "7"},
    # the paper's MLP widths 256/128/64, 4 layers, batch 64; the cost unit's definition 1.0;
    # the paper's Fig. 5 (its title); the monotone rule's threshold (MONOTONE_RHO, 0.9); the
    # protocol's 95 % t-interval that the figure's band draws
    "06_training_dynamics": {"0.9", "1", "1.0", "4", "5", "64", "128", "256", "95 %"},
    # Fig. 4, the 40k mixture, the 4-layer MLP, Fig. 2; the paper's §5.3 and the protocol's
    # level of each one-sided test, 2.5 % (racer_lib.evaluation.verdicts.ALPHA), and the 95 %
    # t-interval that the figure's bars draw
    "07_budget_frontier": {"2", "4", "40", "5.3", "2.5 %", "95 %"},
    # §5.2, Table 1, Fig. 3, the split 80/10/10, batch 64, appendix B.3; the matched-spend
    # control's 95 % intervals
    "08_robustness_ablation": {"1", "3", "5.2", "10", "64", "80", "95 %"},
    # §5.4, Theorem 4.1, β = 0, the 4-layer MLP, Table 3 (title), chapter 07 (its split); the
    # protocol's 95 % t-interval that the figure's bars draw
    "09_beta_sensitivity": {"0", "3", "4", "4.1", "5.4", "07", "95 %"},
    # APGR's definition (0 at All-Instruct, 1 at All-Reasoning, Random's 0.5), CPT(50%), the
    # paper's 10 replications and §4, the three benchmarks' "RewardBench 2", the baselines'
    # publication years 2024 and 2025; chapter 07, whose routers it loads
    # and the 95 % t-interval that the figure's bars draw
    "10_advanced_baselines": {
        "0",
        "0.5",
        "1",
        "2",
        "4",
        "07",
        "10",
        "2024",
        "2025",
        "50%",
        "95 %",
    },  # fmt: skip
    # no/yes as 0/1, the reasoning fraction's 100 %, the paper's Table 9 (title)
    "11_self_routing": {"0", "1", "9", "100 %"},
    # the paper's budgets 2, 2.5, 3, 3.5, its Random cost 2.44 against RACER's 2.05 at budget 2
    # (quoted as the paper's), the test split's share 10 %, the paper's Table 7 (title); the
    # 95 % t-interval that the figure's bars draw
    "12_llama_family": {"2", "2.5", "3", "3.5", "2.05", "2.44", "7", "10 %", "95 %"},
    # Fig. 1 to Fig. 4, the chapters 04, 07 and 08 it reads, the instruct mode's cost 1
    "03_motivation_and_benchmarks": {"1", "2", "3", "4", "04", "07", "08"},
    # the bootstrap interval's level, 95 % (a rule of the report, stated on the page)
    "01_reproduction_report": {"95 %"},
    # the paper's Fig. 2, Fig. 3, Fig. 4, Table 2 and Table 3; chapters 04 and 08; the 95 %
    # intervals of the rule "holds"
    "16_simulator_sensitivity": {"2", "3", "4", "04", "08", "95 %"},
    # the five steps' section numbers; GPT-4 (an LLMBar evaluator's name)
    "17_your_own_judge": {"1", "2", "3", "4", "5"},
    # the paper's Eq. (1), §3 and Fig. 3; chapters 07, 08 and 15; Balseiro et al. 2023; the
    # claims' 500 pairs; the bound's slope -1/2; the 95 % t-interval the figure's bands draw
    "18_keeping_the_budget": {"1", "2", "3", "07", "08", "15", "500", "2023", "95 %"},
    # LLMBar's definition: 419 pairs in subsets of 100, 134, 92, 47, 46; ICLR 2024, judges of
    # 2023; chapter 04, Fig. 2; the paper's cost ratios 3 (Table 1) to 19; a coin's 50 %
    "13_llmbar_judges": {
        "1",
        "2",
        "04",
        "3",
        "19",
        "46",
        "47",
        "92",
        "100",
        "134",
        "419",
        "2023",
        "2024",
        "50 %",
    },
    # LLMBar's 419 pairs; the paper's settings (60 epochs, 10^-4, 40,000 pairs, 600 steps, its
    # cost ratios 3 to 19, β = 0.005) and this chapter's parameters (epochs 100, knn_k 10,
    # mf_epochs 100, mirt_epochs 30, M-IRT's 9 epochs, batch 512, 500 rows, 25 %, 25
    # dimensions, 128 projected of 1152, MLP 256/128/64, batch 64, RouterBench's 5/10/40/50),
    # Random's APGR and CPT of 0.5, τ_C = 1, 4 layers; the random split's shares (60 % train,
    # 20 % validation and test), stated in the provenance note
    "14_llmbar_routing": {
        "20 %",
        "60 %",
        "0",
        "0.5",
        "1",
        "3",
        "4",
        "5",
        "9",
        "10",
        "19",
        "25",
        "25 %",
        "30",
        "40",
        "40,000",
        "50",
        "60",
        "64",
        "100",
        "128",
        "256",
        "419",
        "500",
        "512",
        "600",
        "1152",
    },
    # Eq. (1), Eq. (2), §3 and Fig. 3 of the paper; the rule's 95 % intervals and its 1 point
    "15_llmbar_shift": {"1", "2", "3", "95 %"},
}

NUMBER = re.compile(r"(?<![\w.\-])\d+(?:,\d{3})*(?:\.\d+)?(?:\s?%)?")
#: A fenced MyST directive whose body is prose the page shows (an admonition, a margin note),
#: with backticks or colons: its title and body are read like any other Markdown.
ADMONITION = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\s*\{(?:admonition|note|warning|tip|important|caution|attention|"
    r"danger|error|hint|seealso|margin|sidebar|dropdown|topic)\}(?P<title>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=fence)\s*$",
    re.S | re.M,
)


def admonition_text(markdown: str) -> str:
    """``markdown`` with each admonition's fences and options (``:class: warning``) dropped and
    its title and body kept, so that the prose inside a note is read too."""

    def keep(m: re.Match) -> str:
        body = re.sub(r"^:[\w-]+:.*$", "", m["body"], flags=re.M)
        return f"{m['title']}\n{body}"

    return ADMONITION.sub(keep, markdown)


def typed_numbers(markdown: str) -> set[str]:
    """The numbers stated in ``markdown`` outside code (fenced code blocks, inline code) and
    math; the prose of admonitions (``{note}``, ``{admonition}``, ...) counts."""
    text = re.sub(r"```.*?```", "", admonition_text(markdown), flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\$[^$]*\$", "", text)
    return {re.sub(r"\s", " ", n) for n in NUMBER.findall(text)}


def test_typed_numbers_finds_results_and_skips_code_and_math():
    found = typed_numbers("RACER reaches 82.3 % at cost 2.05, `budget = 2` and $C = 4$.")
    assert found == {"82.3 %", "2.05"}
    assert typed_numbers("RACER reaches {glue:text}`acc:.1f` % at {glue:text}`cost:.2f`") == set()
    assert typed_numbers("```\n81.96\n```\nno number, Qwen3-4B") == set()


def test_typed_numbers_reads_admonitions():
    note = "```{note}\nRACER beats Random by 4.8 points.\n```\n"
    assert typed_numbers(note) == {"4.8"}
    titled = "```{admonition} Reproduced 12 times\n:class: warning\nA `code 7` and 3 %.\n```\n"
    assert typed_numbers(titled) == {"12", "3 %"}
    assert typed_numbers(":::{warning}\nIt costs 2.5 units.\n:::\n") == {"2.5"}
    assert typed_numbers("````{note}\nsee\n```python\nx = 81.96\n```\nand 7\n````\n") == {"7"}


def _ran(smoke):
    result, _ = smoke
    return {stem: Path(path) for stem, path in result.results_dirs.items()}


def test_every_prose_csv_of_the_build_checks_out(smoke):
    dirs = _ran(smoke)
    result, _ = smoke
    executed = {Path(p).stem: Path(p) for p in result.executed}
    checked = {s: d / "prose.csv" for s, d in dirs.items() if (d / "prose.csv").exists()}
    assert checked, f"no prose.csv in {sorted(dirs)}"
    problems = [p for s, csv in checked.items() for p in chapter.check_prose(csv, executed[s])]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stem", CONVERTED + REAL_DATA)
def test_converted_chapter_states_its_results_through_prose(smoke, stem):
    dirs = _ran(smoke)
    if stem not in dirs:
        assert stem in REAL_DATA, f"{stem} did not run in the smoke build"
        pytest.skip(f"{stem} runs only in full-smoke (needs the data files)")
    prose = pd.read_csv(dirs[stem] / "prose.csv")
    assert len(prose) >= 1 and prose["name"].is_unique
    own = prose["csv"][~prose["csv"].str.startswith("..")]  # the chapter's own CSVs
    assert set(own) <= {p.name for p in dirs[stem].iterdir()}


@pytest.mark.parametrize("stem", CONVERTED + REAL_DATA)
def test_markdown_states_no_typed_result(smoke, stem):
    result, _ = smoke
    executed = [Path(p) for p in result.executed if Path(p).name == f"{stem}.ipynb"]
    if not executed:
        assert stem in REAL_DATA, f"no executed notebook of {stem}"
        pytest.skip(f"{stem} runs only in full-smoke (needs the data files)")
    nb = nbformat.read(executed[0], as_version=4)
    typed = set().union(*(typed_numbers(c.source) for c in nb.cells if c.cell_type == "markdown"))
    extra = typed - ALLOWED[stem]
    assert not extra, (
        f"{stem}: numbers typed into the Markdown that are not on its allow-list: "
        f"{sorted(extra)}; compute them with chapter.Prose, or allow them with the reason"
    )


@pytest.mark.parametrize("stem", CONVERTED + REAL_DATA)
def test_glued_values_are_not_shown_as_objects(smoke, stem):
    """A cell ending in ``prose.glue(...)`` shows nothing: no glued value appears on the page as
    its Python object (``Value(value=..., csv=...)``) beside the sentence that states it."""
    result, _ = smoke
    executed = [Path(p) for p in result.executed if Path(p).name == f"{stem}.ipynb"]
    if not executed:
        pytest.skip(f"{stem} did not run in this smoke build")
    nb = nbformat.read(executed[0], as_version=4)
    shown = [
        o["data"]["text/plain"]
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if "Value(value=" in o.get("data", {}).get("text/plain", "")
    ]
    assert not shown, f"{stem}: a cell shows {shown[0][:120]!r}"
