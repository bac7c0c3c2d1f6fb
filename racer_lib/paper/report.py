"""The reproduction report (chapter ``01_reproduction_report``): every claim of the paper, one
row each, with this build's value and its status (:mod:`racer_lib.paper.claims`), decided from
the CSVs the other chapters wrote.

The claims are data of the chapters that test them (``CLAIMS`` of each chapter's module,
gathered through the chapter registry, :func:`racer_lib.paper.registry.claims`): each names its
artifact (table, figure or section of ``racer_paper.tex``), the paper's claim with its number
(:mod:`racer_lib.paper.numbers`), the chapter and a rule (:mod:`racer_lib.claims.rules`: a
difference, a level, a bound, an identity of the theory, a chapter's own finding, or a reading).

No claim declares its status; the engine (:mod:`racer_lib.claims.engine`, with the paper's
"given" table: :mod:`racer_lib.paper.engine`) computes it
(:data:`racer_lib.claims.statuses.STATUSES`) from the rule's outcome, the quantities it read and
the records' provenance:

* ``not reproducible here`` when the chapter did not run in the profile, a CSV or row is
  missing, the claim is a reading no rule decides, or it is a *level* (the paper's number) of
  a quantity the simulator was not given, on simulated records: such a number belongs to the
  paper's own judge records, which the build lacks;
* ``verified numerically`` (or ``not reproduced``) for an identity of the theory;
* on simulated records, a claim whose rule read a quantity the simulator was given
  (:func:`racer_lib.paper.given.given_by`) is ``by construction`` unless its test fails (then
  ``not reproduced``); a given level is ``by construction`` either way, with the
  calibration's miss in the reason;
* otherwise ``reproduced``, ``not reproduced`` or ``inconclusive`` as the rule's test, run by
  the book's protocol (:mod:`racer_lib.evaluation.verdicts`), decided; the row keeps the
  test's effect, interval, p-value and number of seeds.

The report also reads chapter 16's ``claim_robustness.csv`` (when that chapter ran) into a
column ``robustness``: how the verdict of a claim with a ``sensitivity`` key moves over the
simulator's uncalibrated choices.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from racer_lib.claims.rules import ACCURACY_TOLERANCE, RATIO_TOLERANCE, Claim
from racer_lib.claims.statuses import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, STATUSES
from racer_lib.evaluation import intervals
from racer_lib.evaluation.verdicts import ALPHA, MIN_SEEDS
from racer_lib.paper import files
from racer_lib.paper import registry as stems
from racer_lib.paper.effects import EFFECTS
from racer_lib.paper.engine import decide_all
from racer_lib.paper.evidence import claim_id

__all__ = [  # the tolerances are read from here by the report's chapter
    "ACCURACY_TOLERANCE",
    "ALPHA",
    "MIN_SEEDS",
    "RATIO_TOLERANCE",
    "STATUSES",
    "claims_views",
    "emergent_view",
    "headline",
    "prose_reads",
    "protocol_table",
    "linked",
    "report",
    "sources",
    "status_counts",
]


#: Columns of the report, in order (see :func:`report`).
REPORT_COLUMNS = (
    "artifact",
    "claim",
    "build_value",
    "status",
    "emergent",
    "effect",
    "lo",
    "hi",
    "sesoi",
    "unit",
    "power",
    "mde",
    "p",
    "n",
    "test",
    "robustness",
    "qualifier",
    "reason",
    "rule",
    "provenance",
    "chapter",
    "link",
    "csv",
)


def report(
    results_root: str | Path,
    profile: str,
    chapters: Iterable[str] | None = None,
    registry: Sequence[Claim] | None = None,
) -> pd.DataFrame:
    """The reproduction report: one row per claim the chapters declare
    (:func:`racer_lib.paper.registry.claims`, or ``registry``), decided from the CSVs under
    ``results_root`` (``results/<profile>``, one folder per chapter). ``chapters``: the stems
    the profile ran (default: every folder present); a claim of any other chapter is not
    reproducible here."""
    root = Path(results_root)
    ran = set(chapters) if chapters is not None else {p.name for p in root.glob("*") if p.is_dir()}
    texts, shares = robustness(root, ran), robustness_shares(root, ran)
    claims = stems.claims() if registry is None else tuple(registry)
    rows = decide_all(claims, root, ran, profile)
    for c, row in zip(claims, rows, strict=True):
        row["robustness"] = texts.get(c.sensitivity, "") if c.sensitivity else ""
        row["qualifier"] = qualifier(row, shares.get(c.sensitivity) if c.sensitivity else None)
    return pd.DataFrame(rows, columns=list(REPORT_COLUMNS))


#: The qualifier of a claim reproduced on simulated records that holds in fewer than half of
#: chapter 16's simulators: its status rests on the calibrated simulator's choices.
CALIBRATED_ONLY = "reproduced on the calibrated simulator only"


def qualifier(row: Mapping[str, Any], share: float | None) -> str:
    """:data:`CALIBRATED_ONLY` for a reproduced claim on simulated records that holds in
    fewer than half of the simulators chapter 16 re-ran it on (``share``), else empty."""
    if share is None or row.get("status") != REPRODUCED or row.get("provenance") != "simulated":
        return ""
    return CALIBRATED_ONLY if share < 0.5 else ""


def robustness_shares(results_root: str | Path, chapters: Iterable[str]) -> dict[str, float]:
    """Per key of chapter 16's ``claim_robustness.csv``, the share of its simulators in which
    the claim holds (empty when that chapter did not run)."""
    path = Path(results_root) / SENSITIVITY / ROBUSTNESS_CSV
    if SENSITIVITY not in set(chapters) or not path.is_file():
        return {}
    table = pd.read_csv(path)
    return {str(r["key"]): float(r["share"]) for r in table.to_dict("records")}


def headline(table: pd.DataFrame) -> pd.DataFrame:
    """The emergent claims of a :func:`report` table counted apart by the records they rest
    on (``simulated``, ``release``, ``generated``) and, on simulated records, reproduced
    claims that hold in most simulators apart from those reproduced on the calibrated
    simulator only: columns ``records``, ``reproduced``, ``calibrated_only``,
    ``not_reproduced``, ``inconclusive``."""
    emergent = table[table["emergent"].fillna(False).astype(bool)]
    rows = []
    for records in ("simulated", "release", "generated"):
        mine = emergent[emergent["provenance"] == records]
        only = mine["qualifier"].fillna("") == CALIBRATED_ONLY
        rows.append(
            {
                "records": records,
                "reproduced": int(((mine["status"] == REPRODUCED) & ~only).sum()),
                "calibrated_only": int(only.sum()),
                "not_reproduced": int((mine["status"] == NOT_REPRODUCED).sum()),
                "inconclusive": int((mine["status"] == INCONCLUSIVE).sum()),
            }
        )
    return pd.DataFrame(rows)


#: The simulator-sensitivity chapter and the CSV the report reads from it.
SENSITIVITY = stems.SENSITIVITY
ROBUSTNESS_CSV = files.ROBUSTNESS_CSV


def robustness_text(row: Mapping[str, Any]) -> str:
    """One row of ``claim_robustness.csv`` as the report's ``robustness`` column says it: the
    share of the simulators in which the claim holds and, beside it, the size of its effect
    over them: ``holds in 15 of 15 simulators (100 %); effect +3.11 pts at the median
    simulator (+1.34 to +4.90); depends most on kappa; flips at readable ≈ 0.15`` (or ``no
    flip in range``)."""
    simulators, holds_in = int(row["simulators"]), int(row["holds_in"])
    text = f"holds in {holds_in} of {simulators} simulators ({100 * float(row['share']):.0f} %)"
    effect = [float(row.get(f"effect_{k}", np.nan)) for k in ("median", "min", "max")]
    if all(np.isfinite(effect)):
        unit = row.get("unit")
        unit = f" {unit.strip()}" if isinstance(unit, str) and unit.strip() else ""
        text += (
            f"; effect {effect[0]:+.3g}{unit} at the median simulator "
            f"({effect[1]:+.3g} to {effect[2]:+.3g})"
        )
        if isinstance(row.get("effect_scope"), str) and row["effect_scope"]:
            text += f" {row['effect_scope']}"  # why its size is not the chapter's effect
    if isinstance(row.get("depends_most_on"), str) and row["depends_most_on"]:
        text += f"; depends most on {row['depends_most_on']}"
    flip = row.get("flip_threshold")
    if isinstance(flip, str) and flip:
        text += "; " + (flip if flip.startswith("no flip") else f"flips at {flip}")
    return text


def robustness(results_root: str | Path, chapters: Iterable[str]) -> dict[str, str]:
    """Per key of chapter 16's ``claim_robustness.csv`` (:data:`SENSITIVITY`), the text of
    :func:`robustness_text`; empty when that chapter is not among ``chapters`` or wrote no
    such CSV. A claim chapter 16 could not decide (its CSVs are not re-run there) has no row,
    so no robustness."""
    path = Path(results_root) / SENSITIVITY / ROBUSTNESS_CSV
    if SENSITIVITY not in set(chapters) or not path.is_file():
        return {}
    table = pd.read_csv(path)
    return {str(r["key"]): robustness_text(r) for r in table.to_dict("records")}


def sources(results_root: str | Path, chapters: Iterable[str]) -> pd.DataFrame:
    """What the report read: per chapter of the profile, its results folder (as
    ``<profile>/<stem>``, relative to the results root, ``results/`` by default, so that the
    table does not depend on where the build ran), its CSV files and the provenance of their
    rows."""
    root = Path(results_root)
    rows = []
    for stem in chapters:
        folder = root / stem
        csvs = sorted(folder.glob("*.csv")) if folder.is_dir() else []
        kinds: set[str] = set()
        for path in csvs:
            table = pd.read_csv(path, usecols=lambda c: c == "provenance")
            kinds |= set(table.get("provenance", pd.Series(dtype=str)).dropna().astype(str))
        rows.append(
            {
                "chapter": stem,
                "folder": f"{root.name}/{stem}",
                "csv_files": len(csvs),
                "provenances": ", ".join(sorted(kinds)) or "(none)",
            }
        )
    return pd.DataFrame(rows)


def status_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Claims per status of a :func:`report` table, every status of
    :data:`racer_lib.claims.statuses.STATUSES` listed (0 where none)."""
    counts = table["status"].value_counts()
    return pd.DataFrame({"status": STATUSES, "claims": [int(counts.get(s, 0)) for s in STATUSES]})


#: The columns of a claims table on the page, under the reader's names: the status and the
#: records' provenance are the table's caption, and ``rule``, ``link`` and ``csv`` stay in
#: ``claims.csv``.
_PAGE_COLUMNS = {
    "artifact": "artifact",
    "claim": "claim",
    "build_value": "this build",
    "qualifier": "qualifier",
    "robustness": "over simulators",
    "reason": "why",
    "chapter": "chapter",
}


def claims_views(table: pd.DataFrame) -> list[tuple[str, str | None, pd.DataFrame]]:
    """The claims of a :func:`report` table as the page shows them: one table per status (in
    the order of :data:`racer_lib.claims.statuses.STATUSES`) and provenance of the records (``None``
    where a claim read none), each ``(status, provenance, claims)`` with the page's columns
    (:data:`_PAGE_COLUMNS`, full texts) and no column that is empty on all its claims."""
    views = []
    for status in STATUSES:
        rows = table[table["status"] == status]
        for provenance in rows["provenance"].drop_duplicates():
            mine = (
                rows["provenance"].isna()
                if pd.isna(provenance)
                else (rows["provenance"] == provenance)
            )
            view = rows.loc[mine, list(_PAGE_COLUMNS)].rename(columns=_PAGE_COLUMNS)
            view = view.replace("", np.nan).dropna(axis=1, how="all").reset_index(drop=True)
            views.append((status, None if pd.isna(provenance) else provenance, view))
    return views


#: The least width of a text column of a claims table on the page (in em): without it the
#: browser gives nearly all the width to the longest cells (a build value listing every judge)
#: and wraps an artifact's name a few letters a line.
_PAGE_MIN_WIDTH = {"artifact": 5, "claim": 16, "over simulators": 10, "why": 12}


_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
_CELL = re.compile(r"<td>(.*?)</td>", re.S)


def _escaped(text: Any) -> str:
    """``text`` as pandas' ``to_html`` writes a cell (``&``, ``<`` and ``>`` escaped), its
    white space collapsed (pandas strips a cell's ends)."""
    text = " ".join(str(text).split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def linked(shown: str, table: pd.DataFrame, chapters: Iterable[str]) -> str:
    """``shown``, the HTML of a claims table as :func:`racer_lib.book.chapter.show` displays it
    (:func:`claims_views`, :func:`emergent_view`), with each claim linked to its evidence:
    ``link`` of ``table`` (its chapter's page and the anchor of the figure or table that is its
    evidence, :func:`racer_lib.paper.evidence.with_evidence`), on the chapter's name where the
    row has one, else on the artifact's; a chapter that did not run stays plain text. A row
    with the chapter's name is the claim's permalink: its id is
    :func:`racer_lib.paper.evidence.claim_id` and its artifact links to it. The text columns
    are at least :data:`_PAGE_MIN_WIDTH` wide."""
    ran = set(chapters)
    claims = {(_escaped(r["artifact"]), _escaped(r["claim"])): r for r in table.to_dict("records")}

    def row(m: re.Match) -> str:
        cells = _CELL.findall(m.group(1))
        r = claims.get(tuple(" ".join(c.split()) for c in cells[:2]))
        if r is None:
            return m.group(0)
        link = r["link"] if r["chapter"] in ran and isinstance(r["link"], str) else ""
        body, head = m.group(1), "<tr>"
        first = f"<td>{cells[0]}</td>"
        if f"<td>{r['chapter']}</td>" in body:
            ident = claim_id(r["artifact"], r["claim"])
            head = f'<tr id="{ident}">'
            body = body.replace(
                first,
                f'<td><a class="racer-permalink" href="#{ident}" title="Permalink to this '
                f'claim">{cells[0]}</a></td>',
                1,
            )
            if link:
                chapter = f"<td>{r['chapter']}</td>"
                body = body.replace(chapter, f'<td><a href="{link}">{r["chapter"]}</a></td>')
        elif link:
            body = body.replace(first, f'<td><a href="{link}">{cells[0]}</a></td>', 1)
        return head + body + "</tr>"

    shown = _ROW.sub(row, shown)
    for column, em in _PAGE_MIN_WIDTH.items():
        shown = shown.replace(f"<th>{column}</th>", f'<th style="min-width: {em}em">{column}</th>')
    return shown


#: The columns of the emergent claims' table that opens the report's page.
EMERGENT_COLUMNS = {
    "artifact": "artifact",
    "claim": "claim",
    "effect_text": "effect [95 % interval]",
    "sesoi_text": "smallest effect of interest",
    "power_text": "power at the paper's effect (MDE)",
    "n": "seeds",
    "test": "test",
    "status_text": "status",
    "robustness": "over simulators",
}


def _effect_text(row: Mapping[str, Any]) -> str:
    effect, lo, hi = (row.get(k) for k in ("effect", "lo", "hi"))
    if effect is None or not np.isfinite(effect):
        return ""
    if lo is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return intervals.interval_text(effect)
    return intervals.interval_text(effect, lo, hi)  # never "-0.01 [-0.01, -0.01]"


def _sesoi_text(row: Mapping[str, Any]) -> str:
    """The SESOI a claim was decided against, in its unit (``0.15 pts``), or empty."""
    sesoi = row.get("sesoi")
    try:
        sesoi = float(sesoi)
    except (TypeError, ValueError):
        return ""
    if not np.isfinite(sesoi):
        return ""
    unit = str(row.get("unit") or "")
    return f"{sesoi:.3g}{unit}"


def _power_text(row: Mapping[str, Any]) -> str:
    """``73 % (0.314 pts)``: the power at the paper's effect and, in brackets, the minimum
    detectable effect in the claim's unit; empty for a claim that states no effect."""
    try:
        power = float(row.get("power"))
    except (TypeError, ValueError):
        return ""
    if not np.isfinite(power):
        return ""
    return f"{100 * power:.0f} % ({_sesoi_text({**row, 'sesoi': row.get('mde')})})"


def emergent_view(table: pd.DataFrame) -> pd.DataFrame:
    """The claims of a :func:`report` table that are evidence about the method (``emergent``:
    decided by a test, not given to the simulator), with their effect, interval, seeds, test,
    status and robustness, under the page's names (:data:`EMERGENT_COLUMNS`), the decided ones
    first."""
    rows = table[table["emergent"].fillna(False).astype(bool)].copy()
    rows["effect_text"] = [_effect_text(r) for r in rows.to_dict("records")]
    rows["sesoi_text"] = [_sesoi_text(r) for r in rows.to_dict("records")]
    rows["power_text"] = [_power_text(r) for r in rows.to_dict("records")]
    rows["status_text"] = [
        f"{r['status']} ({r['qualifier']})"
        if isinstance(r.get("qualifier"), str) and r["qualifier"]
        else r["status"]
        for r in rows.to_dict("records")
    ]
    rows["n"] = rows["n"].astype("Int64")
    order = {s: i for i, s in enumerate(STATUSES)}
    rows = rows.sort_values("status", key=lambda s: s.map(order), kind="stable")
    view = rows[list(EMERGENT_COLUMNS)].rename(columns=EMERGENT_COLUMNS)
    return view.replace("", np.nan).dropna(axis=1, how="all").reset_index(drop=True)


def protocol_table() -> pd.DataFrame:
    """The protocol's constants as the report's page states them (``protocol.csv``): the
    level of each one-sided test in percent and the least number of replicate seeds."""
    return pd.DataFrame(
        {
            "constant": ["alpha_percent", "min_seeds", *(f"sesoi: {q}" for q in EFFECTS)],
            "value": [100 * ALPHA, MIN_SEEDS, *(e.sesoi for e in EFFECTS.values())],
            "meaning": [
                "level of each one-sided test (percent)",
                "least replicate seeds of a claim about routers",
                *(f"smallest effect of interest: {e.reason}" for e in EFFECTS.values()),
            ],
        }
    )


def prose_reads() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """What the report's opening sentences state, as ``(name, csv, column, agg, where)`` for
    :meth:`racer_lib.book.chapter.Prose.glue_reads`: the claims counted, by status
    (:data:`STATUSES`), the emergent ones, by the records' provenance with the headline's
    counts of each, then the protocol's level and least number of seeds."""
    claims, head, protocol = "claims.csv", "headline.csv", "protocol.csv"
    reads = [("claims", claims, "status", "count", {})]
    reads += [(s.replace(" ", "_"), claims, "status", "count", {"status": s}) for s in STATUSES]
    reads.append(("emergent", "emergent_claims.csv", "status", "count", {}))
    for kind in ("simulated", "release", "generated"):  # all claims, then the emergent ones
        reads.append((kind, claims, "status", "count", {"provenance": kind}))
        reads += [
            (f"{kind}_{column}", head, column, "one", {"records": kind})
            for column in ("reproduced", "calibrated_only", "not_reproduced", "inconclusive")
        ]
    reads.append(("alpha", protocol, "value", "one", {"constant": "alpha_percent"}))
    reads.append(("min_seeds", protocol, "value", "one", {"constant": "min_seeds"}))
    return reads
