"""Chapter 02_judging, a real judge run: what a judging run shows (its tables, its figure, and
HTML views of the prompts and of a few cases).

The tables are built from the judge records (:mod:`racer_lib.records.schema`, one row per pair) and
the run's raw part files (:func:`racer_lib.judging.read_shards`: the parse reason, finish reason
and answer text of every judgment), without a ``provenance`` column:
:func:`racer_lib.book.chapter.save_table` puts it first when it writes them.

* :func:`verdict_table` — one row per pair and mode: verdict, parse reason, correctness,
  tokens, finish reason;
* :func:`parse_rates` — per mode, how many verdicts could be read and why the others could not;
* :func:`token_table` — per mode, generated tokens and the cost ratio (reasoning over instruct
  tokens, summed over pairs: the paper's cost axis);
* :func:`case_table` — the paper's case-study table: a few pairs, what each mode answered
  (:func:`excerpt`), its verdict and whether it is right; :func:`cases_html` draws it.

:func:`prompt_table` shows the paper's prompt table from :mod:`racer_lib.judging.prompts` (the two
system prompts with the words where they differ in red, :func:`word_diff`), and
:func:`verdict_examples` runs :func:`racer_lib.judging.prompts.parse_verdict_details` on examples of
each case of the verdict format. Needs matplotlib (the ``book`` extra) for the figure.
"""

from __future__ import annotations

import difflib
import html
import re
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import racer_lib.judging.prompts as prompts
from racer_lib.claims.rules import Claim, Excerpts
from racer_lib.judging.run import ShardResult
from racer_lib.paper import registry
from racer_lib.records import schema as rec
from racer_lib.records.summary import mode_summary

MODES: tuple[str, str] = rec.MODES
_MODE_COLORS = {"instruct": "#ee854a", "reasoning": "#4878d0"}
RED = '<span style="color:#b22222;font-weight:bold">{}</span>'
_TOP = "text-align:left;vertical-align:top"
_CELL = f'style="{_TOP};font-family:monospace;font-size:85%"'
_PRE = f'style="{_TOP};font-family:monospace;font-size:85%;white-space:pre-wrap"'
#: One judge answer per case of the verdict format: (case, answer).
VERDICT_EXAMPLES: list[tuple[str, str]] = [
    ("a verdict at the end", "Assistant A is right about the sum. [[A]]"),
    ("markdown around it", "Final verdict: **[[ B ]]**"),
    ("a lowercase letter", "[[a]]"),
    (
        "the anchored verdict wins",
        "At first [[A]] looks better, but after checking, my final verdict is [[B]]",
    ),
    ("two verdicts, none anchored", "At first [[A]] looks better, but after checking: [[B]]"),
    (
        "the format echoed",
        'My verdict: "[[A]]" if assistant A is better, "[[B]]" if assistant B is better.',
    ),
    ("a tie", "Both are equally good: [[C]]"),
    ("a look-alike letter (Cyrillic)", "Earlier [[B]]; final verdict: [[\u0410]]"),
    ("cut off in the verdict", "At first [[A]] ... Final verdict: [[B"),
    ("single brackets", "The better answer is [A]."),
    ("verdict only while thinking", "<think>B has an error, so [[A]]</think> Both have merits."),
    ("no verdict", "[The Start of Assistant A's Answer] The answer is 2."),
]


# ----------------------------------------------------------------------------------------
# The prompts and the verdict format


def word_diff(a: str, b: str) -> tuple[str, str, list[tuple[str, str]]]:
    """Both texts as HTML with the words where they differ in red, and the differing runs of
    words ``(in a, in b)`` (a word-level :class:`difflib.SequenceMatcher`)."""
    wa, wb = a.split(" "), b.split(" ")
    out_a, out_b, runs = [], [], []
    matcher = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        pa, pb = " ".join(wa[i1:i2]), " ".join(wb[j1:j2])
        if op != "equal":
            runs.append((pa, pb))
        for out, text in ((out_a, pa), (out_b, pb)):
            if op == "equal":
                out.append(html.escape(text))
            elif text:
                out.append(RED.format(html.escape(text)))
    return " ".join(out_a), " ".join(out_b), runs


def prompt_table() -> tuple[str, list[tuple[str, str]]]:
    """The paper's prompt table as HTML (system prompts side by side, differences in red; the
    shared user template; the chain-of-thought instruction of ``setup="cot"``), and the runs of
    words where the two system prompts differ."""
    instruct, reasoning, runs = word_diff(
        prompts.SYSTEM_PROMPTS["instruct"], prompts.SYSTEM_PROMPTS["reasoning"]
    )
    table = f"""
<table>
<tr><th>Field</th><th>Instruct mode</th><th>Reasoning mode</th></tr>
<tr><td><b>System</b></td><td {_CELL}>{instruct}</td><td {_CELL}>{reasoning}</td></tr>
<tr><td><b>User template</b></td>
    <td colspan="2" {_PRE}>{html.escape(prompts.USER_TEMPLATE)}</td></tr>
<tr><td><b>Appended to the user turn</b> (prompted chain of thought, <code>setup="cot"</code>)</td>
    <td {_CELL}>nothing</td>
    <td {_CELL}>a blank line, then:<br>{html.escape(prompts.COT_INSTRUCTION)}</td></tr>
</table>
"""
    return table, runs


def verdict_examples(examples: list[tuple[str, str]] = VERDICT_EXAMPLES) -> pd.DataFrame:
    """Each example answer parsed by :func:`racer_lib.judging.prompts.parse_verdict_details`: case,
    judge answer, verdict and the reason it is unparseable (where it is)."""
    parsed = [prompts.parse_verdict_details(text) for _, text in examples]
    return pd.DataFrame(
        {
            "case": [c for c, _ in examples],
            "judge answer": [t for _, t in examples],
            "verdict": [p.verdict for p in parsed],
            "reason": [p.reason for p in parsed],
        }
    )


# ----------------------------------------------------------------------------------------
# Tables of a run


def run_row(result: ShardResult) -> dict[str, Any]:
    """One row on a run: the judge, its (instruct) model, pairs, items, what was already there,
    what was judged now, the part files and the seconds it took."""
    return {
        "judge": result.judge,
        "model": result.models["instruct"],
        "n_pairs": result.n_pairs,
        "n_items": result.n_items,
        "n_done_before": result.n_done_before,
        "n_judged": result.n_judged,
        "n_parts": result.n_parts,
        "seconds": round(result.seconds, 1),
    }


def _raw(parts: pd.DataFrame, mode: str, ids: pd.Series) -> pd.DataFrame:
    """The original-order part rows of one mode, in the order of ``ids``."""
    mine = parts[(parts["task"] == mode) & (parts["order"] == "original")]
    return mine.set_index("pair_id").loc[ids]


def verdict_table(records: pd.DataFrame, parts: pd.DataFrame) -> pd.DataFrame:
    """One row per pair and mode (the modes in turn): id, dataset, domain, the preferred
    response, the verdict, why it was unparseable where it was (``parse``: ``none``, ``both``,
    ``tie``), correctness, tokens and the finish reason (``stop`` or ``length``)."""
    frames = []
    for mode in MODES:
        cols, raw = rec.mode_columns(mode), _raw(parts, mode, records["id"])
        frames.append(
            pd.DataFrame(
                {
                    "id": records["id"].to_numpy(),
                    "dataset": records["dataset"].to_numpy(),
                    "domain": records["domain"].to_numpy(),
                    "preferred": np.where(records["label"] == 1, "A", "B"),
                    "mode": mode,
                    "verdict": records[cols["verdict"]].to_numpy(),
                    "parse": raw["parse"].to_numpy(),
                    "correct": records[cols["correct"]].to_numpy(),
                    "tokens": records[cols["tokens"]].to_numpy(),
                    "finish_reason": raw["finish_reason"].to_numpy(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def parse_rates(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per mode, from a :func:`verdict_table`: judgments, readable verdicts, unparseable ones
    and the share readable, then why not, one column per reason of
    :func:`racer_lib.judging.prompts.parse_verdict_details` (no verdict, both letters, a tie,
    conflicting verdicts, a look-alike letter, a verdict cut off, a label of the other format;
    the columns add up to ``unparseable``), and how many were cut at ``max_tokens``."""
    rows = []
    for mode in MODES:
        sub = verdicts[verdicts["mode"] == mode]
        unparseable = int((sub["verdict"] == rec.UNPARSEABLE).sum())
        rows.append(
            {
                "mode": mode,
                "n": len(sub),
                "parsed": len(sub) - unparseable,
                "unparseable": unparseable,
                "parse_rate": (len(sub) - unparseable) / len(sub),
                "no_verdict": int((sub["parse"] == "none").sum()),
                "both_letters": int((sub["parse"] == "both").sum()),
                "tie": int((sub["parse"] == "tie").sum()),
                "conflict": int((sub["parse"] == "conflict").sum()),
                "confusable": int((sub["parse"] == "confusable").sum()),
                "truncated": int((sub["parse"] == "truncated").sum()),
                "other_format": int((sub["parse"] == "format").sum()),
                "cut_at_max_tokens": int((sub["finish_reason"] == "length").sum()),
            }
        )
    return pd.DataFrame(rows)


def token_table(records: pd.DataFrame, max_tokens: int) -> pd.DataFrame:
    """Per mode: total, mean, min and max generated tokens, the cap, and the cost ratio (the
    mode's total over the instruct mode's)."""
    tokens = pd.DataFrame(
        [
            {
                "mode": m,
                "total": int(t.sum()),
                "mean": t.mean(),
                "min": int(t.min()),
                "max": int(t.max()),
                "max_tokens": max_tokens,
            }
            for m in MODES
            for t in [records[rec.mode_columns(m)["tokens"]]]
        ]
    )
    instruct = tokens.loc[tokens["mode"] == "instruct", "total"].iloc[0]
    tokens["cost_ratio"] = tokens["total"] / instruct
    return tokens


def excerpt(text: Any, n: int = 260) -> str:
    """The first ``n`` characters of ``text`` with white space folded, cut at a word (``…``)."""
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text if len(text) <= n else text[:n].rsplit(" ", 1)[0] + " …"


def case_table(records: pd.DataFrame, parts: pd.DataFrame, n: int = 3) -> pd.DataFrame:
    """Up to ``n`` pairs in the shape of the paper's case-study table: per mode the verdict,
    its correctness and an :func:`excerpt` of the answer. Pairs where the two modes disagree
    on correctness come first, then pairs with at least one readable verdict, then by id."""
    answers = {m: _raw(parts, m, records["id"])["answer"] for m in MODES}
    order = records.assign(
        disagree=records["correct_instruct"] != records["correct_reasoning"],
        readable=(records["verdict_instruct"] != rec.UNPARSEABLE)
        | (records["verdict_reasoning"] != rec.UNPARSEABLE),
    )
    order = order.sort_values(["disagree", "readable", "id"], ascending=[False, False, True])
    return pd.DataFrame(
        [
            {
                "dataset_id": f"{r.dataset}-{r.domain} ({r.id.split('/')[-1][:8]})",
                **{
                    f"{m}_{k}": v
                    for m in MODES
                    for k, v in (
                        ("verdict", getattr(r, f"verdict_{m}")),
                        ("correct", bool(getattr(r, f"correct_{m}"))),
                        ("excerpt", excerpt(answers[m][r.id])),
                    )
                },
            }
            for r in order.head(min(n, len(order))).itertuples(index=False)
        ]
    )


def _verdict_cell(row: pd.Series, mode: str) -> str:
    mark = (
        '<b style="color:#1f4e9c">Correct</b>'
        if row[f"{mode}_correct"]
        else '<b style="color:#b22222">Incorrect</b>'
    )
    return (
        f"{mark} ({html.escape(row[f'{mode}_verdict'])})<br><i>(excerpt)</i> "
        f"{html.escape(str(row[f'{mode}_excerpt']))}"
    )


def cases_html(cases: pd.DataFrame, reasoning: str = "Reasoning judge (prompted)") -> str:
    """A :func:`case_table` as an HTML table: per mode, correct or not, the verdict and the
    excerpt; ``reasoning`` heads the reasoning column."""
    rows = "".join(
        f"<tr><td {_CELL}>{html.escape(row['dataset_id'])}</td>"
        + "".join(f'<td style="{_TOP}">{_verdict_cell(row, m)}</td>' for m in MODES)
        + "</tr>"
        for _, row in cases.iterrows()
    )
    return (
        '<table class="racer-table-body"><tr><th>Dataset (id)</th><th>Instruct judge</th>'
        f"<th>{reasoning}</th></tr>"
        f"{rows}</table>"
    )


# ----------------------------------------------------------------------------------------
# The figure and the summary


def tokens_parse_accuracy_figure(
    records: pd.DataFrame, parse_rate: pd.DataFrame, accuracy: pd.DataFrame, max_tokens: int
) -> plt.Figure:
    """Left: generated tokens per pair and mode against ``max_tokens``. Right: each mode's parse
    rate (:func:`parse_rates`) and accuracy (:func:`racer_lib.records.summary.mode_summary`)."""
    fig, (ax_tok, ax_rate) = plt.subplots(
        1, 2, figsize=(8.2, 3.6), gridspec_kw={"width_ratios": [1.6, 1]}
    )
    x, width = np.arange(len(records)), 0.38
    for k, mode in enumerate(MODES):
        ax_tok.bar(
            x + (k - 0.5) * width,
            records[rec.mode_columns(mode)["tokens"]],
            width,
            color=_MODE_COLORS[mode],
            label=mode,
        )
    ax_tok.axhline(max_tokens, color="black", lw=0.8, ls="--")
    ax_tok.text(len(records) - 0.5, max_tokens, "max_tokens", ha="right", va="bottom", fontsize=9)
    ax_tok.set_xticks(
        x,
        [
            f"{d}\n{i.split('/')[-1][:8]}"
            for d, i in zip(records["domain"], records["id"], strict=True)
        ],
        fontsize=9,
    )
    ax_tok.set(
        ylabel="generated tokens", title="Tokens per pair and mode", ylim=(0, max_tokens * 1.15)
    )
    metrics = {
        "parse rate": 100 * parse_rate.set_index("mode")["parse_rate"],
        "accuracy": accuracy.iloc[0][["acc_instruct", "acc_reasoning"]].set_axis(MODES),
    }
    for k, mode in enumerate(MODES):
        values = [metrics[m][mode] for m in metrics]
        bars = ax_rate.bar(
            np.arange(len(metrics)) + (k - 0.5) * width,
            values,
            width,
            color=_MODE_COLORS[mode],
            label=mode,
        )
        ax_rate.bar_label(bars, labels=[f"{v:.0f}%" for v in values], fontsize=9, padding=2)
    ax_rate.set_xticks(np.arange(len(metrics)), list(metrics))
    ax_rate.set(
        ylim=(0, 112),
        ylabel="% of pairs",
        title=f"{len(records)} pairs, judge {records['judge'].iloc[0]}",
    )
    fig.tight_layout()
    fig.legend(
        *ax_tok.get_legend_handles_labels(),
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        frameon=False,
        title="mode",
    )
    return fig


def summary(
    records: pd.DataFrame,
    parse_rate: pd.DataFrame,
    tokens: pd.DataFrame,
    accuracy: pd.DataFrame,
    max_tokens: int,
) -> str:
    """A few lines on the run: per mode, readable verdicts, cut-offs, tokens and accuracy; then
    the cost ratio."""
    rate, total = parse_rate.set_index("mode"), tokens.set_index("mode")["total"]
    lines = [f"judge {records['judge'].iloc[0]} on {len(records)} pairs, max_tokens {max_tokens}:"]
    lines += [
        f"  {m:9s}: {rate.loc[m, 'parsed']} of {rate.loc[m, 'n']} verdicts readable, "
        f"{rate.loc[m, 'cut_at_max_tokens']} cut at max_tokens, {int(total[m])} tokens, "
        f"accuracy {accuracy[f'acc_{m}'].iloc[0]:.0f}%"
        for m in MODES
    ]
    return "\n".join([*lines, f"  cost ratio {accuracy['cost_ratio'].iloc[0]:.2f}"])


#: The columns of the judge records the page shows: each mode's verdict, correctness, tokens.
RECORD_COLUMNS = [
    "id",
    "domain",
    "label",
    *(f"{q}_{m}" for m in MODES for q in ("verdict", "correct", "tokens")),
]


def prose_reads() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """The numbers the closing sentences state, as ``(name, csv, column, agg, where)`` for
    :meth:`racer_lib.book.chapter.Prose.value`: per mode its readable verdicts, answers, parse
    rate and cut-offs (``parse_rate.csv``), then the pairs and both modes' accuracy
    (``accuracy.csv``)."""
    reads = [
        (f"{m}_{c}", "parse_rate.csv", c, "one", {"mode": m})
        for m in MODES
        for c in ("parsed", "n", "parse_rate", "cut_at_max_tokens")
    ]
    columns = ("n", "acc_instruct", "acc_reasoning")
    return reads + [(f"accuracy_{c}", "accuracy.csv", c, "one", {}) for c in columns]


def gpu_accuracy(gpu_records: list[pd.DataFrame]) -> tuple[pd.DataFrame, str]:
    """The GPU judges' records pooled: each judge's
    :func:`racer_lib.records.summary.mode_summary`, and the records' provenance."""
    pooled = pd.concat(gpu_records, ignore_index=True)
    return mode_summary(pooled, ["judge"]), rec.provenance(pooled)


#: The run's summary row (:func:`run_row`), which the chapter's claim reads (the models judged).
RUN_CSV = "run.csv"
#: The paper's claims this chapter tests (the reproduction report decides them).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "§2.2 / Table 6",
        "case studies: reasoning helps on explicit verification, is redundant on surface cues, "
        "hurts when it widens the scope",
        registry.JUDGING,
        Excerpts(RUN_CSV, judges=("qwen3-1.7b", "qwen3-4b", "qwen3-8b")),
    ),
)
