"""A claim decided over a family of per-seed tests, kept with the values it was decided on, so
that the engine can redraw it (:func:`racer_lib.claims.engine.claim_rates`,
:func:`racer_lib.claims.engine.status_odds`) whether the report's generic rules or a chapter's
own code decided it.

A :class:`Family` is a list of :class:`Member` s, each one replicate-seed sample with its own
:class:`Test` (directional or equivalence, :mod:`racer_lib.evaluation.verdicts`), grouped in
parts: within a part the members are joined by ``every`` (an intersection-union test,
:func:`~racer_lib.evaluation.verdicts.every`) or ``most`` (a majority after Holm,
:func:`~racer_lib.evaluation.verdicts.most`); several parts are a
:func:`~racer_lib.evaluation.verdicts.conjunction`. A chapter decides its finding with
:meth:`Family.decide` and writes the family beside it (:meth:`Family.to_json`, the findings
CSV's :data:`PER_SEED` column), so the page, the report and the redraws share one decision.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import ALPHA, HOLDS, INCONCLUSIVE, MIN_SEEDS, Verdict

__all__ = ["EVERY", "MOST", "PER_SEED", "Family", "Member", "Test", "from_rows", "joined"]

#: How a part joins its members (:class:`Family`).
EVERY, MOST = "every", "most"
_COMBINE = {EVERY: verdicts.every, MOST: verdicts.most}

#: The column of a findings CSV holding its finding's family as JSON (:meth:`Family.to_json`).
PER_SEED = "per_seed"


@dataclass(frozen=True)
class Test:
    """One member's test on its per-seed values. ``sign`` 1 or -1: the mean lies beyond
    ``threshold + sign * sesoi`` on that side (:func:`~racer_lib.evaluation.verdicts.directional`,
    a minimum-effect test); ``sign`` 0: it lies within ``±sesoi``, the margin
    (:func:`~racer_lib.evaluation.verdicts.equivalent`, TOST). ``expected``: the true mean at
    which the claim's power is stated (the paper's effect in the member's unit; NaN: none);
    ``shown``: the SESOI the verdict shows, where it differs from ``sesoi`` (a non-inferiority
    margin written as a threshold); ``overlap``: seeds that re-draw splits of one fixed set of
    pairs (the corrected resampled t of :func:`~racer_lib.evaluation.verdicts.directional`)."""

    sign: int = 1
    threshold: float = 0.0
    sesoi: float = 0.0
    expected: float = math.nan
    shown: float = math.nan
    min_n: int = MIN_SEEDS
    overlap: float = 0.0

    @property
    def boundary(self) -> float:
        """Where the test puts its null: the margin of an equivalence, else
        ``threshold + sign * sesoi``."""
        return self.sesoi if self.sign == 0 else self.threshold + self.sign * self.sesoi

    def decide(self, x) -> Verdict:
        """The test on one member's per-seed values ``x``."""
        if self.sign == 0:
            verdict = verdicts.equivalent(x, self.sesoi, self.min_n, overlap=self.overlap)
        else:
            verdict = verdicts.directional(
                x, self.sign, self.threshold, self.min_n, self.sesoi, overlap=self.overlap
            )
        return replace(verdict, sesoi=self.shown) if math.isfinite(self.shown) else verdict


@dataclass(frozen=True)
class Member:
    """One member of a family: its ``part``, its ``name`` in that part, its :class:`Test` and
    its per-seed ``values`` (one per replicate seed, in the order of the seeds)."""

    part: str
    name: str
    test: Test
    values: tuple[float, ...]

    @property
    def key(self) -> tuple[str, str]:
        return (self.part, self.name)


def _untested() -> Verdict:
    nan = math.nan
    return Verdict(nan, nan, nan, nan, 0, "no test", INCONCLUSIVE, "no member ran")


@dataclass(frozen=True)
class Family:
    """A claim's members (:class:`Member`) and how each part joins them (``combine``: part ->
    :data:`EVERY` or :data:`MOST`; a part not named joins by :data:`EVERY`). ``parts`` keeps
    the order of the parts, including one without members (decided inconclusive)."""

    members: tuple[Member, ...]
    combine: Mapping[str, str] = field(default_factory=dict)
    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = self.parts or tuple(dict.fromkeys(m.part for m in self.members))
        object.__setattr__(self, "parts", names)
        for part, how in self.combine.items():
            if how not in _COMBINE:
                raise ValueError(f"part {part!r}: combine must be one of {sorted(_COMBINE)}")

    def values(self) -> dict[tuple[str, str], np.ndarray]:
        """Each member's per-seed values, by :attr:`Member.key`."""
        return {m.key: np.asarray(m.values, dtype=float) for m in self.members}

    def verdicts(
        self, values: Mapping[tuple[str, str], np.ndarray] | None = None
    ) -> dict[str, dict[str, Verdict]]:
        """Each member's own verdict (before any correction), by part and name; on ``values``
        (by member key) in place of the family's own."""
        values = self.values() if values is None else values
        out: dict[str, dict[str, Verdict]] = {p: {} for p in self.parts}
        for m in self.members:
            out[m.part][m.name] = m.test.decide(values[m.key])
        return out

    def _part(self, part: str, members: Mapping[str, Verdict]) -> Verdict:
        if not members:
            return _untested()
        if len(members) == 1:
            return next(iter(members.values()))
        return _COMBINE[self.combine.get(part, EVERY)](members)

    def part_verdicts(self, found: Mapping[str, Mapping[str, Verdict]]) -> dict[str, Verdict]:
        """Each part's verdict from its members' (``found``, as :meth:`verdicts` gives them):
        joined by the part's ``combine``, a lone member as itself."""
        return {p: self._part(p, found.get(p, {})) for p in self.parts}

    def join(self, found: Mapping[str, Mapping[str, Verdict]]) -> Verdict:
        """The claim's verdict from its members' (``found``, as :meth:`verdicts` gives them):
        each part's members joined, the parts in a conjunction."""
        parts = self.part_verdicts(found)
        if not parts:
            return _untested()
        return next(iter(parts.values())) if len(parts) == 1 else verdicts.conjunction(parts)

    def decide(self, values: Mapping[tuple[str, str], np.ndarray] | None = None) -> Verdict:
        """The claim's verdict on ``values`` (by member key; the family's own by default)."""
        return self.join(self.verdicts(values))

    def holds(
        self, values: Mapping[tuple[str, str], np.ndarray], first: Iterable[tuple[str, str]] = ()
    ) -> bool:
        """Whether :meth:`decide` would hold on ``values``, testing the members of ``first``
        before the others and stopping at the first that settles it: a part joined by
        ``every`` holds only when each member holds on its own (no correction on that side),
        so one member short of it ends the count."""
        order = list(dict.fromkeys([*first, *(m.key for m in self.members)]))
        by_key = {m.key: m for m in self.members}
        most = {p for p in self.parts if self.combine.get(p, EVERY) == MOST}
        for key in order:
            if key[0] in most:
                continue
            if not by_key[key].test.decide(values[key]).p < ALPHA:
                return False
        if any(not any(m.part == p for m in self.members) for p in self.parts):
            return False
        for part in most:
            members = {m.name: m.test.decide(values[m.key]) for m in self.members if m.part == part}
            if self._part(part, members).decision != HOLDS:
                return False
        return True

    def nulls(self) -> list[tuple[tuple[str, str], ...]]:
        """The least favourable nulls, as the members placed at their boundary (the others far
        on the claimed side): for a part joined by ``every`` each member alone; for one joined
        by ``most`` (holds when more than half hold) each run of ``n - n // 2`` members in turn,
        the fewest whose absence leaves no majority."""
        out: list[tuple[tuple[str, str], ...]] = []
        for part in self.parts:
            keys = [m.key for m in self.members if m.part == part]
            if self.combine.get(part, EVERY) == MOST and len(keys) > 1:
                k = len(keys) - len(keys) // 2
                out += [
                    tuple(keys[(i + j) % len(keys)] for j in range(k)) for i in range(len(keys))
                ]
            else:
                out += [(key,) for key in keys]
        return out

    def sensitivity(self) -> tuple[float, float, str]:
        """``(power, mde, member)`` by Student's t at the family's own seeds and spread
        (:func:`racer_lib.evaluation.verdicts.sensitivity`): the power that the claim holds when
        each member's mean is its ``expected`` effect (the members taken as independent: the
        product over the ``every`` parts, the chance of a majority in a ``most`` part), and the
        minimum detectable effect of the weakest member (the largest p), named, in its unit.
        NaN where a member states no effect or ran no test. ``make bench-verdicts`` measures
        the power on resamples instead."""
        found = self.verdicts()
        power, weakest = 1.0, None
        for part in self.parts:
            chances = []
            for m in (m for m in self.members if m.part == part):
                v = found[part][m.name]
                t = m.test
                chance, mde = verdicts.sensitivity(
                    v, t.sign or 1, t.boundary, t.expected, t.sign == 0
                )
                if math.isnan(chance) and len(m.values) > 1 and np.ptp(m.values) == 0:
                    # no spread (a point on its chord in every seed): decided by where it sits
                    if t.sign == 0:
                        chance = float(abs(t.expected) < t.boundary)
                    else:
                        chance = float(t.sign * (t.expected - t.boundary) > 0)
                chances.append(chance)
                if weakest is None or not v.p <= weakest[0]:
                    weakest = (v.p, mde, f"{part}: {m.name}" if len(self.parts) > 1 else m.name)
            if self.combine.get(part, EVERY) == MOST and len(chances) > 1:
                power *= _majority(chances)
            else:
                power *= float(np.prod(chances)) if chances else math.nan
        if weakest is None:
            return math.nan, math.nan, ""
        return power, weakest[1], weakest[2]

    def to_json(self) -> str:
        """The family as one JSON text (:meth:`from_json` reads it back)."""
        return json.dumps(
            {
                "parts": list(self.parts),
                "combine": dict(self.combine),
                "members": [
                    {
                        "part": m.part,
                        "name": m.name,
                        **{k: _plain(getattr(m.test, k)) for k in Test.__dataclass_fields__},
                        "values": [_plain(v) for v in m.values],
                    }
                    for m in self.members
                ],
            },
            allow_nan=False,
        )

    @classmethod
    def from_json(cls, text: str) -> Family:
        """A family written by :meth:`to_json`; ``ValueError`` names what is missing."""
        data = json.loads(text)
        try:
            members = tuple(
                Member(
                    str(m["part"]),
                    str(m["name"]),
                    Test(**{k: _number(m[k]) for k in Test.__dataclass_fields__}),
                    tuple(_number(v) for v in m["values"]),
                )
                for m in data["members"]
            )
            return cls(members, dict(data["combine"]), tuple(data["parts"]))
        except (KeyError, TypeError) as err:
            raise ValueError(f"a family's JSON lacks {err}") from err


def _plain(value: float) -> float | None:
    """A number as JSON writes it (NaN as null)."""
    value = float(value)
    return value if math.isfinite(value) else None


def _number(value) -> float:
    return math.nan if value is None else value


def _majority(chances: list[float]) -> float:
    """The chance that more than half of independent events of the given chances occur."""
    dist = np.array([1.0])
    for p in chances:
        dist = np.convolve(dist, [1 - p, p])
    return float(dist[len(chances) // 2 + 1 :].sum())


def from_rows(part: str, rows: Mapping[str, Iterable[float]], test: Test) -> tuple[Member, ...]:
    """The members of one ``part`` with a common ``test``: each name of ``rows`` with its
    per-seed values (NaN dropped, as the tests drop them)."""
    out = []
    for name, values in rows.items():
        x = np.asarray(list(values), dtype=float)
        out.append(Member(part, str(name), test, tuple(x[np.isfinite(x)].tolist())))
    return tuple(out)


def joined(families: Iterable[Family]) -> Family:
    """Several families as one conjunction (a claim read from several findings rows): each
    family's parts kept, named ``row i: part`` when there is more than one."""
    families = list(families)
    if len(families) == 1:
        return families[0]
    members, combine, parts = [], {}, []
    for i, fam in enumerate(families):
        rename = {p: f"row {i + 1}: {p}" for p in fam.parts}
        members += [replace(m, part=rename[m.part]) for m in fam.members]
        combine |= {rename[p]: how for p, how in fam.combine.items()}
        parts += list(rename.values())
    return Family(tuple(members), combine, tuple(parts))
