"""Where a claim's evidence is on the book's pages, and the permalink a citer quotes.

Every chapter records what it shows, one entry per numbered figure and table, in its results
folder (:data:`ANCHORS_JSON`, written by :func:`racer_lib.book.chapter.setup` and the
functions that show; each entry's ``anchor`` is the element's id on the chapter's page, e.g.
``figure-7-1``). :func:`evidence_anchor` picks the entry that is a claim's evidence, first
found of:

1. the table that offers the CSV the claim's rule read for download; for a chapter's own
   finding (rule ``finding``), next the table whose caption names the claim's artifact (the
   chapter's findings, decided there);
2. the figure that regenerates the claim's artifact of the paper (``Fig. 4`` for a claim on
   ``Fig. 4`` or ``Fig. 3(b)`` for ``Fig. 3``);
3. a table or figure whose caption names that artifact;
4. the chapter's first figure, else its first table.

:func:`with_evidence` puts the anchor on the report's ``link`` column
(``07_budget_frontier.html#figure-7-2``). :func:`claim_id` is a claim's permalink on the
report's page (``claim-fig-4-3fa2c1``): the artifact's name and a digest of the claim's text,
the same in every build that lists the claim in the same words.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["ANCHORS_JSON", "claim_id", "evidence_anchor", "read_anchors", "with_evidence"]

#: The file in a chapter's results folder listing what the chapter showed, with anchors.
ANCHORS_JSON = "anchors.json"
#: A numbered artifact of the paper inside a claim's artifact (``Fig. 3`` in ``Fig. 3(b)``).
_ARTIFACT = re.compile(r"\b(Fig\.|Table|Thm\.)\s*(\d+)(?!\d)")


def claim_id(artifact: str, claim: str) -> str:
    """The permalink anchor of a claim on the report's page: ``claim-<artifact>-<digest>``,
    lower case, the artifact's letters and digits joined by ``-``, the digest the first six
    hex digits of the SHA-1 of ``artifact|claim``."""
    slug = "-".join(re.findall(r"[a-z0-9]+", artifact.lower())) or "claim"
    digest = hashlib.sha1(f"{artifact}|{claim}".encode()).hexdigest()[:6]
    return f"claim-{slug}-{digest}"


def read_anchors(folder: str | Path) -> list[dict[str, str]]:
    """The figures and tables a chapter showed (its :data:`ANCHORS_JSON`), in page order;
    empty when the chapter wrote none (not run, or run before chapters recorded them)."""
    path = Path(folder) / ANCHORS_JSON
    try:
        shown = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [s for s in shown if isinstance(s, dict) and isinstance(s.get("anchor"), str)]


def _paper_artifact(artifact: str) -> str:
    """``Fig. 3`` of ``Fig. 3(b)``, ``Table 9`` of ``Table 9 / §A text``; ``""`` for a
    section (``§5.3 text``)."""
    m = _ARTIFACT.search(artifact)
    return f"{m.group(1)} {m.group(2)}" if m else ""


def _names(text: str, artifact: str) -> bool:
    kind, number = artifact.split(" ")
    return re.search(rf"{re.escape(kind)}\s*{number}(?!\d)", text) is not None


def evidence_anchor(row: Mapping[str, Any], shown: Sequence[Mapping[str, str]]) -> str:
    """The anchor of ``row``'s evidence among ``shown`` (a chapter's :func:`read_anchors`),
    by the order of the module docstring; ``""`` when the chapter showed nothing."""
    csv = Path(str(row.get("csv") or "")).name
    paper = _paper_artifact(str(row.get("artifact", "")))
    checks = [
        lambda s: bool(csv) and s["kind"] == "table" and s.get("file") == csv,
        lambda s: bool(paper) and s["kind"] == "figure" and s.get("paper") == paper,
        lambda s: bool(paper) and _names(f"{s.get('paper', '')} {s.get('caption', '')}", paper),
        lambda s: s["kind"] == "figure",
        lambda s: s["kind"] == "table",
    ]
    if row.get("rule") == "finding":  # decided in its chapter: the table of its findings
        checks.insert(
            1,
            lambda s: bool(paper) and s["kind"] == "table" and _names(s.get("caption", ""), paper),
        )
    for check in checks:
        found = next((s for s in shown if check(s)), None)
        if found is not None:
            return found["anchor"]
    return ""


def with_evidence(claims: pd.DataFrame, results_root: str | Path) -> pd.DataFrame:
    """A copy of a report table (:func:`racer_lib.paper.report.report`) whose ``link`` of each
    claim points at its evidence on its chapter's page (``07_budget_frontier.html#figure-7-2``;
    the page alone when the chapter recorded nothing it showed)."""
    root = Path(results_root)
    shown = {stem: read_anchors(root / stem) for stem in claims["chapter"].dropna().unique()}
    out = claims.copy()
    links = []
    for row in out.to_dict("records"):
        link = row.get("link")
        anchor = evidence_anchor(row, shown.get(row.get("chapter"), []))
        links.append(f"{link}#{anchor}" if isinstance(link, str) and anchor else link)
    out["link"] = links
    return out
