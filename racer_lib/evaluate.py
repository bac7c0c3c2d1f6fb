"""Evaluation of judge records: accuracy of each mode, cost ratios and agreement patterns.

The quantities of the paper's §2 (Fig. 2):

* ``acc_a = mean_z r(z, a, l)`` for a in {instruct, reasoning}, in percent;
* ``delta_accuracy = Acc(M_R) - Acc(M_noR)`` (points);
* ``cost_ratio = sum_z tokens_1(z) / sum_z tokens_0(z)`` — the set's All-Reasoning cost in the
  unit of its own All-Instruct tokens (:func:`racer_lib.records.realized_cost_ratio` with p = 1);
* the four agreement cells of the two modes: both right, only reasoning right, only instruct
  right, both wrong (pair counts), and the oracle accuracy that picks the right mode whenever
  one exists.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .records import MODES, correct_matrix, mode_columns, realized_cost_ratio

AGREEMENT_CELLS = ("both_right", "only_reasoning", "only_instruct", "both_wrong")


def _summary(group: pd.DataFrame) -> dict[str, float]:
    r = correct_matrix(group).astype(bool)
    acc = 100 * r.mean(axis=0)
    out = {"n": len(group), "acc_instruct": acc[0], "acc_reasoning": acc[1],
           "delta_accuracy": acc[1] - acc[0],
           "cost_ratio": realized_cost_ratio(group, 1.0),
           "both_right": int((r[:, 0] & r[:, 1]).sum()),
           "only_reasoning": int((~r[:, 0] & r[:, 1]).sum()),
           "only_instruct": int((r[:, 0] & ~r[:, 1]).sum()),
           "both_wrong": int((~r[:, 0] & ~r[:, 1]).sum()),
           "oracle_accuracy": 100 * (r[:, 0] | r[:, 1]).mean()}
    for mode in MODES:
        out[f"unparseable_{mode}"] = int((group[mode_columns(mode)["verdict"]]
                                          == "unparseable").sum())
    return out


def mode_summary(records: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per group of ``by`` (or one row in all): accuracies, cost ratio, agreement."""
    by = list(by)
    if not by:
        return pd.DataFrame([_summary(records)])
    rows = [{**dict(zip(by, key if isinstance(key, tuple) else (key,))), **_summary(g)}
            for key, g in records.groupby(by, sort=False)]
    return pd.DataFrame(rows)


def agreement_shares(summary: pd.DataFrame) -> pd.DataFrame:
    """The agreement cells of a :func:`mode_summary` table as shares of each group (sum 1)."""
    out = summary.copy()
    total = out[list(AGREEMENT_CELLS)].sum(axis=1)
    for c in AGREEMENT_CELLS:
        out[c] = out[c] / total
    return out


def headroom(summary: pd.DataFrame) -> pd.Series:
    """Points an oracle router gains over the better single mode (the room when modes disagree)."""
    return summary["oracle_accuracy"] - np.maximum(summary["acc_instruct"],
                                                   summary["acc_reasoning"])
