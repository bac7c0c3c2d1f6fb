"""No output overwrites an input (issue 41): every ``racer`` command that writes a file refuses
an ``--out`` that is one of the files it reads (symlinks resolved), in one line naming both,
exit 2, before anything is read, so the input stays byte for byte as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from racer_lib import cli
from racer_lib.cli.common import refuse_overwrite
from racer_lib.errors import InputError
from racer_lib.records import io as rio


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    """Small simulated records with their embeddings beside them."""
    path = tmp_path_factory.mktemp("overwrite") / "mix.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--scale", "0.03", "--dim", "8"]
    assert cli.main([*argv, "--out", str(path)]) == 0
    return path


def refused(argv: list[str], target: Path, inputs: list[Path], capsys) -> str:
    """Run ``racer ARGV``; it must exit 2 with one line naming ``target``, and leave every file
    of ``inputs`` as it was. The line."""
    capsys.readouterr()
    before = {path: path.read_bytes() for path in inputs}
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and str(target) in err[0], err
    assert "it would be overwritten" in err[0], err
    assert {path: path.read_bytes() for path in inputs} == before
    return err[0]


def test_the_helper_resolves_symlinks_and_names_both(tmp_path: Path) -> None:
    data = tmp_path / "data.parquet"
    data.write_bytes(b"x")
    link = tmp_path / "link.parquet"
    link.symlink_to(data)
    with pytest.raises(InputError) as info:
        refuse_overwrite([("--out", link)], [("records file", data)], hint=" (say)")
    assert str(info.value) == (
        f"{link}: --out is the records file {data}; it would be overwritten. Give another "
        "file (say)"
    )
    refuse_overwrite([("--out", tmp_path / "other.pt")], [("records file", data), ("x", None)])
    refuse_overwrite([("--out", None)], [("records file", data)])


def test_router_train_refuses_an_out_that_is_its_records_or_embeddings(
    records: Path, tmp_path: Path, capsys
) -> None:
    epath = rio.embeddings_path(records)
    link = tmp_path / "records-link.parquet"
    link.symlink_to(records)
    for target, says in [
        (records, "--out is the records file"),
        (epath, "--out is the embeddings file"),
        (link, "--out is the records file"),
    ]:
        argv = ["router", "train", str(records), "--budget", "3", "--out", str(target), "-q"]
        assert says in refused(argv, target, [records, epath], capsys)


def test_records_import_refuses_an_out_that_is_an_outputs_file(tmp_path: Path, capsys) -> None:
    instruct, reasoning = tmp_path / "haiku.jsonl", tmp_path / "o1.jsonl"
    instruct.write_text('{"pair_id": "1"}\n', encoding="utf-8")
    reasoning.write_text('{"pair_id": "2"}\n', encoding="utf-8")
    for target in (instruct, reasoning):
        argv = ["records", "import", "--format", "judgebench", "--instruct", str(instruct)]
        argv += ["--reasoning", str(reasoning), "--out", str(target)]
        refused(argv, target, [instruct, reasoning], capsys)


def test_pairs_embed_refuses_an_out_that_is_the_pairs_file(tmp_path: Path, capsys) -> None:
    pairs = tmp_path / "pairs.parquet"
    pairs.write_bytes(b"PAR1 not really")
    line = refused(["pairs", "embed", str(pairs), "--out", str(pairs)], pairs, [pairs], capsys)
    assert "--out is the pairs file" in line


def test_judge_merge_refuses_an_out_that_is_its_pairs_or_its_runs_config(
    tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    config = run / "config.json"
    config.write_text(json.dumps({"dataset": "judgebench"}), encoding="utf-8")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"id": "1"}\n', encoding="utf-8")
    line = refused(["judge", "merge", str(run), "--out", str(config)], config, [config], capsys)
    assert "--out is the run's configuration" in line
    argv = ["judge", "merge", str(run), "--dataset", str(pairs), "--out", str(pairs)]
    assert "--out is the pairs file" in refused(argv, pairs, [config, pairs], capsys)
