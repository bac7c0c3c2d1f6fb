"""Every numeric cell of the paper's tables is a claim of the reproduction report.

The LaTeX tables of ``racer_paper.tex`` (beside the checkout, ``../shared/paper``) are parsed here:
each numeric cell, at its row and column, must be quoted in the text of one of the chapters' claims
(:func:`racer_lib.paper.registry.claims`) whose artifact is that table, and the claim's rule must
read it: a :class:`~racer_lib.claims.rules.Level` comparing that column at that row with the same
number, or one of the findings named in :data:`FINDINGS`. A cell no claim can test is on
:data:`EXCLUDED` with its reason. Conversely, no claim compares with a number the table does not
print at the place the claim reads. The prompt and case-study tables (Tables 5, 6 and 8) hold no
numeric cell.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from racer_lib.claims import rules
from racer_lib.paper import numbers as paper
from racer_lib.paper import registry
from racer_lib.paper.chapters import self_routing

CLAIMS = registry.claims()

PAPER = Path(__file__).parents[1].parent / "shared/paper/racer_paper.tex"


@dataclass(frozen=True)
class Cell:
    """A numeric cell: its table (``Table N``), the row's labels, the column's header (the
    header rows joined) and the number."""

    table: str
    labels: tuple[str, ...]
    header: str
    value: float

    def __str__(self) -> str:
        return f"{self.table} [{' / '.join(self.labels)} | {self.header}] = {self.value:g}"


#: A cell's place as a claim's rule reads it: the rows (column -> value, a subset of a Level
#: cell's ``where``) and the CSV column; ``None`` for a cell no rule reads.
Key = tuple[dict[str, object], str] | None


def _judge(scale: str) -> str:
    return "qwen3-" + scale.strip().lower()


def _table1(labels: tuple[str, ...], header: str) -> Key:
    column = {"# Pairs": "pairs", "Cost Ratio": "cost_ratio"}[header]
    return {"subset": labels[0].lower().replace(" ", "_")}, column


def _table2(labels: tuple[str, ...], header: str) -> Key:
    scale, quantity = header.split()
    column = "accuracy" if quantity.startswith("Acc") else "cost"
    return {"method": labels[0], "judge": _judge(scale)}, column


def _table3(labels: tuple[str, ...], header: str) -> Key:
    budget, quantity = header.split()
    column = "accuracy" if quantity.startswith("Acc") else "cost"
    return {"beta": float(labels[0]), "budget": float(budget.removeprefix("C="))}, column


def _table4(labels: tuple[str, ...], header: str) -> Key:
    benchmark = labels[0].lower().replace(" ", "")
    domain = labels[1].lower().replace(" ", "_")
    return {"benchmark": benchmark, "domain": domain}, {"Count": "pairs", "Proportion": "share"}[
        header
    ]


#: Table 7's columns in its budget rows and its fixed modes' rows (both llama_runs.csv: the
#: fixed modes on each seed's record draw, columns all_instruct_* and all_reasoning_*).
_LLAMA_RUNS = {
    "RACER Acc": "racer_accuracy",
    "RACER Cost": "racer_cost",
    "Random Acc": "random_at_rate_accuracy",
    "Random Cost": "random_at_rate_cost",
}
_LLAMA_MODES = {"RACER Acc": "accuracy", "RACER Cost": "cost"}


def _table7(labels: tuple[str, ...], header: str) -> Key:
    if re.fullmatch(r"[\d.]+", labels[0]):
        return {"budget": float(labels[0])}, _LLAMA_RUNS[header]
    prefix = labels[0].lower().replace("-", "_")  # All-Reasoning -> all_reasoning
    return {}, f"{prefix}_{_LLAMA_MODES[header]}"


_SELF_ROUTING = {
    "Reasoning Fraction": "reasoning_fraction",
    "Accuracy All-instruct": "acc_all_instruct",
    "Accuracy All-reasoning": "acc_all_reasoning",
    "Accuracy Self-routing": "acc_self_routing",
    "Cost Ratio": "cost_all_reasoning",
}


def _table9(labels: tuple[str, ...], header: str) -> Key:
    return {"judge": _judge(labels[0])}, _SELF_ROUTING[header]


@dataclass(frozen=True)
class Layout:
    """How a table of the paper maps to the claims: its label, how many leading columns label
    the row (a numeric one is a key, not a value: β, a budget) and each cell's :data:`Key`."""

    label: str
    label_columns: int
    key: Callable[[tuple[str, ...], str], Key]


LAYOUTS = (
    Layout("table:data_statistics", 2, _table1),
    Layout("tab:routing_results", 1, _table2),
    Layout("tab:beta_sensitivity", 1, _table3),
    Layout("tab:benchmark", 2, _table4),
    Layout("tab:deepseek-results", 1, _table7),
    Layout("tab:self_routing", 1, _table9),
)

#: Cells a finding (not a level) decides: (table, CSV column) -> the finding's pattern. The
#: self-routing chapter tests its reasoning fraction ("more than 95 %") and its accuracy
#: against All-Reasoning's as findings; the claim quotes the paper's numbers.
FINDINGS = {
    ("Table 9", "reasoning_fraction"): self_routing.KEY_REASONS,
    ("Table 9", "acc_self_routing"): self_routing.KEY_ACCURACY,
}

#: Numeric cells no claim tests, with the reason: (table, row labels, header) -> why.
EXCLUDED = {
    ("Table 7", ("All-Instruct",), "RACER Cost"): (
        "the cost unit: All-Instruct's cost is 1 by definition (costs are in units of it)"
    ),
}


# --------------------------------------------------------------------------- parsing the LaTeX


def _float_of(tex: str, label: str) -> str:
    for m in re.finditer(r"\\begin\{(table)\*?\}(.*?)\\end\{\1\*?\}", tex, re.S):
        if f"\\label{{{label}}}" in m.group(2):
            return m.group(2)
    raise AssertionError(f"no table labelled {label} in {PAPER.name}")


def _tabular(body: str) -> str:
    m = re.search(r"\\begin\{(tabularx?)\}((?:\{[^{}]*\})+)(.*?)\\end\{\1\}", body, re.S)
    assert m, "no tabular environment"
    return m.group(3)


def _clean(cell: str) -> str:
    """A cell's text without LaTeX: citations, font commands, math shifts, ``{,}`` thousands
    separators, percent signs and ``(%)`` units dropped."""
    s = re.sub(r"\\cite\{[^}]*\}", "", cell).replace("~", " ")
    s = re.sub(r"\\multirow\{[^}]*\}\{[^}]*\}\{([^{}]*)\}", r"\1", s)
    for _ in range(3):
        s = re.sub(r"\\(?:mathbf|textbf|emph|text|mathrm)\{([^{}]*)\}", r"\1", s)
    s = s.replace("{,}", "").replace("\\#", "#").replace("(\\%)", "").replace("\\%", "")
    s = s.replace("$", "").replace("\\ ", " ")
    return re.sub(r"\s+", " ", s).strip()


def _cells(row: str) -> list[str]:
    """A row's cells, a ``\\multicolumn{n}`` repeated ``n`` times."""
    out = []
    for raw in re.split(r"(?<!\\)&", row):
        m = re.fullmatch(r"\s*\\multicolumn\{(\d+)\}\{[^}]*\}\{(.*)\}\s*", raw, re.S)
        out += [_clean(m.group(2))] * int(m.group(1)) if m else [_clean(raw)]
    return out


def _number(text: str) -> float | None:
    return float(text) if re.fullmatch(r"-?\d+(?:\.\d+)?", text) else None


def parse(tex: str, layout: Layout) -> tuple[list[Cell], list[str]]:
    """The numeric value cells of a table (its row labels carried down where a row leaves them
    empty) and the texts of its row labels and headers."""
    table = paper.ARTIFACTS[layout.label]
    body = re.sub(r"(?<!\\)%.*", "", _tabular(_float_of(tex, layout.label)))
    header_rows, rows, seen_midrule = [], [], False
    for raw in re.split(r"\\\\", body):  # a row ends at \\; the rules before it start it
        seen_midrule |= "\\midrule" in raw  # the header rows are those above the first
        text = re.sub(
            r"\\(?:toprule|midrule|bottomrule)|\\cmidrule(?:\([^)]*\))?\{[^}]*\}", "", raw
        )
        if text.strip():
            (rows if seen_midrule else header_rows).append(text)
    width = max(len(_cells(r)) for r in rows)
    headers = [" ".join(h).strip() for h in zip(*[_cells(r) + [""] * width for r in header_rows])]
    cells, texts, labels = [], [*headers], [""] * layout.label_columns
    for row in rows:
        parts = _cells(row)
        labels = [p or labels[k] for k, p in enumerate(parts[: layout.label_columns])]
        texts += labels
        for header, text in zip(headers[layout.label_columns :], parts[layout.label_columns :]):
            value = _number(text)
            if value is not None:
                cells.append(Cell(table, tuple(labels), _header(header), value))
    return cells, texts


def _header(header: str) -> str:
    """A header without its unit: ``RACER Acc (%)`` -> ``RACER Acc``; ``Accuracy (%)
    All-instruct`` -> ``Accuracy All-instruct``."""
    return re.sub(r"\s+", " ", header.replace("(%)", "").replace("()", "")).strip()


# --------------------------------------------------------------------------- claims


_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w]|\.\d)")


def quoted(text: str) -> list[float]:
    """The numbers a claim's text quotes (not the digits of a name: Qwen3-1.7B, rewardbench2)."""
    return [float(x) for x in _NUMBER.findall(text)]


def _same(a: object, b: object) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-9)
    return str(a) == str(b)


def _of_table(claim: rules.Claim, table: str) -> bool:
    return re.match(rf"{re.escape(table)}\b", claim.artifact) is not None


def _reads(claim: rules.Claim, cell: Cell, key: Key) -> bool:
    """Whether ``claim``'s rule compares ``cell`` (at ``key``) with its number."""
    if key is None:
        return False
    where, column = key
    rule = claim.rule
    if isinstance(rule, rules.Finding):
        pattern = FINDINGS.get((cell.table, column))
        return pattern is not None and rule.key == pattern
    if not isinstance(rule, rules.Level) or rule.column != column:
        return False
    return any(
        _same(value, cell.value) and all(k in at and _same(at[k], v) for k, v in where.items())
        for at, value in rule.cells
    )


def _under(layout: Layout, cell: Cell, where: dict[str, object]) -> bool:
    """Whether ``cell`` lies at the rows ``where`` selects."""
    key = layout.key(cell.labels, cell.header)
    return key is not None and all(k in where and _same(where[k], v) for k, v in key[0].items())


def covering(cell: Cell, key: Key) -> list[rules.Claim]:
    """The claims of ``cell``'s table that quote its number and whose rule reads it there."""
    return [
        c
        for c in CLAIMS
        if _of_table(c, cell.table)
        and any(_same(x, cell.value) for x in quoted(c.claim))
        and _reads(c, cell, key)
    ]


@pytest.fixture(scope="module")
def tables() -> dict[str, tuple[Layout, list[Cell], list[str]]]:
    if not PAPER.is_file():
        pytest.skip(f"no paper source at {PAPER} (the tables' cells cannot be read)")
    tex = PAPER.read_text(encoding="utf-8")
    return {paper.ARTIFACTS[lay.label]: (lay, *parse(tex, lay)) for lay in LAYOUTS}


# --------------------------------------------------------------------------- tests


def test_the_parser_reads_each_table_whole(tables):
    """The count of numeric cells per table, from its shape (rows x numeric columns)."""
    counts = {name: len(cells) for name, (_, cells, _) in tables.items()}
    assert counts == {
        "Table 1": 3 * 2,
        "Table 2": 4 * 6,
        "Table 3": 4 * 6,
        "Table 4": 13 * 2,
        "Table 7": 4 * 4 + 2 * 2,
        "Table 9": 3 * 5,
    }
    first = tables["Table 1"][1][0]
    assert (first.labels, first.header, first.value) == (
        ("Magpie Ultra", "Train 1"),
        "# Pairs",
        27785,
    )
    knowledge = [c for c in tables["Table 4"][1] if c.labels[1] == "Knowledge"]
    assert [(c.labels[0], c.value) for c in knowledge] == [("JudgeBench", 308), ("JudgeBench", 50)]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: paper.ARTIFACTS[lay.label])
def test_every_numeric_cell_is_a_claim_or_excluded_with_a_reason(tables, layout):
    _, cells, _ = tables[paper.ARTIFACTS[layout.label]]
    missing = []
    for cell in cells:
        reason = EXCLUDED.get((cell.table, cell.labels[: layout.label_columns], cell.header))
        if reason is not None:
            continue
        if not covering(cell, layout.key(cell.labels, cell.header)):
            missing.append(str(cell))
    assert not missing, "numeric cells no claim tests:\n" + "\n".join(missing)


def test_the_exclusions_are_cells_of_the_tables_and_no_claim_tests_them(tables):
    by_table = {name: (lay, cells) for name, (lay, cells, _) in tables.items()}
    for (table, labels, header), reason in EXCLUDED.items():
        layout, cells = by_table[table]
        (cell,) = [c for c in cells if c.labels[: len(labels)] == labels and c.header == header]
        assert reason and not covering(cell, layout.key(cell.labels, cell.header)), cell


def _compares(claim: rules.Claim) -> bool:
    """A claim that compares with the paper's numbers: a level, or a finding of
    :data:`FINDINGS`."""
    if isinstance(claim.rule, rules.Level):
        return True
    return isinstance(claim.rule, rules.Finding) and claim.rule.key in FINDINGS.values()


def test_every_claim_of_a_table_is_matched_by_its_cells(tables):
    """No claim quotes a number its table does not print, and every level compares each of its
    numbers with the cell the table prints at that row and column."""
    seen = 0
    for name, (layout, cells, texts) in tables.items():
        printed = [c.value for c in cells]
        printed += [x for t in texts for x in quoted(t.replace("=", " "))]
        for claim in (c for c in CLAIMS if _of_table(c, name) and _compares(c)):
            seen += 1
            stray = [x for x in quoted(claim.claim) if not any(_same(x, p) for p in printed)]
            assert not stray, (claim.artifact, claim.claim, stray)
            matched = [c for c in cells if claim in covering(c, layout.key(c.labels, c.header))]
            assert matched, (claim.artifact, claim.claim)
            if isinstance(claim.rule, rules.Level):
                for where, value in claim.rule.cells:  # each number, where the table prints it
                    at = [c for c in matched if _same(c.value, value) and _under(layout, c, where)]
                    assert at, (claim.claim, where, value)
    assert seen >= 30


def test_the_layouts_are_the_tables_of_the_artifacts():
    assert {paper.ARTIFACTS[lay.label] for lay in LAYOUTS} == {
        "Table 1",
        "Table 2",
        "Table 3",
        "Table 4",
        "Table 7",
        "Table 9",
    }
    assert {table for table, _ in FINDINGS} | {table for table, _, _ in EXCLUDED} <= {
        paper.ARTIFACTS[lay.label] for lay in LAYOUTS
    }
