"""The verdict panel that opens the reproduction report (chapter ``01_reproduction_report``).

:func:`panel` glues (MyST-NB's ``glue``) under one name what a reader deciding whether to cite
the companion needs first, so that the page shows it above its parameters and code (the
Markdown ``{glue} verdict_panel`` directive at the top of the chapter):

- the forest plot of every emergent claim (:func:`racer_lib.paper.forest.forest_plot`),
  saved and numbered as the chapter's first figure;
- the claims per status, each with what the status means (the legend of the plot's colours);
- the protocol's error rates as measured (:func:`rates_html`): the false-positive rate and
  power of its rules and the stability of the statuses, and each emergent claim's
  false-positive rate under its least favourable null at the ``sim`` build's sizes (``make
  bench-verdicts``, ``results/bench/verdicts.json``, its ``claim_rates``; ``make
  bench-claim-rates`` measures that part alone); a measure that is missing reads "not measured
  in this build", with its command.

The page's bottom-line sentence is Markdown with glued counts (the chapter's notebook).
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd

from racer_lib.book import chapter
from racer_lib.paper import forest
from racer_lib.paper.report import status_counts

__all__ = ["BENCH_DIR", "PANEL", "legend_html", "panel", "rates_html"]

#: Where the recorded benchmarks are, relative to the repository (the runner's working folder).
BENCH_DIR = Path("results") / "bench"
#: The glue name of the panel (the chapter's Markdown pastes it).
PANEL = "verdict_panel"
_VERDICTS = ("verdicts.json", "make bench-verdicts")
#: The per-claim rates: the ``claim_rates`` entry of ``verdicts.json``, and its command alone.
_CLAIM_RATES = ("claim_rates", "make bench-claim-rates")


def legend_html(counts: pd.DataFrame) -> str:
    """The claims per status (:func:`racer_lib.paper.report.status_counts`), one row each: the
    status's colour in the forest plot, its name, how many claims have it and what it means."""
    rows = []
    for r in counts.to_dict("records"):
        color = forest.STATUS_COLORS[r["status"]]
        rows.append(
            f'<tr><td><span class="racer-swatch" style="background:{color}"></span></td>'
            f'<td class="racer-count">{r["claims"]}</td>'
            f"<td><b>{html.escape(r['status'])}</b>: "
            f"{html.escape(forest.STATUS_MEANINGS[r['status']])}</td></tr>"
        )
    return (
        '<table class="racer-verdict-legend"><caption>Claims per status '
        f"({counts['claims'].sum()} in all)</caption><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _read(bench_dir: Path, name: str) -> dict[str, Any] | None:
    path = bench_dir / name
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    print(f"read {path.as_posix()}")
    return found if isinstance(found, dict) else None


def _pct(x: float) -> str:
    return f"{100 * float(x):.1f} %"


def _when(measure: dict[str, Any]) -> str:
    date, commit = measure.get("date"), measure.get("commit")
    return f" (measured {date}, commit <code>{html.escape(str(commit))}</code>)" if date else ""


def _goal(measure: dict[str, Any], sign: str) -> str:
    """``goal ≤ 5.0 %, met``: a measure's target and whether it was met (empty without one)."""
    if measure.get("target") is None:
        return "no goal set"
    met = {True: ", met", False: ", not met"}.get(measure.get("meets_target"), "")
    return f"goal {sign} {_pct(measure['target'])}{met}"


def _verdict_rates(found: dict[str, Any], command: str) -> list[str]:
    """The false-positive rate, power and stability of ``verdicts.json`` as list items."""
    fpr, power = found.get("false_positive_rate", {}), found.get("power", {})
    stability = found.get("status_stability", {})
    when = _when(found.get("settings", {}))
    items = []
    if fpr:
        lo, hi = fpr["wilson_95"]
        items.append(
            f"<b>False-positive rate</b> {_pct(fpr['rate'])} (95 % Wilson {_pct(lo)} to "
            f"{_pct(hi)}; {_goal(fpr, '≤')}): {fpr['hits']} of {fpr['trials']} "
            f"decisions on null builds read <i>reproduced</i>{when}."
        )
    if power:
        items.append(
            f"<b>Power</b> {_pct(power['rate'])}: {power['hits']} of {power['trials']} "
            f"decisions on builds with a planted signal detect it{when}."
        )
    if stability:
        movable = stability.get("movable", {})
        total = round(stability["same_in_all"] / stability["status_stability"])
        seeds = ", ".join(str(s) for s in stability.get("seeds", []))
        items.append(
            f"<b>Status stability</b> {_pct(stability['status_stability'])} "
            f"({_goal(stability, '≥')}): "
            f"{stability['same_in_all']} of {total} claims keep their status over master "
            f"seeds {seeds}; {movable.get('hits')} of {movable.get('trials')} emergent claims "
            f"({_pct(movable.get('rate', 0))}){_when(stability)}."
        )
    return [f"{item} <code>{command}</code>" for item in items]


def _claim_rates(found: dict[str, Any], command: str) -> list[str]:
    """The per-claim false-positive rates (``verdicts.json``'s ``claim_rates``) as a list item."""
    return [
        f"<b>Per claim</b>: {found['meeting_target']} of {found['measured']} emergent claims "
        "(a chapter's finding on the per-seed family it wrote) keep their false-positive rate "
        "under their least favourable null "
        f"within {_pct(found['fpr_target'])} (95 % Wilson upper bound; the largest "
        f"{_pct(found['largest_fpr_upper'])}), {found['replications']} resampled data sets "
        f"each{_when(found)}. <code>{command}</code>"
    ]


def rates_html(bench_dir: str | os.PathLike = BENCH_DIR) -> str:
    """The protocol's measured error rates, read from ``bench_dir`` (module docstring)."""
    recorded = _read(Path(bench_dir), _VERDICTS[0]) or {}
    items = []
    for (name, command), found, read in (
        (_VERDICTS, recorded, _verdict_rates),
        (_CLAIM_RATES, recorded.get(_CLAIM_RATES[0]), _claim_rates),
    ):
        try:
            items += read(found, command) if found else []
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            found = None
        if not found:
            items.append(
                f"<code>{name}</code>: not measured in this build; <code>{command}</code> "
                "measures it."
            )
    return (
        '<div class="racer-verdict-rates"><p><b>The protocol, measured</b> (as recorded in '
        "<code>results/bench</code>, not by this build; the command after each measures it "
        "again):</p><ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul></div>"
    )


def panel(
    claims: pd.DataFrame, out: str | os.PathLike, bench_dir: str | os.PathLike = BENCH_DIR
) -> None:
    """Glue the verdict panel of a report table (module docstring) as :data:`PANEL`; the
    claims per status are saved as ``out/status_counts.csv`` and the forest plot as
    ``out/forest_plot.png``. Shows nothing where it runs."""
    from IPython.display import HTML
    from myst_nb import glue

    counts = chapter.save_table(status_counts(claims), Path(out) / "status_counts.csv")
    emergent = claims[claims["emergent"].fillna(False).astype(bool)]
    provenance = chapter.combined_provenance(emergent["provenance"].dropna())
    figure = chapter.figure(
        forest.forest_plot(claims),
        Path(out) / "forest_plot.png",
        provenance,
        caption=f"The {len(emergent)} emergent claims: each effect (dot) and its 95 % "
        "t-interval over seeds (bar) divided by the smallest effect of interest (SESOI) it was "
        "decided against, so that claims in different units share one axis (linear within "
        "±1 SESOI, shaded; logarithmic beyond); at the right, the effect in the claim's unit "
        "and its SESOI. Coloured by status (legend beside); hollow: reproduced on the "
        "calibrated simulator only. Rows in the order of the emergent claims' table below.",
        alt=f"Forest plot of {len(emergent)} claims: one row each, a dot and a bar per claim "
        "against a shaded band of plus or minus one smallest effect of interest.",
    )
    width = re.search(r'data-width-px="(\d+)"', figure)
    plot = (
        f'<div class="racer-verdict-plot" style="flex-basis: {width.group(1) if width else 700}px">'
    )
    side = f'<div class="racer-verdict-side">{legend_html(counts)}{rates_html(bench_dir)}</div>'
    body = f'<div class="racer-verdict">{plot}{figure}</div>{side}</div>'
    glue(PANEL, HTML(body), display=False)
