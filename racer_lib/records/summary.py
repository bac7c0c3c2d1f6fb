"""A judge's two modes summarised per group of pairs: accuracies, cost ratio, agreement cells.

The quantities of the paper's §2 (Fig. 2): ``acc_a = mean_z r(z, a, l)`` in percent, the
accuracy gain of reasoning, the set's All-Reasoning cost ratio and the four agreement cells.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from racer_lib.records.schema import MODES, correct_matrix, mode_columns, realized_cost_ratio


def _summary(group: pd.DataFrame) -> dict[str, float]:
    r = correct_matrix(group).astype(bool)
    acc = 100 * r.mean(axis=0)
    out = {
        "n": len(group),
        "acc_instruct": acc[0],
        "acc_reasoning": acc[1],
        "delta_accuracy": acc[1] - acc[0],
        "cost_ratio": realized_cost_ratio(group, 1.0),
        "both_right": int((r[:, 0] & r[:, 1]).sum()),
        "only_reasoning": int((~r[:, 0] & r[:, 1]).sum()),
        "only_instruct": int((r[:, 0] & ~r[:, 1]).sum()),
        "both_wrong": int((~r[:, 0] & ~r[:, 1]).sum()),
        "oracle_accuracy": 100 * (r[:, 0] | r[:, 1]).mean(),
    }
    for mode in MODES:
        out[f"unparseable_{mode}"] = int(
            (group[mode_columns(mode)["verdict"]] == "unparseable").sum()
        )
    return out


def mode_summary(records: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per group of ``by`` (or one row in all): accuracies, cost ratio, agreement."""
    by = list(by)
    if not by:
        return pd.DataFrame([_summary(records)])
    rows = [
        {**dict(zip(by, key if isinstance(key, tuple) else (key,))), **_summary(g)}
        for key, g in records.groupby(by, sort=False)
    ]
    return pd.DataFrame(rows)
