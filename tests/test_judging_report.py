"""What chapter 02 shows of a judging run (racer_lib.paper.chapters.judging: tables, HTML
views, figure, summary) and its GPU plan (racer_lib.judging.gpu), on runs of the fake and
stand-in backends of test_judging."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from test_judging import FlakyBackend, make_pairs, vllm_stub  # noqa: E402, F401

from racer_lib import judging
from racer_lib.errors import ConfigError  # noqa: E402
from racer_lib.judging import gpu, prompts  # noqa: E402
from racer_lib.paper.chapters import judging as report
from racer_lib.records import io as rio
from racer_lib.records import schema as rec  # noqa: E402
from racer_lib.records.summary import mode_summary


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished run of the fake judge on 6 pairs: result, records and raw parts."""
    folder = tmp_path_factory.mktemp("run")
    pairs = make_pairs(6)
    result = judging.run_judging(
        pairs,
        FlakyBackend(),
        judging.RunSpec.of_judge(judging.JudgeSpec("hybrid", "fake"), folder, batch_size=4, seed=2),
        progress=False,
    )
    records = judging.merge(folder, pairs)
    parts, _, _ = judging.read_shards(folder)
    return result, records, parts


# ----------------------------------------------------------------------------------------
# The prompts and the verdict format


def test_word_diff_marks_the_differing_words():
    a, b, runs = report.word_diff("give a short answer <now>", "give an answer <now>")
    assert runs == [("a short", "an")]
    assert a == f"give {report.RED.format('a short')} answer &lt;now&gt;"
    assert b == f"give {report.RED.format('an')} answer &lt;now&gt;"
    assert report.word_diff("same text", "same text") == ("same text", "same text", [])


def test_prompt_table_is_built_from_the_prompts():
    table, runs = report.prompt_table()
    assert (
        runs
        == report.word_diff(
            prompts.SYSTEM_PROMPTS["instruct"], prompts.SYSTEM_PROMPTS["reasoning"]
        )[2]
        and runs
    )
    for text in (prompts.USER_TEMPLATE, prompts.COT_INSTRUCTION):
        assert report.html.escape(text) in table
    assert table.count("<tr>") == 4


def test_verdict_examples_are_parsed_by_the_parser():
    table = report.verdict_examples()
    assert len(table) == len(report.VERDICT_EXAMPLES)
    verdicts = dict(zip(table["case"], table["verdict"], strict=True))
    assert verdicts["a verdict at the end"] == "A" and verdicts["the anchored verdict wins"] == "B"
    assert verdicts["markdown around it"] == "B" and verdicts["a lowercase letter"] == "A"
    reasons = dict(zip(table["case"], table["reason"], strict=True))
    assert reasons["two verdicts, none anchored"] == "conflict"
    assert reasons["a look-alike letter (Cyrillic)"] == "confusable"
    assert reasons["cut off in the verdict"] == "truncated"
    for case in (
        "two verdicts, none anchored",
        "a look-alike letter (Cyrillic)",
        "cut off in the verdict",
        "the format echoed",
        "a tie",
        "single brackets",
        "verdict only while thinking",
        "no verdict",
    ):
        assert verdicts[case] == "unparseable", case


# ----------------------------------------------------------------------------------------
# Tables of a run


def test_run_row(run):
    result, _, _ = run
    row = report.run_row(result)
    assert row == {
        "judge": "fake",
        "model": "fake-judge",
        "n_pairs": 6,
        "n_items": 12,
        "n_done_before": 0,
        "n_judged": 12,
        "n_parts": 4,
        "seconds": round(result.seconds, 1),
    }


def test_verdict_table_and_parse_rates(run):
    _, records, parts = run
    table = report.verdict_table(records, parts)
    assert list(table.columns) == [
        "id",
        "dataset",
        "domain",
        "preferred",
        "mode",
        "verdict",
        "parse",
        "correct",
        "tokens",
        "finish_reason",
    ]
    assert table["mode"].tolist() == ["instruct"] * 6 + ["reasoning"] * 6
    raw = parts.set_index(["pair_id", "task"])
    for row in table.itertuples(index=False):
        record = records.set_index("id").loc[row.id]
        assert row.verdict == record[f"verdict_{row.mode}"]
        assert row.tokens == record[f"tokens_{row.mode}"]
        assert row.parse == raw.loc[(row.id, row.mode), "parse"]
    rates = report.parse_rates(table).set_index("mode")
    for mode in rec.MODES:
        readable = (records[f"verdict_{mode}"] != rec.UNPARSEABLE).sum()
        assert rates.loc[mode, "parsed"] == readable and rates.loc[mode, "n"] == 6
        assert rates.loc[mode, "parse_rate"] == pytest.approx(readable / 6)
        assert rates.loc[mode, "no_verdict"] == rates.loc[mode, "unparseable"]  # fake: "none"
    reasons = ["no_verdict", "both_letters", "tie", "conflict", "confusable", "truncated",
               "other_format"]  # fmt: skip
    assert (rates[reasons].sum(axis=1) == rates["unparseable"]).all()


def test_token_table_and_cost_ratio(run):
    _, records, _ = run
    tokens = report.token_table(records, max_tokens=99).set_index("mode")
    for mode in rec.MODES:
        column = records[f"tokens_{mode}"]
        assert (tokens.loc[mode, "total"], tokens.loc[mode, "min"], tokens.loc[mode, "max"]) == (
            column.sum(),
            column.min(),
            column.max(),
        )
        assert tokens.loc[mode, "mean"] == pytest.approx(column.mean())
    assert tokens.loc["instruct", "cost_ratio"] == 1.0
    assert tokens.loc["reasoning", "cost_ratio"] == pytest.approx(
        records["tokens_reasoning"].sum() / records["tokens_instruct"].sum()
    )
    assert (tokens["max_tokens"] == 99).all()


def test_excerpt_folds_space_and_cuts_at_a_word():
    assert report.excerpt("  a\n\n b  ") == "a b"
    assert report.excerpt("one two three four", n=9) == "one two …"
    assert report.excerpt(None) == "None" and report.excerpt("") == ""


def test_case_table_puts_disagreements_first(run):
    _, records, parts = run
    cases = report.case_table(records, parts, n=4)
    assert len(cases) == 4 and list(cases.columns) == [
        "dataset_id",
        "instruct_verdict",
        "instruct_correct",
        "instruct_excerpt",
        "reasoning_verdict",
        "reasoning_correct",
        "reasoning_excerpt",
    ]
    disagree = cases["instruct_correct"] != cases["reasoning_correct"]
    assert list(disagree) == sorted(disagree, reverse=True)  # disagreements first
    answers = parts.set_index(["pair_id", "task"])["answer"]
    byshort = {f"toy-{r.domain} ({r.id[:8]})": r.id for r in records.itertuples()}
    for row in cases.itertuples(index=False):
        for mode in rec.MODES:
            assert getattr(row, f"{mode}_excerpt") == report.excerpt(
                answers[(byshort[row.dataset_id], mode)]
            )
    html = report.cases_html(cases, reasoning="Reasoning judge")
    assert html.count("<tr>") == 5 and "<th>Reasoning judge</th>" in html
    assert html.count("Correct</b>") + html.count("Incorrect</b>") == 8
    assert len(report.case_table(records, parts)) == 3


def test_figure_and_summary(run):
    _, records, parts = run
    rates = report.parse_rates(report.verdict_table(records, parts))
    tokens = report.token_table(records, 64)
    accuracy = mode_summary(records)
    fig = report.tokens_parse_accuracy_figure(records, rates, accuracy, 64)
    assert len(fig.axes) == 2 and len(fig.axes[0].patches) == 2 * len(records)
    plt.close(fig)
    text = report.summary(records, rates, tokens, accuracy, 64).splitlines()
    assert text[0] == "judge fake on 6 pairs, max_tokens 64:"
    assert text[1].startswith("  instruct : ") and text[2].startswith("  reasoning: ")
    assert f"{int(tokens['total'].iloc[0])} tokens" in text[1]
    assert text[3] == f"  cost ratio {accuracy['cost_ratio'].iloc[0]:.2f}"


# ----------------------------------------------------------------------------------------
# The GPU plan


def test_gpu_plan_script_and_selection(tmp_path, monkeypatch, capsys):
    lacks = {"org/Big-A": ["no CUDA GPU"], "org/Small-B": []}
    monkeypatch.setattr(gpu, "missing_here", lambda model: lacks[model])
    jobs = gpu.plan(list(lacks), "judgebench", tmp_path, max_tokens=8192, batch_size=256, seed=1)
    run, merge = jobs[0].commands
    assert run == judging.command_string(
        dataset="judgebench",
        model="org/Big-A",
        setup="hybrid",
        backend="vllm",
        max_tokens=8192,
        batch_size=256,
        seed=1,
        out=tmp_path / "gpu" / "big-a",
    )
    assert merge == (
        f"racer judge merge {tmp_path / 'gpu' / 'big-a'} --out "
        f"{tmp_path / 'judgebench_big-a.parquet'}"
    )
    script = gpu.write_script(jobs, tmp_path / "gpu.sh").read_text().splitlines()
    assert script[0] == "#!/usr/bin/env bash" and script[3:] == [
        *jobs[0].commands,
        *jobs[1].commands,
    ]
    assert gpu.select(jobs, "auto", tmp_path / "gpu.sh") == [jobs[1]]
    printed = capsys.readouterr().out
    assert "GPU cell skipped for 1 of 2 models (run_gpu = 'auto')" in printed
    assert "org/Big-A: no CUDA GPU" in printed and run in printed
    assert f"(also written to {tmp_path / 'gpu.sh'})" in printed
    assert gpu.select(jobs, False) == [] and "run_gpu is False" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="run_gpu is True but .*\n  org/Big-A: no CUDA GPU"):
        gpu.select(jobs, True)
    with pytest.raises(ConfigError, match="run_gpu must be 'auto', True or False"):
        gpu.check_run_gpu("yes")


def test_a_gpu_job_judges_and_merges(vllm_stub, tmp_path, monkeypatch, capsys):  # noqa: F811
    make_pairs(4).to_json(tmp_path / "toy.jsonl", orient="records", lines=True)
    monkeypatch.setattr(gpu, "missing_here", lambda model: [])
    (job,) = gpu.select(
        gpu.plan(
            ["Qwen/Qwen3-4B"],
            str(tmp_path / "toy.jsonl"),
            tmp_path,
            max_tokens=40,
            batch_size=8,
            seed=0,
        ),
        "auto",
    )
    records = job.execute()
    printed = capsys.readouterr().out
    assert printed.startswith(f"running: {job.commands[0]}")
    assert f"wrote 4 judge records to {tmp_path / 'toy_qwen3-4b.parquet'}" in printed
    pd.testing.assert_frame_equal(rio.read_records(job.records), records, check_dtype=False)
    assert set(records["source"]) == {"generated:vllm:Qwen/Qwen3-4B"}
    assert np.isin(records["verdict_instruct"], rec.VERDICTS).all()
    assert vllm_stub.CALLS and all(c["params"].max_tokens == 40 for c in vllm_stub.CALLS)
