"""Chapter 13: Fig. 2 on LLMBar's released judges (real data).

The chapter is executed once with papermill into a temporary folder. Its tables are checked
against numbers recomputed here: accuracies from LLMBar's own ``statistics.json`` counts (not
from the records the chapter reads), agreement cells and cost ratios from the raw columns of
``llmbar.llmbar_records``. The module is skipped when the LLMBar files are not available (set
RACER_DATA_DIR to a mirror laid out by URL, see data_manifest.yaml).
"""

import os
from pathlib import Path

import jupytext
import nbformat
import numpy as np
import pandas as pd
import papermill
import pytest
from conftest import execute_notebook
from papermill.exceptions import PapermillExecutionError

from racer_lib.evaluation.verdicts import ALPHA
from racer_lib.paper import claims, registry
from racer_lib.paper.chapters import llmbar_judges as ch
from racer_lib.records import llmbar
from racer_lib.records import sources as data

ROOT = Path(__file__).resolve().parents[1]
STEM = "13_llmbar_judges"
JUDGES = ["GPT-4", "ChatGPT", "ChatGPT-0301", "LLaMA2", "PaLM2", "Falcon"]
SUBSETS = ["natural", "neighbor", "gptinst", "gptout", "manual"]
SUBSET_SIZES = {"natural": 100, "neighbor": 134, "gptinst": 92, "gptout": 47, "manual": 46}
MODES = {"instruct": "Vanilla", "reasoning": "CoT"}
CELLS = ["both_right", "only_reasoning", "only_instruct", "both_wrong"]
OUTPUTS = [
    "agreement_patterns.csv",
    "anchors.json",
    "cot_effect.csv",
    "delta_accuracy_by_judge.csv",
    "delta_accuracy_by_subset.csv",
    "fig2_llmbar_agreement.png",
    "fig2_llmbar_delta_accuracy_vs_cost.png",
    "findings.csv",
    "position_bias.csv",
    "position_bias_reading.csv",
    "prose.csv",
    "reasoning_tests.csv",
]

pytestmark = pytest.mark.slow


def _mirror_env():
    """RACER_DATA_DIR as set, else the sibling mirror ../shared/data if there is one."""
    if os.environ.get(data.ENV_DATA_DIR):
        return os.environ[data.ENV_DATA_DIR]
    sibling = ROOT.parent / "shared" / "data"
    return str(sibling) if sibling.is_dir() else None


def _missing_llmbar_files():
    files = [f for f in data.load_manifest().files if f.source == "llmbar"]
    return [f for f in files if data.where(f) == "missing"]


@pytest.fixture(scope="module")
def mirror():
    """Point RACER_DATA_DIR at the mirror for this module; skip if LLMBar files are missing."""
    with pytest.MonkeyPatch.context() as mp:
        value = _mirror_env()
        if value:
            mp.setenv(data.ENV_DATA_DIR, value)
        missing = _missing_llmbar_files()
        if missing:
            pytest.skip(
                f"{len(missing)} LLMBar data files are not available from "
                f"{data.location()} (first: {missing[0]}); set {data.ENV_DATA_DIR} to a "
                "mirror laid out by URL, see data_manifest.yaml"
            )
        yield value


def _execute(tmp, **parameters):
    src = tmp / f"{STEM}.ipynb"
    jupytext.write(jupytext.read(ROOT / "notebooks" / f"{STEM}.md"), src)
    results = tmp / "results"
    executed = tmp / f"{STEM}.out.ipynb"
    execute_notebook(
        src,
        executed,
        parameters={"profile": "test", "results_dir": str(results), **parameters},
    )
    return results, executed


@pytest.fixture(scope="module")
def run(mirror, tmp_path_factory):
    """The chapter executed once with its default parameters: (results folder, notebook)."""
    return _execute(tmp_path_factory.mktemp("ch11"))


@pytest.fixture(scope="module")
def stats(mirror):
    """LLMBar's statistics.json: {(judge, mode, subset): parsed statistics}."""
    return {
        (j, m, s): st
        for j in JUDGES
        for m in MODES
        for s, st in llmbar.llmbar_statistics(j, m).items()
    }


@pytest.fixture(scope="module")
def records(mirror):
    tokenizer = llmbar.load_tokenizer()
    return {
        (j, o): llmbar.llmbar_records(j, o, tokenizer=tokenizer)
        for j in JUDGES
        for o in ("original", "swapped")
    }


def _csv(run, name):
    table = pd.read_csv(run[0] / name)
    assert list(table.columns)[0] == "provenance", name
    assert set(table["provenance"]) == {"release"}, name
    return table


def _acc(stats, judge, mode, subsets, key):
    """Accuracy (%) over ``subsets`` from statistics.json counts ``key`` (correct_False/True)."""
    correct = sum(stats[(judge, mode, s)][key][0] for s in subsets)
    total = sum(stats[(judge, mode, s)][key][1] for s in subsets)
    return 100 * correct / total, total


def test_declares_the_parameters_of_the_brief(tmp_path):
    src = tmp_path / f"{STEM}.ipynb"
    jupytext.write(jupytext.read(ROOT / "notebooks" / f"{STEM}.md"), src)
    params = papermill.inspect_notebook(src)
    assert list(params) == ["profile", "results_dir", "judges", "order"]
    assert params["judges"]["default"].replace(" ", "") == (
        '["GPT-4","ChatGPT","ChatGPT-0301","LLaMA2","PaLM2","Falcon"]'
    )
    assert params["order"]["default"] == '"original"'


def test_provenance_admonition_names_the_pinned_commit():
    text = (ROOT / "notebooks" / f"{STEM}.md").read_text(encoding="utf-8")
    commit = data.load_manifest().sources["llmbar"]["commit"]
    admonition = text[text.index("```{admonition} Provenance") :]
    admonition = admonition[: admonition.index("\n```\n")]
    assert commit in admonition
    assert "not simulated" in admonition


def test_writes_every_output_and_says_so(run):
    results, executed = run
    assert sorted(p.name for p in results.iterdir()) == OUTPUTS
    nb = nbformat.read(executed, as_version=4)
    printed = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    # each writer prints the path it wrote (Prose displays its sentences instead, checked by
    # tests/test_prose.py; anchors.json lists what the page shows, tests/test_report_panel.py)
    for name in set(OUTPUTS) - {"prose.csv", "anchors.json"}:
        assert f"wrote {results / name}" in printed
    source_cell = next(c for c in nb.cells if "data.location()" in c.source)
    text = "".join(o.get("text", "") for o in source_cell.outputs)
    assert "reading data from: mirror" in text and "sha256 verified" in text


def test_figures_are_pngs(run):
    for name in ("fig2_llmbar_delta_accuracy_vs_cost.png", "fig2_llmbar_agreement.png"):
        path = run[0] / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert path.stat().st_size > 10_000, name


def test_accuracy_by_subset_equals_statistics_json(run, stats):
    table = _csv(run, "delta_accuracy_by_subset.csv")
    assert set(table["order"]) == {"original"}
    assert len(table) == len(JUDGES) * len(SUBSETS)
    assert set(zip(table["judge"], table["subset"])) == {(j, s) for j in JUDGES for s in SUBSETS}
    for row in table.itertuples():
        acc = {}
        for mode in MODES:
            acc[mode], total = _acc(stats, row.judge, mode, [row.subset], "correct_False")
            assert total == row.n == SUBSET_SIZES[row.subset]
        assert row.acc_instruct == pytest.approx(acc["instruct"], abs=1e-9), row
        assert row.acc_reasoning == pytest.approx(acc["reasoning"], abs=1e-9), row
        assert row.delta_accuracy == pytest.approx(acc["reasoning"] - acc["instruct"], abs=1e-9), (
            row
        )


def test_accuracy_by_judge_pools_statistics_json(run, stats):
    table = _csv(run, "delta_accuracy_by_judge.csv")
    assert list(table["judge"]) == JUDGES
    for row in table.itertuples():
        acc = {m: _acc(stats, row.judge, m, SUBSETS, "correct_False")[0] for m in MODES}
        assert row.n == 419
        assert row.acc_instruct == pytest.approx(acc["instruct"], abs=1e-9)
        assert row.acc_reasoning == pytest.approx(acc["reasoning"], abs=1e-9)
        assert row.delta_accuracy == pytest.approx(acc["reasoning"] - acc["instruct"], abs=1e-9)


def test_cost_ratios_are_token_sums_of_the_records(run, records):
    by_subset = _csv(run, "delta_accuracy_by_subset.csv")
    by_judge = _csv(run, "delta_accuracy_by_judge.csv")
    for row in by_subset.itertuples():
        r = records[(row.judge, "original")]
        r = r[r["subset"] == row.subset]
        tokens = r[["tokens_instruct", "tokens_reasoning"]].astype(float).sum()
        assert row.cost_ratio == pytest.approx(
            tokens["tokens_reasoning"] / tokens["tokens_instruct"], rel=1e-12
        )
        assert row.mean_tokens_instruct == pytest.approx(r["tokens_instruct"].mean())
    for row in by_judge.itertuples():
        r = records[(row.judge, "original")]
        assert row.cost_ratio == pytest.approx(
            r["tokens_reasoning"].astype(float).sum() / r["tokens_instruct"].astype(float).sum()
        )
        assert row.cost_ratio > 5  # Vanilla answers are a few tokens, CoT ones sentences


def test_agreement_cells_sum_to_the_pairs_and_match_both_modes(run, stats, records):
    table = _csv(run, "agreement_patterns.csv")
    assert list(table["judge"]) == JUDGES
    for row in table.itertuples():
        cells = {c: getattr(row, c) for c in CELLS}
        assert sum(cells.values()) == row.n == 419
        # the cells add up to each mode's correct count of LLMBar's statistics
        vanilla = sum(stats[(row.judge, "instruct", s)]["correct_False"][0] for s in SUBSETS)
        cot = sum(stats[(row.judge, "reasoning", s)]["correct_False"][0] for s in SUBSETS)
        assert cells["both_right"] + cells["only_instruct"] == vanilla
        assert cells["both_right"] + cells["only_reasoning"] == cot
        # and equal the cells counted from the raw columns
        r = records[(row.judge, "original")]
        r0, r1 = r["correct_instruct"].to_numpy(bool), r["correct_reasoning"].to_numpy(bool)
        assert cells == {
            "both_right": (r0 & r1).sum(),
            "only_reasoning": (~r0 & r1).sum(),
            "only_instruct": (r0 & ~r1).sum(),
            "both_wrong": (~r0 & ~r1).sum(),
        }
        shares = [getattr(row, f"share_{c}") for c in CELLS]
        assert sum(shares) == pytest.approx(1.0)
        assert row.share_one_mode_right == pytest.approx(
            (cells["only_reasoning"] + cells["only_instruct"]) / 419
        )
        oracle = 100 * (r0 | r1).mean()
        assert row.oracle_accuracy == pytest.approx(oracle)
        assert row.headroom == pytest.approx(oracle - 100 * max(r0.mean(), r1.mean()))
    by_subset = _csv(run, "delta_accuracy_by_subset.csv")
    assert (by_subset[CELLS].sum(axis=1) == by_subset["n"]).all()


def test_position_bias_equals_statistics_json_in_both_orders(run, stats, records):
    table = _csv(run, "position_bias.csv")
    assert list(zip(table["judge"], table["mode"])) == [(j, m) for j in JUDGES for m in MODES]
    for row in table.itertuples():
        assert row.prompt == MODES[row.mode]
        assert row.acc_original == pytest.approx(
            _acc(stats, row.judge, row.mode, SUBSETS, "correct_False")[0], abs=1e-9
        )
        assert row.acc_swapped == pytest.approx(
            _acc(stats, row.judge, row.mode, SUBSETS, "correct_True")[0], abs=1e-9
        )
        # consistency: LLMBar's own "equal" count (same winner in both orders)
        equal = sum(stats[(row.judge, row.mode, s)]["equal"][0] for s in SUBSETS)
        assert row.consistent == equal
        assert row.consistency == pytest.approx(100 * equal / 419)
        both = sum(stats[(row.judge, row.mode, s)]["correct_both"][0] for s in SUBSETS)
        assert row.right_in_both_orders == both
        a = records[(row.judge, "original")].set_index("id")[f"verdict_{row.mode}"]
        b = records[(row.judge, "swapped")].set_index("id")[f"verdict_{row.mode}"]
        b = b.loc[a.index].astype(str)
        a = a.astype(str)
        assert row.first_output_picked_original == pytest.approx(100 * (a == "A").mean())
        assert row.first_output_picked_swapped == pytest.approx(100 * (b == "B").mean())


def _binomial_p(k, m, alternative):
    """The exact binomial p-value of ``k`` of ``m`` under a fair coin (scipy, not the book's)."""
    from scipy.stats import binomtest

    return binomtest(k, m, 0.5, alternative=alternative).pvalue if m else 1.0


def _holm(ps):
    from statsmodels.stats.multitest import multipletests

    return multipletests(ps, alpha=ALPHA, method="holm")[1]


def _mcnemar_ps(r):
    """``(p CoT more accurate, p CoT less accurate)`` on the records ``r``, pair by pair."""
    r0, r1 = r["correct_instruct"].to_numpy(bool), r["correct_reasoning"].to_numpy(bool)
    gained, lost = int((r1 & ~r0).sum()), int((r0 & ~r1).sum())
    m = gained + lost
    return _binomial_p(gained, m, "greater"), _binomial_p(gained, m, "less")


def _decision(holds, fails):
    return "holds" if holds else "fails" if fails else "inconclusive"


def test_findings_are_decided_over_the_pairs(run, records):
    """Each finding recomputed from the records with scipy's exact binomial test (McNemar's on
    the discordant pairs) and Holm's correction: decisions, statuses and the row the
    reproduction report reads."""
    table = _csv(run, "findings.csv")
    assert list(table.columns[:4]) == ["provenance", "finding", "key", "observed"]
    assert set(claims.VERDICT_COLUMNS) <= set(table.columns)
    assert list(table.columns[-2:]) == ["status", "basis"]
    assert list(table["finding"]) == [ch.LOWERS, ch.CELL_LE0, ch.MINORITY, ch.IMPROVES]
    original = {j: records[(j, "original")] for j in JUDGES}
    by_judge = np.array([_mcnemar_ps(original[j]) for j in JUDGES])
    by_cell = np.array(
        [_mcnemar_ps(original[j][original[j]["subset"] == s]) for j in JUDGES for s in SUBSETS]
    )
    discordant = [
        int((r["correct_instruct"] != r["correct_reasoning"]).sum()) for r in original.values()
    ]
    minority = np.array(
        [[_binomial_p(k, 419, "less"), _binomial_p(k, 419, "greater")] for k in discordant]
    )
    up, down = _holm(by_judge[:, 0]), _holm(by_judge[:, 1])
    cell_down, cell_up = _holm(by_cell[:, 1]), _holm(by_cell[:, 0])
    many = _holm(minority[:, 1])
    # "every judge" holds as an intersection-union test: every raw p-value below the level
    few_raw, up_raw = minority[:, 0], by_judge[:, 0]
    expected = [
        _decision((down < ALPHA).any(), (up < ALPHA).all()),
        _decision((cell_down < ALPHA).any(), (cell_up < ALPHA).all()),
        _decision((few_raw < ALPHA).all(), (many < ALPHA).any()),
        _decision((up_raw < ALPHA).all(), (down < ALPHA).any()),
    ]
    assert list(table["decision"]) == expected
    # real judges: every finding is evidence, read by its decision (never "by construction")
    status = {"holds": claims.REPRODUCED, "fails": claims.NOT_REPRODUCED}
    assert list(table["status"]) == [status.get(d, claims.INCONCLUSIVE) for d in expected]
    assert (table["n"] >= min(SUBSET_SIZES.values())).all()
    assert table["test"].str.contains("exact").all()
    every = f"every one of {len(JUDGES)} (intersection-union)"
    assert table["test"].str.contains(every, regex=False).sum() == 2
    # the p-value of "every judge" is its weakest member's (an intersection-union test)
    assert table["p"].iloc[3] == pytest.approx(up_raw.max())
    # the chapter's claim of §2.1 on LLMBar reads exactly the last row (by its key)
    (claim,) = ch.CLAIMS
    assert claim.chapter == registry.LLMBAR_JUDGES
    matched = table["key"] == claim.rule.key
    assert list(matched) == [False, False, False, True]
    tests = _csv(run, "reasoning_tests.csv")
    assert list(tests["judge"]) == JUDGES
    assert np.allclose(tests["p_improves"], by_judge[:, 0])
    assert np.allclose(tests["p_lowers_holm"], down)
    shown = np.where(
        up < ALPHA, "more accurate", np.where(down < ALPHA, "less accurate", "undecided")
    )
    assert list(tests["shown"]) == list(shown)
    assert (tests["delta_lo"] <= tests["delta_accuracy"]).all()
    assert (tests["delta_accuracy"] <= tests["delta_hi"]).all()


def test_missing_files_stop_the_chapter_with_the_data_error(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv(data.ENV_DATA_DIR, str(tmp_path / "empty-mirror"))
    with pytest.raises(PapermillExecutionError) as info:
        _execute(tmp_path)
    assert info.value.ename == "DataError"
    assert "missing from the mirror" in info.value.evalue
    assert "RACER_DATA_DIR" in info.value.evalue
