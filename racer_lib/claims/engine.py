"""The engine that decides a list of claims on a results folder: a claim's rule
(:mod:`racer_lib.claims.rules`) evaluated on the CSVs a chapter wrote, and the status that
follows (:mod:`racer_lib.claims.statuses`) from the rule's outcome, the quantities it read and
the "given" table passed in (:mod:`racer_lib.claims.given`; the paper's is
:data:`racer_lib.paper.given.GIVEN`), and the records' provenance.

Each chapter module declares its claims (``CLAIMS``) and decides them with it while it runs
(:func:`rule_findings`, :func:`evaluate_claim`); the reproduction report
(:mod:`racer_lib.paper.report`) gathers what every chapter's claims decided (:func:`decide_all`).
A chapter never imports the report (an import-linter contract in ``pyproject.toml``), so a page
and the report cannot disagree and neither stands above the other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from racer_lib.claims import given as _given
from racer_lib.claims.families import Family
from racer_lib.claims.given import Given
from racer_lib.claims.rules import (
    EMERGENT_KINDS,
    Claim,
    Difference,
    Equivalence,
    NotAvailable,
    Outcome,
)
from racer_lib.claims.statuses import (
    NOT_REPRODUCED,
    NOT_REPRODUCIBLE,
    VERDICT_COLUMNS,
    VERIFIED,
    status_of,
)
from racer_lib.evaluation import verdicts
from racer_lib.evaluation.verdicts import HOLDS, Verdict, sensitivity

__all__ = [
    "NOT_GIVEN_LEVEL",
    "RATE_REPLICATIONS",
    "claim_rates",
    "decide",
    "decide_all",
    "emergent",
    "evaluate_claim",
    "family_of",
    "rule_findings",
    "sensitivity_of",
    "status_odds",
]


#: The fields of a claim's verdict the report keeps as columns.
_VERDICT_FIELDS = ("effect", "lo", "hi", "sesoi", "p", "n", "test")


def emergent(claim: Claim, outcome: Outcome, given: Iterable[Given]) -> bool:
    """Whether a decided claim is evidence about the method: a comparison or finding (not a
    level, an identity or a reading) that the simulator was not given (``given``) on simulated
    records, or any such claim on other records."""
    if claim.rule.kind not in EMERGENT_KINDS:
        return False
    if outcome.provenance != "simulated":
        return True
    return not _given.given_by(claim.chapter, outcome.reads, given)


#: Why a level of a quantity the simulator was not given cannot be compared with the number a
#: claim states, on simulated records (the paper's own text: ``racer_lib.paper.given``).
NOT_GIVEN_LEVEL = (
    "a number of a quantity the simulator was not given: comparing it needs the records the "
    "number came from"
)


def decide(
    claim: Claim, outcome: Outcome, given: Iterable[Given], level_reason: str = NOT_GIVEN_LEVEL
) -> tuple[str, str]:
    """``(status, reason)`` of a claim whose rule gave ``outcome``, the simulator having been
    given ``given`` (see :mod:`racer_lib.claims.statuses`); ``level_reason``: why a level of a
    quantity it was not given is not reproducible here."""
    decision = outcome.decision
    if claim.rule.kind == "identity":
        return (VERIFIED, "") if decision == HOLDS else (NOT_REPRODUCED, "a numerical check failed")
    note = outcome.verdict.note if outcome.verdict is not None else ""
    why_not = "; ".join(t for t in (outcome.reason, note) if t)
    if outcome.provenance != "simulated":
        return status_of(decision, False, outcome.provenance), why_not
    params = _given.given_by(claim.chapter, outcome.reads, given)
    level = claim.rule.kind == "level"
    if not params:
        if level:
            return NOT_REPRODUCIBLE, level_reason
        return status_of(decision, False, outcome.provenance), why_not
    why = "the simulator was given it: " + _given.describe(params)
    status = status_of(decision, True, outcome.provenance, level)
    if level and outcome.miss:
        return status, f"{why}; calibration {outcome.miss}"
    if status == NOT_REPRODUCED:
        return status, f"{why}, yet it does not hold on the simulator's records"
    return status, why


def sensitivity_of(claim: Claim, verdict: Verdict) -> tuple[float, float]:
    """``(power, mde)`` of a comparison claim's test at this build's seeds and spread
    (:func:`racer_lib.evaluation.verdicts.sensitivity`): the power at the effect its quantity
    expects (:meth:`racer_lib.claims.data.Effect.expected`, the paper's), and the minimum
    detectable effect in the claim's unit; NaN for a claim with no stated effect."""
    rule = claim.rule
    effect = getattr(rule, "effect", None)
    if effect is None:
        return math.nan, math.nan
    if isinstance(rule, Equivalence):
        return sensitivity(verdict, 1, rule.boundary(), 0.0, equivalence=True)
    if rule.bound:
        # the paper's own overspend (Table 7: 2.5 %), half the bound it derives
        return sensitivity(verdict, rule.sign, rule.boundary(), effect.sesoi / 2)
    expected = rule.threshold + rule.sign * effect.expected()
    return sensitivity(verdict, rule.sign, rule.boundary(), expected)


def _sensitivity(claim: Claim, verdict: Verdict, folder: Path) -> tuple[float, float]:
    """``(power, mde)`` of a claim: :func:`sensitivity_of` for a comparison with a stated
    effect, else its family's (:meth:`racer_lib.claims.families.Family.sensitivity`: a
    chapter's finding, a rule of its own), NaN for a claim with neither."""
    if getattr(claim.rule, "effect", None) is not None:
        return sensitivity_of(claim, verdict)
    family = family_of(claim, folder)
    return family.sensitivity()[:2] if family is not None else (math.nan, math.nan)


#: Resampled data sets per claim on which :func:`claim_rates` measures a rule.
RATE_REPLICATIONS = 400


def family_of(claim: Claim, folder: Path) -> Family | None:
    """The claim's per-seed family on ``folder`` (:class:`racer_lib.claims.families.Family`):
    a comparison's members, or the family a chapter decided its finding on; None for a claim
    with none (a level, an identity, a check on one draw, a rule without a stated effect)."""
    rule = claim.rule
    if isinstance(rule, (Difference, Equivalence)) and rule.effect is None:
        return None
    family = getattr(rule, "family", None)
    return family(Path(folder)) if family is not None else None


def _at_edge(x: np.ndarray, edge: float, side: int) -> np.ndarray:
    """``x`` shifted so that neither its mean nor its median lies beyond ``edge`` on the claimed
    ``side`` and the one further that way sits on it: the least favourable null of a rule that
    decides a sample on its mean, or on its median when skewed
    (:func:`racer_lib.evaluation.verdicts.skewed`)."""
    location = max(float(x.mean()), float(np.median(x)), key=lambda m: side * m)
    return x - location + edge


def claim_rates(
    claim: Claim, folder: Path, replications: int = RATE_REPLICATIONS, seed: int = 0
) -> dict[str, Any] | None:
    """A claim's rule measured on data sets built from this build's own per-seed values (its
    family, :func:`family_of`; each member's seeds resampled with replacement, ``seed`` drawing
    them): its false-positive rate under the least favourable null (in turn each of the
    family's nulls, :meth:`~racer_lib.claims.families.Family.nulls`: the members that make the
    claim false shifted to their boundary, at the SESOI, or for an equivalence at one of its
    margins, so that neither their mean nor their median lies beyond it (:func:`_at_edge`);
    the others re-centred far on the claimed side, or for an equivalence at no difference), the
    same with the members' means alone at the boundary (their medians may lie beyond: the null
    of the mean, which no test of a resample that misses a few outlying seeds can hold), and
    its power with every member re-centred at the effect it expects (the paper's). Returns
    ``fpr_hits``, ``fpr_mean_hits``, ``power_hits`` (None where a member states no effect),
    ``trials``, ``members``, ``seeds`` and ``nulls``; None for a claim with no per-seed
    family."""
    family = family_of(claim, folder)
    if family is None or not family.members:
        return None
    data = family.values()
    tests = {m.key: m.test for m in family.members}
    rng = np.random.default_rng(seed)
    nulls = family.nulls()
    spread = 10 * max(float(np.ptp(x)) + 1 for x in data.values())

    def draw(x: np.ndarray, centre: float) -> np.ndarray:
        return rng.choice(x - x.mean(), size=x.size) + centre

    def beyond(t) -> float:
        """Far on the claimed side, where a member holds whatever the resample (inside an
        equivalence's margin: at no difference)."""
        return 0.0 if t.sign == 0 else t.boundary + t.sign * spread

    powered = all(np.isfinite(t.expected) for t in tests.values())
    fpr = fpr_mean = power = 0
    for r in range(replications):
        at = nulls[r % len(nulls)]
        flip = (r // len(nulls)) % 2  # an equivalence's null alternates between its margins
        null, null_mean = {}, {}
        for key, x in data.items():
            t = tests[key]
            if key not in at:
                null[key] = null_mean[key] = draw(x, beyond(t))
                continue
            edge = -t.boundary if t.sign == 0 and flip else t.boundary
            # the claimed side at this edge: above it, or for an equivalence inside the margin
            side = (1 if edge < 0 else -1) if t.sign == 0 else t.sign
            shifted = _at_edge(x, edge, side)
            null[key] = draw(shifted, shifted.mean())
            null_mean[key] = draw(x, edge)
        fpr += family.holds(null, at)
        fpr_mean += family.holds(null_mean, at)
        if powered:
            power += family.holds({k: draw(x, tests[k].expected) for k, x in data.items()})
    return {
        "fpr_hits": int(fpr),
        "fpr_mean_hits": int(fpr_mean),
        "power_hits": int(power) if powered else None,
        "trials": int(replications),
        "members": len(data),
        "seeds": int(min(x.size for x in data.values())),
        "nulls": len(nulls),
    }


def status_odds(
    claim: Claim,
    folders: Sequence[Path],
    n_seeds: int,
    replications: int = RATE_REPLICATIONS,
    seed: int = 0,
) -> dict[str, float] | None:
    """How often a claim's rule would reach each decision at ``n_seeds`` replicate seeds, if
    the seeds behaved as those the builds in ``folders`` wrote for it (its family's per-seed
    values, :func:`family_of`, pooled, each build a different master seed, so no seed is
    counted twice), redrawn :data:`RATE_REPLICATIONS` times in two stages: a world drawn from
    the pool with replacement (the pool's own effect is an estimate: a claim whose pooled
    effect lies near its rule's edge stays unsettled at any count), then ``n_seeds`` seeds
    drawn from that world, jointly across the members where every member has the same seeds.
    The share of each decision (``holds``, ``fails``, ``inconclusive``) and ``pooled``, the
    seeds in the pool. A planning estimate for choosing a chapter's seed count on tuning
    builds (``make bench-seed-plan``), never evidence for the claim: its pool is the builds it
    then decides. None for a claim with no per-seed family."""
    families = [family_of(claim, Path(folder)) for folder in folders]
    if not families or any(f is None or not f.members for f in families):
        return None
    pools: dict[tuple[str, str], list[np.ndarray]] = {}
    for fam in families:
        for key, x in fam.values().items():
            pools.setdefault(key, []).append(x)
    data = {k: np.concatenate(v) for k, v in pools.items()}
    family = families[0]
    sizes = {x.size for x in data.values()}
    rng = np.random.default_rng(seed)
    counts = {verdicts.HOLDS: 0, verdicts.FAILS: 0, verdicts.INCONCLUSIVE: 0}
    for _ in range(replications):
        # two stages: the pool is itself a sample, so each redraw first draws a world as
        # uncertain as the pool (a resample of it), then the build's n_seeds from that world
        if len(sizes) == 1:  # the seeds are the members' common unit: drawn together
            world = rng.integers(0, min(sizes), min(sizes))
            idx = world[rng.integers(0, world.size, n_seeds)]
            drawn = {k: x[idx] for k, x in data.items()}
        else:
            drawn = {
                k: rng.choice(rng.choice(x, size=x.size), size=n_seeds) for k, x in data.items()
            }
        counts[family.decide(drawn).decision] += 1
    shares = {k: v / replications for k, v in counts.items()}
    return {**shares, "pooled": int(min(sizes))}


def evaluate_claim(
    claim: Claim,
    folder: Path | None,
    ran: bool,
    profile: str,
    given: Iterable[Given],
    level_reason: str = NOT_GIVEN_LEVEL,
) -> dict[str, Any]:
    """One row of the report (:data:`racer_lib.paper.report.REPORT_COLUMNS`): ``claim`` decided
    on its chapter's results ``folder`` (``ran``: the chapter is in ``profile``), the
    simulator having been given ``given``."""
    row = {
        "artifact": claim.artifact,
        "claim": claim.claim,
        "build_value": "",
        "robustness": "",
        "rule": claim.rule.kind,
        "provenance": "",
        "chapter": claim.chapter,
        "link": f"{claim.chapter}.html",
        "csv": "",
        "unit": getattr(claim.rule, "unit", ""),
    }
    if not ran:
        reason = f"chapter {claim.chapter} is not in profile {profile}"
        return row | {"status": NOT_REPRODUCIBLE, "reason": reason}
    if folder is None or not folder.is_dir():
        reason = (
            f"chapter {claim.chapter} left no results in profile {profile} (not run, or failed)"
        )
        return row | {"status": NOT_REPRODUCIBLE, "reason": reason}
    try:
        outcome = claim.rule.evaluate(folder)
    except NotAvailable as err:
        return row | {"status": NOT_REPRODUCIBLE, "reason": str(err)}
    given = tuple(given)
    status, reason = decide(claim, outcome, given, level_reason)
    verdict = outcome.verdict
    if verdict is not None:
        row |= {k: getattr(verdict, k) for k in _VERDICT_FIELDS}
        row |= dict(zip(("power", "mde"), _sensitivity(claim, verdict, folder)))
    return row | {
        "emergent": emergent(claim, outcome, given),
        "build_value": outcome.value,
        "status": status,
        "reason": reason,
        "provenance": outcome.provenance,
        "csv": f"{claim.chapter}/{outcome.csv}",
    }


def decide_all(
    claims: Iterable[Claim],
    results_root: str | Path,
    ran: Iterable[str],
    profile: str,
    given: Iterable[Given],
    level_reason: str = NOT_GIVEN_LEVEL,
) -> list[dict[str, Any]]:
    """Every claim of ``claims`` decided on its chapter's folder under ``results_root`` (one
    folder per chapter stem; ``ran``: the stems the profile ran), one row each
    (:func:`evaluate_claim`), in the order of ``claims``."""
    root, ran, given = Path(results_root), set(ran), tuple(given)
    return [
        evaluate_claim(c, root / c.chapter, c.chapter in ran, profile, given, level_reason)
        for c in claims
    ]


def rule_findings(
    claims: Iterable[Claim], folder: str | Path, kinds: Sequence[str], basis: str
) -> list[dict[str, Any]]:
    """The claims of ``claims`` (a chapter's ``CLAIMS``) whose rule is of one of ``kinds``,
    decided by the report's own rules on the CSVs in ``folder`` (a chapter's results folder
    while it runs), as findings rows for :func:`racer_lib.claims.statuses.add_status`:
    ``finding`` (the claim),
    ``key`` (its name in the simulator-sensitivity chapter), ``observed`` (the rule's value),
    the verdict's columns and ``basis``. So a page and the report cannot disagree. A claim
    this run cannot test (a budget or β it left out) is left out."""
    rows = []
    for claim in claims:
        if claim.rule.kind not in kinds:
            continue
        try:
            outcome = claim.rule.evaluate(Path(folder))
        except NotAvailable:
            continue
        verdict = outcome.verdict.columns()
        rows.append(
            {
                "finding": claim.claim,
                "key": claim.sensitivity,
                "observed": outcome.value,
                **{k: verdict[k] for k in VERDICT_COLUMNS},
                "basis": basis,
            }
        )
    return rows
