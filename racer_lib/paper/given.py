"""What the simulator was given: each parameter of :mod:`racer_lib.records.simulate` that the
chapters' simulated records inherit (named as there: a field of its ``JUDGES`` or ``CELLS``
tables, or a module constant) and the quantities of the chapters' result CSVs it fixes, declared
once (:data:`GIVEN`).

A parameter *fixes* a quantity when changing the parameter moves the quantity, whatever else is
drawn: an endpoint's accuracy follows the judge's calibrated accuracy, a subset's cost ratio its
cell's ratio, and a router's cost after a shift follows the ratio of the two subsets' cost ratios
(a policy that meets its budget on the costlier subset meets it on the cheaper one at any
reasoning rate). Every entry is backed by a test that changes the parameter and sees each quantity
it lists follow, and a quantity it does not list stay put within sampling noise
(``tests/test_given.py``, which also fails when an entry or a quantity has no such test).

A claim of the reproduction report is ``by construction`` on simulated records exactly when a
quantity its rule read (:class:`Read`: a CSV of the claim's chapter, the columns, the rows, and
for a findings CSV the keys of the findings) meets a quantity declared here
(:func:`given_by`); the status follows in :mod:`racer_lib.paper.report` and, for a chapter's
own findings, :func:`racer_lib.paper.claims.add_status`. Nothing else decides it: a claim
carries no status and a finding no flag.

What is not declared here emerges from training routers on the records (every router's accuracy,
every comparison of routers, a router's cost where no ratio of the simulator bounds it): the
simulator is calibrated to the judges' published aggregates, never to a router's result.
"""

from __future__ import annotations

from collections.abc import Iterable

from racer_lib.claims import given as _given
from racer_lib.claims.given import Given, Quantity, Read, describe, meets
from racer_lib.paper import registry as ch
from racer_lib.paper.files import (
    ABLATION_RUNS_CSV,
    AGREEMENT_CSV,
    DOMAINS_CSV,
    FINDINGS_GLOB,
    LLAMA_RUNS_CSV,
    SELF_ROUTING_CSV,
    STATISTICS_CSV,
)

__all__ = ["GIVEN", "NOT_GIVEN_LEVEL", "Given", "Quantity", "Read", "describe", "given_by", "meets"]

FINDINGS = FINDINGS_GLOB
#: The keys of chapter 11's three findings (its ``KEY_*``): self-routing's share of "yes"
#: answers fixes each. A quantity names a finding by the key its chapter's code writes beside
#: it (``tests/test_claims.py`` checks each key is one a chapter module defines).
SELF_ROUTING_FINDINGS = ("reasons_always", "accuracy_alike", "cost_alike")
#: Chapter 08's first scenario (``racer_lib.paper.shift.CHEAPER``, its claims' too): trained on
#: Magpie Ultra, tested on OffsetBias, whose reasoning is relatively cheaper (``CELLS.ratio``).
CHEAPER_SHIFT = "(a) cheaper shift"


def _endpoint(mode: str, column: str) -> tuple[Quantity, ...]:
    """The quantities a judge's accuracy of one mode fixes (``column``: of agreement tables)."""
    return (
        Quantity(ch.REASONING, AGREEMENT_CSV, (column,)),
        Quantity(ch.SELF_ROUTING, SELF_ROUTING_CSV, (f"acc_all_{mode}",)),
        Quantity(ch.LLAMA, LLAMA_RUNS_CSV, (f"all_{mode}_accuracy",)),
        Quantity(ch.LLMBAR_JUDGES, FINDINGS, findings=("lowers",)),
    )


#: Every parameter of the simulator that fixes a quantity of a chapter, and those quantities
#: (each backed by a perturbation test in ``tests/test_given.py``).
GIVEN: tuple[Given, ...] = (
    Given(
        "JUDGES.acc_instruct",
        "each judge's All-Instruct accuracy on the training mixture, from the paper's tables",
        _endpoint("instruct", "acc_instruct"),
    ),
    Given(
        "JUDGES.acc_reasoning",
        "each judge's All-Reasoning accuracy on the training mixture, from the paper's tables",
        _endpoint("reasoning", "acc_reasoning"),
    ),
    Given(
        "JUDGES.cost_ratio",
        "each judge's cost ratio of reasoning on the training mixture, from the paper's tables",
        (
            Quantity(ch.SELF_ROUTING, SELF_ROUTING_CSV, ("cost_all_reasoning",)),
            Quantity(ch.LLAMA, LLAMA_RUNS_CSV, ("all_reasoning_cost",)),
            # a subset's ratio is the cell's q_c times the judge's scale k_j, solved from it
            Quantity(ch.ROBUSTNESS, STATISTICS_CSV, ("cost_ratio",)),
        ),
    ),
    Given(
        "JUDGES.rho",
        "how often each judge's two modes agree, more for larger models",
        (
            Quantity(ch.REASONING, FINDINGS, findings=("headroom",)),
            Quantity(ch.LLMBAR_JUDGES, FINDINGS, findings=("minority",)),
        ),
    ),
    Given(
        "KAPPA",
        "how much the two modes' errors move apart with the pair's need to reason",
        (Quantity(ch.LLMBAR_JUDGES, FINDINGS, findings=("minority",)),),
    ),
    Given(
        "JUDGES.self_route",
        "each judge's share of 'yes' answers to the self-routing prompt, from the paper's Table 9",
        (
            Quantity(ch.SELF_ROUTING, FINDINGS, findings=SELF_ROUTING_FINDINGS),
            Quantity(ch.SELF_ROUTING, SELF_ROUTING_CSV, ("reasoning_fraction",)),
        ),
    ),
    Given(
        "CELLS.gain",
        "each cell's reasoning gain: math and coding gain, safety and knowledge do not",
        (
            Quantity(ch.MOTIVATION, FINDINGS, findings=("fig1a_gains",)),
            # the benchmarks' cells' gains set reasoning's accuracy there (§2.1's ΔAccuracy)
            Quantity(ch.REASONING, AGREEMENT_CSV, ("acc_reasoning",)),
            Quantity(ch.REASONING, FINDINGS, findings=("fig2_gains",)),
            Quantity(ch.REASONING, FINDINGS, findings=("fig2_per_token",)),
            Quantity(ch.LLMBAR_JUDGES, FINDINGS, findings=("cell_le0",)),
        ),
    ),
    Given(
        "CELLS.ratio",
        "each cell's cost ratio of reasoning, the Skywork subsets' from the paper's Table 1",
        (
            Quantity(ch.ROBUSTNESS, STATISTICS_CSV, ("cost_ratio",)),
            Quantity(ch.REASONING, FINDINGS, findings=("fig2_per_token",)),
            # OffsetBias's ratio below Magpie Ultra's: a router at its budget on the second
            # stays within it on the first at any reasoning rate (Fig. 3(a))
            Quantity(
                ch.ROBUSTNESS,
                ABLATION_RUNS_CSV,
                ("cost", "violated"),
                {"scenario": (CHEAPER_SHIFT,)},
            ),
            Quantity(ch.ROBUSTNESS, FINDINGS, findings=("cheaper_within",)),
        ),
    ),
    Given(
        "CELLS.size",
        "each cell's number of pairs, from the paper's Tables 1 and 4",
        (
            Quantity(ch.ROBUSTNESS, STATISTICS_CSV, ("pairs",)),
            Quantity(ch.MOTIVATION, DOMAINS_CSV),
        ),
    ),
)


#: Why a level of a quantity the simulator was not given cannot be compared with the paper's
#: number on simulated records (the engine's reason for such a claim).
NOT_GIVEN_LEVEL = (
    "the paper's number of a quantity the simulator was not given (it emerges from training "
    "routers): comparing it needs the paper's own judge records (the Qwen3 / Llama pairs judged "
    "on a GPU, profile paper); the simulator is calibrated to the judges, not to a router"
)


def given_by(chapter: str, reads: Iterable[Read], given: Iterable[Given] = GIVEN) -> list[Given]:
    """:func:`racer_lib.claims.given.given_by` on this table (:data:`GIVEN`)."""
    return _given.given_by(chapter, reads, given)
