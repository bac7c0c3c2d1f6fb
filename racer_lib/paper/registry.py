"""The chapters of the book, stated once: the runner, the report, the table of contents check and
the tests read this registry.

Each :class:`Chapter` is one notebook ``notebooks/<stem>.md``, listed here in reading order (the
order of ``book/_toc.yml``): the reproduction report first, the judging chapter, then the paper's
artifacts in the paper's order, then the chapters on LLMBar's released judges, then how the
simulated verdicts depend on the simulator's choices, then two chapters beyond the paper (your
own judge; keeping the budget after deployment). A chapter says

* ``title``: its notebook's H1, artifact numbers included;
* ``artifacts``: the paper's figures, tables and theorems it reproduces (empty: none of the
  paper's, such as the LLMBar chapters);
* ``reads``: the chapters whose result CSVs it reads (:data:`READS_ALL` for every other chapter
  of the profile, the report); it runs after them and re-runs when they do;
* ``after``: the chapters whose stored routers it loads (:mod:`racer_lib.routing.store`); it only
  starts after them, so that the same chapter trains a shared router in a sequential and in a
  parallel run;
* ``requires``: what it needs beyond the repository, ``data:<source of data_manifest.yaml>`` or
  ``model:<name>``; a profile decides only what happens when it is missing (``on_missing``);
* ``run_last``: it runs after every other chapter of a profile (the report).

A chapter's code is the module :mod:`racer_lib.paper.chapters` names after its notebook (the stem
without its number; :func:`chapter_module`), which declares the chapter's claims (``CLAIMS``);
:func:`claims` gathers them for the reproduction report.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from racer_lib.claims.rules import Claim

READS_ALL = "*"  # ``reads`` of a chapter that reads every other chapter of the profile


@dataclass(frozen=True)
class Chapter:
    """One chapter of the book (one notebook): what it is and what it depends on."""

    stem: str
    title: str
    artifacts: tuple[str, ...] = ()
    reads: tuple[str, ...] | str = ()
    after: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    run_last: bool = False
    #: Seconds it typically runs in the ``sim`` profile on two cores (the data mirror's for the
    #: real-data chapters), a scheduling hint: the runner starts the longest ready chapter first.
    typical_s: float = 0.0

    @property
    def number(self) -> str:
        """The two digits of the stem (``"07"``)."""
        return self.stem[:2]


# The stems, as constants for the code that names a chapter (the report's claims, the runner).
REPORT = "01_reproduction_report"
JUDGING = "02_judging"
MOTIVATION = "03_motivation_and_benchmarks"
REASONING = "04_reasoning_vs_instruct"
THEORY = "05_dro_theory"
DYNAMICS = "06_training_dynamics"
FRONTIER = "07_budget_frontier"
ROBUSTNESS = "08_robustness_ablation"
BETA = "09_beta_sensitivity"
BASELINES = "10_advanced_baselines"
SELF_ROUTING = "11_self_routing"
LLAMA = "12_llama_family"
LLMBAR_JUDGES = "13_llmbar_judges"
LLMBAR_ROUTING = "14_llmbar_routing"
LLMBAR_SHIFT = "15_llmbar_shift"
SENSITIVITY = "16_simulator_sensitivity"
PRACTICE = "17_your_own_judge"
KEEPING_BUDGET = "18_keeping_the_budget"

CHAPTERS: tuple[Chapter, ...] = (
    Chapter(REPORT, "What this build reproduces", reads=READS_ALL, run_last=True),
    Chapter(
        JUDGING,
        "Judging every pair in both modes",
        typical_s=130,
        requires=("data:judgebench", "model:smollm2"),
    ),
    Chapter(
        MOTIVATION,
        "The motivation figure and the OOD benchmarks (Fig. 1, Table 4)",
        artifacts=("Fig. 1", "Table 4"),
        reads=(REASONING, ROBUSTNESS),  # panel (a) from 04's tables, panel (b) from 08's
    ),
    Chapter(
        REASONING,
        "Reasoning or instruct: where thinking pays off (Fig. 2)",
        artifacts=("Fig. 2",),
    ),
    Chapter(
        THEORY,
        "The theory, checked numerically (Theorems 3.1, 4.1 and 4.2)",
        typical_s=35,
        artifacts=("Theorem 3.1", "Theorem 4.1", "Theorem 4.2"),
    ),
    Chapter(
        DYNAMICS,
        "Training dynamics: reward, cost and the multiplier (Fig. 5)",
        typical_s=50,
        artifacts=("Fig. 5",),
    ),
    Chapter(
        FRONTIER,
        "Accuracy against cost across budgets (Fig. 4)",
        typical_s=260,
        artifacts=("Fig. 4",),
    ),
    Chapter(
        ROBUSTNESS,
        "Reward robustness and cost robustness under shift (Table 1, Fig. 3)",
        typical_s=460,
        artifacts=("Table 1", "Fig. 3"),
    ),
    Chapter(
        BETA,
        "Sensitivity to the entropy weight β (Table 3)",
        typical_s=190,
        artifacts=("Table 3",),
    ),
    Chapter(
        BASELINES,
        "Against advanced routing baselines (Table 2)",
        typical_s=90,
        artifacts=("Table 2",),
        after=(FRONTIER,),  # its RACER-R routers are 07's (the router store)
    ),
    Chapter(
        SELF_ROUTING,
        "Self-routing: asking the judge whether it needs to think (Table 9)",
        artifacts=("Table 9",),
    ),
    Chapter(
        LLAMA,
        "Another model family: Llama-3.1-8B and its R1 distill (Table 7)",
        typical_s=40,
        artifacts=("Table 7",),
    ),
    Chapter(
        LLMBAR_JUDGES,
        "Real judges: Fig. 2 on LLMBar's released evaluators",
        requires=("data:llmbar",),
    ),
    Chapter(
        LLMBAR_ROUTING,
        "Routing real judges: RACER on LLMBar",
        typical_s=180,
        requires=("data:llmbar",),
    ),
    Chapter(
        LLMBAR_SHIFT,
        "Robustness under a real shift, and the control that tells it from thrift",
        typical_s=290,
        requires=("data:llmbar",),
    ),
    Chapter(
        SENSITIVITY,
        "How the verdicts depend on the simulator's choices",
        typical_s=160,
        reads=(FRONTIER, ROBUSTNESS, BETA, LLAMA),  # the main build's statuses, beside its own
    ),
    # LLMBar's files when they can be had, simulated records otherwise (the page says which)
    Chapter(PRACTICE, "Your own judge: from two-mode outputs to a router"),
    # beyond the paper: the budget kept online on Fig. 3's shifts and a drift (simulated)
    Chapter(KEEPING_BUDGET, "Keeping the budget after deployment", typical_s=30),
)

BY_STEM: dict[str, Chapter] = {chapter.stem: chapter for chapter in CHAPTERS}
STEMS: tuple[str, ...] = tuple(BY_STEM)
#: Chapters that read others' results: stem -> the stems read, or READS_ALL.
READS: dict[str, tuple[str, ...] | str] = {c.stem: c.reads for c in CHAPTERS if c.reads}
#: Each chapter's :attr:`Chapter.typical_s`, for the runner's order (longest first).
TYPICAL_SECONDS: dict[str, float] = {c.stem: c.typical_s for c in CHAPTERS if c.typical_s}
#: Chapters that load the routers others train: stem -> those chapters.
AFTER: dict[str, tuple[str, ...]] = {c.stem: c.after for c in CHAPTERS if c.after}
#: Chapters that run after every other chapter of a profile.
RUN_LAST: tuple[str, ...] = tuple(c.stem for c in CHAPTERS if c.run_last)
#: What chapters need beyond the repository: stem -> ``data:X`` / ``model:Y``.
REQUIRES: dict[str, tuple[str, ...]] = {c.stem: c.requires for c in CHAPTERS if c.requires}
#: The chapters that reproduce the paper's artifacts on simulated or your own records.
PAPER_CHAPTERS: tuple[str, ...] = tuple(c.stem for c in CHAPTERS if c.artifacts)


def chapter(stem: str) -> Chapter:
    """The registry entry of ``stem`` (KeyError naming the known stems otherwise)."""
    try:
        return BY_STEM[stem]
    except KeyError:
        raise KeyError(f"no chapter {stem!r}; chapters: {', '.join(STEMS)}") from None


def chapter_module(stem: str) -> ModuleType | None:
    """The module of chapter ``stem`` (``racer_lib.paper.chapters.<stem without its number>``),
    imported when first asked for; ``None`` for a chapter without one (the report, chapter 17)."""
    name = f"racer_lib.paper.chapters.{stem[3:]}"
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def claims(stems: Iterable[str] = STEMS) -> tuple[Claim, ...]:
    """Every claim the chapters ``stems`` declare (their modules' ``CLAIMS``), chapter by chapter
    in reading order: what the reproduction report decides. A new claim is one entry in its
    chapter's module."""
    found: list[Claim] = []
    for stem in stems:
        module = chapter_module(stem)
        found += getattr(module, "CLAIMS", ()) if module is not None else ()
    return tuple(found)
