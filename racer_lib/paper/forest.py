"""The reproduction report's forest plot: every emergent claim's effect with its 95 % interval
against its smallest effect of interest (SESOI), coloured by status, the claims on simulated
records apart from those on real judges' records.

Claims come in many units (accuracy points, cost relative to the budget, a share of runs, a
dual price), so each row is drawn **normalized by its own SESOI**: the effect and the interval
ends divided by the SESOI the claim was decided against, on a symmetric log scale that is
linear inside ±1. The band between −1 and +1 is "smaller than the SESOI": a directional claim
holds when its interval lies beyond the band on the claim's side and fails when it does not
reach past it; an equivalence claim holds when its interval lies inside the band. The effect
and SESOI in the claim's own unit are written at the right of each row. A claim without a
positive SESOI (a chapter's finding decided on its own terms) has no place on that axis: its
row names its effect and says so. The statuses are those of :mod:`racer_lib.paper.claims`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from racer_lib.paper.claims import (
    BY_CONSTRUCTION,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_REPRODUCIBLE,
    REPRODUCED,
    STATUSES,
    VERIFIED,
)

__all__ = ["STATUS_COLORS", "STATUS_MEANINGS", "forest_plot", "forest_rows"]

#: One colour per status, the same in the plot and its legend (colour-blind safe).
STATUS_COLORS = {
    REPRODUCED: "#1a7f4b",
    NOT_REPRODUCED: "#c0392b",
    INCONCLUSIVE: "#8c8c8c",
    BY_CONSTRUCTION: "#4878d0",
    NOT_REPRODUCIBLE: "#d9d9d9",
    VERIFIED: "#7b4fa0",
}
#: What each status means, in one line (the report's legend; its section "How a claim is
#: decided" says it in full).
STATUS_MEANINGS = {
    REPRODUCED: "tested where it could have failed; the test supports the claim",
    NOT_REPRODUCED: "tested where it could have failed; the test supports its negation "
    "(or the effect is smaller than the SESOI)",
    INCONCLUSIVE: "the test supports neither at 5 %, or too few seeds",
    BY_CONSTRUCTION: "the simulator was given the quantity: a check of the simulator, not evidence",
    NOT_REPRODUCIBLE: "this build lacks what the claim needs (its row says what)",
    VERIFIED: "a theorem checked on numerical instances",
}
#: The records a claim rests on, in the order the plot shows them, with their panel's title.
GROUPS = {
    "simulated": "on SIMULATED records",
    "release": "on real judges' released judgments",
    "generated": "on real judge outputs generated here",
}
#: The qualifier of a claim reproduced on the calibrated simulator only (drawn hollow).
_CALIBRATED_ONLY = "reproduced on the calibrated simulator only"
_LABEL_CHARS = 30
_ROW_IN = 0.155
_WIDTH_IN = 6.75
#: The tallest the plot gets (it must fit the report's first screen beside its legend).
_MAX_HEIGHT_IN = 5.4
#: The x axis's ticks, in SESOIs.
_TICKS = (-100, -10, -1, 0, 1, 10, 100)


def _unit(row: Mapping[str, Any]) -> str:
    """The claim's unit, short enough for the row's note (``""`` when it has none that is)."""
    unit = str(row.get("unit") or "").strip().strip("()").strip()
    return f" {unit}" if unit and unit != "nan" and len(unit) <= 16 else ""


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def forest_rows(claims: pd.DataFrame) -> pd.DataFrame:
    """The emergent claims of a report table (:func:`racer_lib.paper.report.report`) as the
    forest plot draws them, in the order of the report's emergent table (by status), grouped
    by the records they rest on: ``group``, ``label`` (artifact and the claim's first words),
    ``status``, ``hollow`` (reproduced on the calibrated simulator only), ``x``, ``x_lo``,
    ``x_hi`` (effect and interval divided by the SESOI; NaN without a positive SESOI or an
    effect) and ``note`` (effect and SESOI in the claim's unit)."""
    rows = claims[claims["emergent"].fillna(False).astype(bool)]
    order = {s: i for i, s in enumerate(STATUSES)}
    rows = rows.sort_values("status", key=lambda s: s.map(order), kind="stable")
    out = []
    for r in rows.to_dict("records"):
        effect, lo, hi, sesoi = (_number(r.get(k)) for k in ("effect", "lo", "hi", "sesoi"))
        scaled = np.isfinite(effect) and np.isfinite(sesoi) and sesoi > 0
        unit = _unit(r)
        if not np.isfinite(effect):
            note = "no effect measured"
        else:
            note = f"{effect:+.3g}{unit} ({f'{sesoi:.2g}' if scaled else 'no SESOI'})"
        label = f"{r['artifact']}: {' '.join(str(r.get('claim', '')).split())}"
        out.append(
            {
                "group": r.get("provenance") if r.get("provenance") in GROUPS else "simulated",
                "label": textwrap.shorten(label, _LABEL_CHARS, placeholder="…"),
                "status": r["status"],
                "hollow": r.get("qualifier") == _CALIBRATED_ONLY,
                "x": effect / sesoi if scaled else np.nan,
                "x_lo": lo / sesoi if scaled and np.isfinite(lo) else np.nan,
                "x_hi": hi / sesoi if scaled and np.isfinite(hi) else np.nan,
                "note": note,
            }
        )
    return pd.DataFrame(
        out, columns=["group", "label", "status", "hollow", "x", "x_lo", "x_hi", "note"]
    )


def _panel(ax: plt.Axes, rows: pd.DataFrame, title: str, limit: float) -> None:
    """One group's rows on ``ax``: the SESOI band, each interval and effect, the notes."""
    ax.axvspan(-1, 1, color="#eeeeee", zorder=0)
    ax.axvline(0, color="#999999", lw=0.8, ls=":", zorder=1)
    for x in (-1, 1):
        ax.axvline(x, color="#555555", lw=0.8, ls="--", zorder=1)
    for i, r in enumerate(rows.to_dict("records")):
        color = STATUS_COLORS.get(r["status"], "black")
        if np.isfinite(r["x_lo"]) and np.isfinite(r["x_hi"]):
            ax.plot([r["x_lo"], r["x_hi"]], [i, i], color=color, lw=2.2, zorder=2)
        if np.isfinite(r["x"]):
            face = "white" if r["hollow"] else color
            ax.plot(r["x"], i, "o", ms=5.5, mfc=face, mec=color, mew=1.4, zorder=3)
        ax.annotate(
            r["note"], (1.02, i), xycoords=("axes fraction", "data"), va="center", fontsize=9
        )
    ax.set_yticks(range(len(rows)), rows["label"], fontsize=9)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xscale("symlog", linthresh=1.0, linscale=1.0)
    ax.set_xlim(-limit, limit)
    ticks = [t for t in _TICKS if abs(t) <= limit]
    ax.set_xticks(ticks, [f"{t:g}".replace("-", "−") for t in ticks])
    ax.set_title(f"{len(rows)} emergent claims {title}", fontsize=9, loc="left")
    ax.grid(axis="y", visible=False)
    ax.tick_params(axis="x", labelsize=9)


def forest_plot(claims: pd.DataFrame) -> plt.Figure:
    """The forest plot of a report table's emergent claims (module docstring): one panel per
    kind of records (:data:`GROUPS`), every row's effect and 95 % interval divided by its
    SESOI, the band of ±1 SESOI shaded, coloured by status (:data:`STATUS_COLORS`), a claim
    reproduced on the calibrated simulator only drawn hollow."""
    rows = forest_rows(claims)
    groups = [g for g in GROUPS if (rows["group"] == g).any()] or ["simulated"]
    sizes = [max(1, int((rows["group"] == g).sum())) for g in groups]
    finite = rows[["x", "x_lo", "x_hi"]].abs().to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    limit = max(3.0, 1.4 * float(finite.max())) if finite.size else 3.0
    frame = 0.45 * len(groups) + 0.4  # titles and the axis
    row = min(_ROW_IN, (_MAX_HEIGHT_IN - frame) / sum(sizes))  # rows squeezed, never the font
    height = row * sum(sizes) + frame
    fig, axes = plt.subplots(
        len(groups),
        1,
        figsize=(_WIDTH_IN, height),
        sharex=True,
        gridspec_kw={"height_ratios": [s + 1.6 for s in sizes]},
        squeeze=False,
    )
    for ax, group in zip(axes[:, 0], groups, strict=True):
        _panel(ax, rows[rows["group"] == group], GROUPS[group], limit)
    axes[-1, 0].set_xlabel("effect ÷ SESOI; right: effect in its unit (SESOI)", fontsize=9)
    fig.subplots_adjust(left=0.37, right=0.74, top=1 - 0.3 / height, bottom=0.45 / height)
    return fig
