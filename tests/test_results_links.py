"""A chapter's results folder is emptied before the chapter runs, never through a symbolic link:
a results folder that is a link is refused in one line naming it, and a link inside the folder
is removed itself; what either points to stays as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from racer_lib import cli
from racer_lib.book.profiles import Folders, PipelineError, Prepared
from racer_lib.book.scheduling import _empty, _execute

FIXTURE = Path(__file__).parent / "fixtures" / "pipeline"


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    """A folder outside any results folder, holding a file and a subfolder with a file."""
    folder = tmp_path / "precious"
    (folder / "sub").mkdir(parents=True)
    (folder / "keep.txt").write_text("keep", encoding="utf-8")
    (folder / "sub" / "also.txt").write_text("also", encoding="utf-8")
    return folder


def untouched(folder: Path) -> None:
    assert (folder / "keep.txt").read_text(encoding="utf-8") == "keep"
    assert (folder / "sub" / "also.txt").read_text(encoding="utf-8") == "also"


def test_a_results_folder_that_is_a_link_is_refused_not_emptied(tmp_path, precious) -> None:
    link = tmp_path / "results" / "smoke" / "05_dro_theory"
    link.parent.mkdir(parents=True)
    link.symlink_to(precious, target_is_directory=True)
    with pytest.raises(PipelineError) as info:
        _empty(link, "05_dro_theory")
    message = str(info.value)
    assert "\n" not in message and str(link) in message and "symbolic link" in message
    assert str(precious) in message
    untouched(precious)
    assert link.is_symlink()


def test_a_link_inside_a_results_folder_is_removed_not_followed(tmp_path, precious) -> None:
    results = tmp_path / "results" / "05_dro_theory"
    (results / "old").mkdir(parents=True)
    (results / "stale.csv").write_text("x", encoding="utf-8")
    (results / "to_folder").symlink_to(precious, target_is_directory=True)
    (results / "old" / "to_file").symlink_to(precious / "keep.txt")
    _empty(results)
    assert list(results.iterdir()) == []
    untouched(precious)


def test_the_runner_refuses_a_linked_results_folder_before_it_runs(tmp_path, precious) -> None:
    """:func:`_execute`, the smallest entry that empties: refused before anything runs."""
    layout = Folders().layout(tmp_path, "smoke")
    results = layout.results_dir("01_alpha")
    results.parent.mkdir(parents=True)
    results.symlink_to(precious, target_is_directory=True)
    prepared = Prepared("01_alpha", tmp_path / "missing.ipynb", {}, 0)
    with pytest.raises(PipelineError, match=f"results folder {results} is a symbolic link"):
        _execute(prepared, layout, verbose=False)
    untouched(precious)
    dangling = layout.results_dir("02_beta")
    dangling.symlink_to(tmp_path / "gone", target_is_directory=True)
    with pytest.raises(PipelineError, match="is a symbolic link"):
        _execute(Prepared("02_beta", tmp_path / "missing.ipynb", {}, 0), layout, verbose=False)
    assert not (tmp_path / "gone").exists()  # nothing created through the link either


def test_racer_book_build_says_so_in_one_line(tmp_path, precious, capsys) -> None:
    root = tmp_path / "repo"
    for folder in ("notebooks", "profiles"):
        shutil.copytree(FIXTURE / folder, root / folder)
    link = root / "results" / "base" / "01_alpha"
    link.parent.mkdir(parents=True)
    link.symlink_to(precious, target_is_directory=True)
    argv = ["book", "build", "--profile", "base", "--only", "01", "--root", str(root), "--no-book"]
    status = cli.main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if "symbolic link" in line]
    assert status == 2
    assert len(err) == 1 and str(link) in err[0], err
    untouched(precious)
