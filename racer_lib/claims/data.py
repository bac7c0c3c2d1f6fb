"""What the claim rules share (:mod:`racer_lib.claims.rules`): the tolerances, a quantity's
smallest effect of interest (:class:`Effect`), the outcome of a rule, reading a chapter's CSV,
the rows of a comparison, one value per replicate seed, and a verdict as the report's text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from racer_lib.claims.given import Read
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import FAILS, HOLDS, Verdict

#: Tolerances of the level rules (their TOST margins): accuracy in points, cost ratios relative.
ACCURACY_TOLERANCE = 1.0
RATIO_TOLERANCE = 0.05
#: The column of a run CSV that names its replicate seed.
SEED = "seed"


@dataclass(frozen=True)
class Effect:
    """A quantity's smallest effect of interest: ``sesoi`` in ``unit`` (the claim's unit, as
    the report shows it), and ``reason``, how it follows from the paper (or why a practical
    threshold stands in for a number the paper does not give). The paper's effects are
    :mod:`racer_lib.paper.effects`."""

    quantity: str
    sesoi: float
    unit: str
    reason: str
    paper_effect: float = float("nan")

    def expected(self) -> float:
        """The effect at which a claim's power is stated: the paper's (``paper_effect``), or
        twice the SESOI where the paper prints no number."""
        return self.paper_effect if self.paper_effect == self.paper_effect else 2 * self.sesoi

    def text(self) -> str:
        """``0.15 pts``: the SESOI as the report shows it beside an effect."""
        return f"{self.sesoi:.3g}{self.unit}"


class NotAvailable(Exception):
    """The claim cannot be evaluated on this build; the message is the reason."""


@dataclass(frozen=True)
class Outcome:
    """What a rule found: the build's value as text, the protocol's ``verdict`` (``None`` for
    a numerical identity), the provenance of the rows read, the CSV, what it read (``reads``),
    the basis a findings CSV gives (``reason``) and, for a level that misses its tolerance, by
    how much (``miss``). ``holds``: the identity's check (identities only)."""

    value: str
    verdict: Verdict | None
    provenance: str
    csv: str
    reads: tuple[Read, ...] = ()
    reason: str = ""
    miss: str = ""
    check: bool = False

    @property
    def decision(self) -> str:
        if self.verdict is None:
            return HOLDS if self.check else FAILS
        return self.verdict.decision


def read_csv(folder: Path, csv: str) -> tuple[pd.DataFrame, Path]:
    path = folder / csv
    if not path.is_file():
        raise NotAvailable(f"{folder.name} wrote no {csv}")
    return pd.read_csv(path), path


def select(table: pd.DataFrame, where: Mapping[str, Any], path: Path) -> pd.DataFrame:
    """Rows where each column equals its value (a list or tuple: is one of them)."""
    mask = pd.Series(True, index=table.index)
    for name, wanted in where.items():
        if name not in table.columns:
            raise NotAvailable(f"{path.name} has no column {name!r}")
        col = table[name]
        options = list(wanted) if isinstance(wanted, list | tuple) else [wanted]
        if pd.api.types.is_numeric_dtype(col):
            hit = np.zeros(len(col), dtype=bool)
            for w in options:
                hit |= np.isclose(col.to_numpy(dtype=float), float(w))
            mask &= hit
        else:
            mask &= col.astype(str).isin([str(w) for w in options])
    return table[mask]


def provenance_of(rows: pd.DataFrame, default: str = "simulated") -> str:
    if "provenance" not in rows.columns:
        return default
    kinds = set(rows["provenance"].dropna().astype(str))
    return kinds.pop() if len(kinds) == 1 else "mixed"


def fmt(x: float) -> str:
    if abs(x) >= 1000 and float(x).is_integer():
        return f"{x:.0f}"  # a count (pairs)
    return f"{x:.3g}" if abs(x) < 0.01 and x != 0 else f"{x:.2f}"


def per_seed(rows: pd.DataFrame, column: str, by: tuple[str, ...] = ()) -> pd.DataFrame:
    """``column`` averaged within each replicate seed (and each group of ``by``): one value per
    seed, so that runs sharing a record draw count once. Rows without a seed column form one
    replicate."""
    keys = [*by, SEED] if SEED in rows.columns else list(by)
    if not keys:
        return pd.DataFrame({column: [rows[column].mean()]})
    return rows.groupby(keys, sort=False)[column].mean().reset_index()


def _member_name(key: Any, by: tuple[str, ...]) -> str:
    values = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{k} {fmt(v) if isinstance(v, float) else v}" for k, v in zip(by, values))


def decide_members(
    d: pd.DataFrame, by: tuple[str, ...], test: Callable[[np.ndarray], Verdict]
) -> tuple[Verdict, dict[str, Verdict]]:
    """The verdict of ``test`` on the per-seed values of column ``d`` of ``d``: over all seeds
    when ``by`` is empty, else per member of ``by`` with Holm's correction
    (:func:`racer_lib.evaluation.verdicts.every`)."""
    if not by:
        x = per_seed(d, "d")["d"].to_numpy(dtype=float)
        return test(x), {}
    members = {
        _member_name(key, by): test(group["d"].to_numpy(dtype=float))
        for key, group in per_seed(d, "d", by).groupby(list(by), sort=False)
    }
    return verdicts.every(members), members


def verdict_text(verdict: Verdict, unit: str = "", members: Mapping[str, Verdict] = ()) -> str:
    """``+4.81 [+4.45, +5.16] pts, n = 10; one-sided t (> 0), p = 0.001`` (a family: the
    weakest member, named, and each member's effect)."""
    text = verdict.interval_text(unit)
    if math.isfinite(verdict.p):
        text += f"; {verdict.test}, p = {verdict.p:.2g}"
    else:
        text += f"; {verdict.test}"
    if verdict.note:
        text += f" ({verdict.note})"
    if members:
        text += "; " + ", ".join(f"{k}: {v.effect:+.2f}" for k, v in members.items())
    return text
