"""Reads that fail say so in one line naming the path and the operation, never a traceback: an
I/O error while records are read (``racer records validate``), a damaged executed notebook of a
chapter that ``--only`` leaves out, ``RACER_CACHE_DIR`` naming a file."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest

from racer_lib import cli
from racer_lib.records import io as rio

FIXTURE = Path(__file__).parent / "fixtures" / "pipeline"


def racer(capsys, *argv) -> tuple[int, str, list[str]]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err.strip().splitlines()


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("records")
    paths = {suffix: folder / f"mix.{suffix}" for suffix in ("csv", "parquet")}
    for path in paths.values():
        argv = ["simulator", "generate", "--judge", "qwen3-4b", "--scale", "0.02", "--dim", "8"]
        assert cli.main([*argv, "--out", str(path)]) == 0
    return paths


def _eio(path):
    def read(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", str(path))

    return read


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_an_io_error_while_records_are_read_is_one_line(records, suffix, monkeypatch, capsys):
    """The file opens (it is a regular, readable file) but reading its bytes fails."""
    path = records[suffix]
    monkeypatch.setattr(rio.pd, "read_csv", _eio(path))
    monkeypatch.setattr(rio, "read_parquet_frame", _eio(path))
    code, _, err = racer(capsys, "records", "validate", path)
    assert code == 2 and err == [f"error: {path}: cannot be read (Input/output error)"], err


def test_an_io_error_while_embeddings_are_read_is_one_line(records, monkeypatch, capsys):
    path = records["csv"]
    monkeypatch.setattr(rio.pq, "read_table", _eio(rio.embeddings_path(path)))
    code, _, err = racer(capsys, "records", "validate", path)
    assert code == 2 and err == [
        f"error: {rio.embeddings_path(path)}: cannot be read (Input/output error)"
    ], err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for folder in ("notebooks", "profiles", "book"):
        shutil.copytree(FIXTURE / folder, root / folder)
    chapters = "".join(
        f"- file: notebooks/{nb.stem}\n" for nb in sorted(FIXTURE.glob("notebooks/*.md"))
    )
    (root / "book" / "_toc.yml").write_text(f"format: jb-book\nroot: intro\nchapters:\n{chapters}")
    return root


def test_a_damaged_executed_notebook_of_another_chapter_is_named_and_run_again(repo, capsys):
    """``--only 01`` with the book: 02's earlier execution, which the book would be built from,
    is cut short; it is named and run too (a dry run says so and runs nothing)."""
    executed = repo / "build" / "base" / "executed"
    executed.mkdir(parents=True)
    (executed / "01_alpha.ipynb").write_text("{}")
    (executed / "02_beta.ipynb").write_text('{"cells": [{"cell_type": "co')
    argv = ["book", "build", "--root", repo, "--profile", "base", "--only", "01", "--dry-run"]
    code, out, err = racer(capsys, *argv)
    assert code == 0, err
    assert len(err) == 1 and err[0].startswith(
        f"running 02_beta too: its executed notebook {executed}"
    )
    assert "not a notebook" in err[0]
    assert "would run 2 notebook(s): 01_alpha, 02_beta" in out
    assert not (repo / "results").exists()  # a dry run writes nothing


def test_staging_a_damaged_executed_notebook_names_it(tmp_path: Path) -> None:
    from racer_lib.book.profiles import PipelineError
    from racer_lib.book.staging import write_reader_copy

    damaged = tmp_path / "05_dro_theory.ipynb"
    damaged.write_text("not json")
    with pytest.raises(PipelineError) as info:
        write_reader_copy(damaged, tmp_path / "out.ipynb", tmp_path)
    message = str(info.value)
    assert "\n" not in message and str(damaged) in message and "--only 05_dro_theory" in message


def test_a_cache_folder_that_is_a_file_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("RACER_DATA_DIR", raising=False)  # CI's mirror would serve every file
    file = tmp_path / "cache"
    file.write_text("not a folder")
    for value in (file, file / "below"):
        monkeypatch.setenv("RACER_CACHE_DIR", str(value))
        code, _, err = racer(capsys, "data", "fetch")
        assert code == 2 and len(err) == 1, err
        assert err[0] == (
            f"error: RACER_CACHE_DIR={value}: {file} is not a folder; point RACER_CACHE_DIR at "
            "a folder or unset it"
        )
    assert file.read_text() == "not a folder"


def test_reader_copy_holds_no_absolute_path_of_the_build_machine(tmp_path: Path) -> None:
    """The ``.ipynb`` offered for download: papermill's record of the parameters and of the
    notebooks it read and wrote, and the injected parameters cell, say repository-relative
    paths (a results folder outside the repository as ``results/<profile>``)."""
    import nbformat

    from racer_lib.book.staging import reader_copy

    root = tmp_path / "repo"
    results = tmp_path / "elsewhere" / "results" / "sim"
    store = root / "build" / "policies"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('results_dir = ""\n', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            f"results_dir = '{results}/07_budget_frontier'\npolicy_store = '{store}'\n",
            metadata={"tags": ["injected-parameters"]},
        ),
    ]
    nb.metadata["papermill"] = {
        "input_path": "/tmp/racer-abc123/07_budget_frontier.ipynb",
        "output_path": str(root / "build" / "sim" / "executed" / "07_budget_frontier.ipynb"),
        "parameters": {
            "results_dir": f"{results}/07_budget_frontier",
            "policy_store": str(store),
            "records_paths": [str(root / "records" / "a.parquet")],
        },
    }
    copy = reader_copy(nb, root, {results: "results/sim", store: "build/policies"})
    text = json.dumps(copy)
    assert str(tmp_path) not in text and "/tmp/" not in text, text
    papermill = copy.metadata["papermill"]
    assert papermill["input_path"] == "notebooks/07_budget_frontier.md"
    assert papermill["output_path"] == "build/sim/executed/07_budget_frontier.ipynb"
    assert papermill["parameters"] == {
        "results_dir": "results/sim/07_budget_frontier",
        "policy_store": "build/policies",
        "records_paths": ["records/a.parquet"],
    }
    assert "results_dir = 'results/sim/07_budget_frontier'" in copy.cells[2].source
