"""What a simulator was given, as a mechanism: a :class:`Given` parameter fixes :class:`Quantity`
entries (a CSV of a chapter, its columns, rows and, for a findings CSV, the keys its chapter's
code writes beside the findings, never their texts), and a claim whose rule read (:class:`Read`)
one of them is decided "by construction" on simulated records (:func:`given_by`). The table of
what the paper's simulator was given is the paper's (:data:`racer_lib.paper.given.GIVEN`),
passed in.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Given", "Quantity", "Read", "describe", "given_by", "meets"]


@dataclass(frozen=True)
class Quantity:
    """A quantity a chapter computes: a CSV of ``chapter`` (a name or a glob), its ``columns``
    (any column when empty), the rows where each column of ``where`` takes one of its values
    (every row when empty), and for a findings CSV the findings whose ``key`` (the column the
    chapter's code writes, :data:`racer_lib.claims.rules.FINDING_KEY`) is one of ``findings``
    (any when empty)."""

    chapter: str
    csv: str
    columns: tuple[str, ...] = ()
    where: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    findings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Read:
    """What a rule read from its chapter's folder: the CSV's name, the ``columns``, the row
    selection ``where`` (column -> value or list of values) and, for a findings CSV, the
    ``keys`` of the rows it matched."""

    csv: str
    columns: tuple[str, ...] = ()
    where: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Given:
    """A calibrated ``parameter`` of :mod:`racer_lib.records.simulate` (``"JUDGES.rho"``: the
    field ``rho`` of each judge; ``"CELLS.gain"``: of each cell; ``"KAPPA"``: a module
    constant), what it sets (``sets``) and the quantities it fixes."""

    parameter: str
    sets: str
    fixes: tuple[Quantity, ...]


def _values(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list | tuple) else [value])]


def meets(chapter: str, read: Read, quantity: Quantity) -> bool:
    """Whether ``read`` (from ``chapter``'s folder) reads ``quantity``: the same chapter, a CSV
    the quantity names, a column of it, rows among its rows, and a finding it names."""
    if chapter != quantity.chapter or not fnmatch.fnmatch(read.csv, quantity.csv):
        return False
    if quantity.columns and not set(read.columns) & set(quantity.columns):
        return False
    for column, allowed in quantity.where.items():
        if column not in read.where:
            return False
        if not set(_values(read.where[column])) <= set(_values(allowed)):
            return False
    if quantity.findings:
        return bool(set(quantity.findings) & set(read.keys))
    return True


def given_by(chapter: str, reads: Iterable[Read], given: Iterable[Given]) -> list[Given]:
    """The parameters of ``given`` that fix a quantity of ``reads`` (what a claim's rule read
    from ``chapter``'s folder), in the order of ``given``: empty when the claim's numbers
    emerge from the records rather than being given to the simulator."""
    reads = list(reads)
    return [g for g in given if any(meets(chapter, r, q) for r in reads for q in g.fixes)]


def describe(params: Iterable[Given]) -> str:
    """``params`` as the report's reason names them: ``simulate.JUDGES.rho (how often ...)``."""
    return "; ".join(f"simulate.{g.parameter} ({g.sets})" for g in params)
