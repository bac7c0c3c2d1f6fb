"""One resolution of every path a parameter gives
(:func:`racer_lib.book.parameters.parameter_path`), shared by the check before a run, the
execution cache's key and the notebook's :func:`~racer_lib.book.chapter.read_result`; and
nothing deleted or emptied that the build did not write: folders of the build that are symbolic
links are refused, a foreign file in the staged book or the router store is named and left
alone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from racer_lib import cli
from racer_lib.book.cache import input_files
from racer_lib.book.profiles import Folders, PipelineError

FIXTURE = Path(__file__).parent / "fixtures" / "pipeline"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The toy book's repository; notebook 01 declares a chapter's results folder parameter."""
    root = tmp_path / "repo"
    for folder in ("notebooks", "profiles", "book"):
        shutil.copytree(FIXTURE / folder, root / folder)
    nb = root / "notebooks" / "01_alpha.md"
    text = nb.read_text(encoding="utf-8")
    nb.write_text(text.replace("results_dir = None\n", 'results_dir = None\nother_results = ""\n'))
    return root


@pytest.fixture
def outside04(tmp_path: Path) -> Path:
    """A chapter-like results folder outside the repository, one level above it."""
    folder = tmp_path / "outside04"
    folder.mkdir()
    (folder / "delta_accuracy_by_domain.csv").write_text("domain,delta\nmath,1.0\n")
    return folder


def build(repo: Path, capsys, *args: str) -> tuple[int, list[str]]:
    status = cli.main(["book", "build", "--root", str(repo), "--no-book", *args])
    return status, capsys.readouterr().err.strip().splitlines()


def test_a_results_folder_parameter_leading_out_of_the_repository_is_refused(
    repo: Path, outside04: Path, capsys
) -> None:
    """03's ``fig2_results: ../../../../outside04``: relative to ``results_dir``
    (``results/<profile>/<stem>``) it leads out of the repository: refused in one line naming
    the parameter, before anything runs or is read."""
    path = repo / "profiles" / "out.yaml"
    path.write_text("notebooks:\n  01_alpha: {other_results: ../../../../outside04}\n")
    status, err = build(repo, capsys, "--profile", "out")
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {path}: notebook '01_alpha', parameter 'other_results'")
    # the path is shown cut in its middle when long (the test's folder may be): its end stays
    assert "outside the repository" in err[0] and f"{os.sep}outside04)" in err[0]
    assert not (repo / "build").exists() and not (repo / "results").exists()


def test_the_cache_key_hashes_what_a_results_folder_parameter_leads_to(repo: Path) -> None:
    """Another profile's results, read through ``other_results``: a change there is a change
    of the chapter's inputs (resolved as the notebook resolves it, against ``results_dir``)."""
    theirs = repo / "results" / "paper" / "04_x"
    theirs.mkdir(parents=True)
    (theirs / "t.csv").write_text("a\n1\n")
    params = {
        "results_dir": str(repo / "results" / "smoke" / "01_alpha"),
        "other_results": "../../paper/04_x",
    }
    first = input_files(params, repo)
    assert list(first) == ["other_results=../../paper/04_x"]
    (theirs / "t.csv").write_text("a\n-1\n")
    assert input_files(params, repo) != first
    # a chapter of the same profile it reads is covered by that chapter's key: not hashed
    ours = repo / "results" / "smoke" / "04_x"
    ours.mkdir(parents=True)
    (ours / "t.csv").write_text("a\n1\n")
    params["other_results"] = "../04_x"
    assert input_files(params, repo, covered=[ours]) == {}


def test_the_cache_refuses_a_results_folder_parameter_leading_outside(
    repo: Path, outside04: Path
) -> None:
    params = {
        "results_dir": str(repo / "results" / "smoke" / "03_x"),
        "fig2_results": "../../../../outside04",
    }
    with pytest.raises(PipelineError, match="fig2_results names .*outside the repository"):
        input_files(params, repo)


def test_the_notebook_reads_no_results_folder_outside(
    repo: Path, outside04: Path, monkeypatch
) -> None:
    from racer_lib.book import chapter
    from racer_lib.errors import InputError

    monkeypatch.chdir(repo)
    out = repo / "results" / "smoke" / "03_x"
    out.mkdir(parents=True)
    with pytest.raises(InputError, match="never read"):
        chapter.read_result(out, "../../../../outside04", "delta_accuracy_by_domain.csv")
    link = repo / "results" / "smoke" / "04_x"
    link.symlink_to(outside04, target_is_directory=True)  # inside by its name only
    with pytest.raises(InputError, match="never read"):
        chapter.read_result(out, "../04_x", "delta_accuracy_by_domain.csv")


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    folder = tmp_path / "precious"
    (folder / "book").mkdir(parents=True)
    (folder / "book" / "keep.txt").write_text("keep")
    (folder / "executed").mkdir()
    (folder / "executed" / "01_alpha.ipynb").write_text("mine")
    return folder


def test_a_profile_build_folder_that_is_a_link_is_refused(repo, precious, capsys) -> None:
    (repo / "build").mkdir()
    (repo / "build" / "base").symlink_to(precious, target_is_directory=True)
    status, err = build(repo, capsys, "--profile", "base", "--only", "01")
    assert status == 2 and len(err) == 1 and "is a symbolic link" in err[0], err
    assert str(repo / "build" / "base") in err[0]
    assert (precious / "book" / "keep.txt").read_text() == "keep"
    assert (precious / "executed" / "01_alpha.ipynb").read_text() == "mine"


def test_a_foreign_file_in_the_staged_book_is_named_and_left(repo: Path, precious: Path) -> None:
    from racer_lib.book.build import _clear_staging

    layout = Folders(build_dir=precious.parent / "mine").layout(repo, "base")
    layout.staging.mkdir(parents=True)
    (layout.staging / "intro.md").write_text("staged")  # a copy of book/intro.md: ours
    (layout.staging / "notes.txt").write_text("my notes")
    with pytest.raises(PipelineError, match=r"holds notes.txt, which the build did not write"):
        _clear_staging(layout)
    assert (layout.staging / "notes.txt").read_text() == "my notes"
    (layout.staging / "notes.txt").unlink()
    (layout.staging / "notebooks").mkdir()
    (layout.staging / "notebooks" / "01_alpha.ipynb").write_text("{}")
    for name in ("_chapters.md", "_citation.md", "_cite_box.html"):  # an earlier build's
        (layout.staging / name).write_text("staged")
    _clear_staging(layout)  # only what the staging writes: removed
    assert not layout.staging.exists()
    layout.staging.symlink_to(precious / "book", target_is_directory=True)
    with pytest.raises(PipelineError, match="is a symbolic link"):
        _clear_staging(layout)
    assert (precious / "book" / "keep.txt").read_text() == "keep"


def test_a_foreign_file_in_the_router_store_is_named_and_left(tmp_path: Path, capsys) -> None:
    """``policies/v1/my_model.pt`` under a ``--build-dir`` named by mistake: not a store
    entry (``<key[:2]>/<key>.pt``), so never read as one nor deleted as damaged."""
    from racer_lib.routing.store import PolicyStore

    store = tmp_path / "policies"
    (store / "v1").mkdir(parents=True)
    mine = store / "v1" / "my_model.pt"
    mine.write_bytes(b"weights I care about")
    damaged = store / "ab" / ("ab" + "0" * 62 + ".pt")
    damaged.parent.mkdir()
    damaged.write_bytes(b"not a torch file")
    said = PolicyStore(store).verify()
    assert mine.read_bytes() == b"weights I care about"
    assert any(str(mine) in line and "left alone" in line for line in said), said
    assert not damaged.exists()  # a store entry that is damaged is still discarded
    assert os.fspath(mine) in capsys.readouterr().err


def test_a_book_output_folder_that_is_a_link_is_refused(repo: Path, precious: Path) -> None:
    from racer_lib.book.build import make_book
    from racer_lib.book.profiles import Profile

    layout = Folders(book_out=repo / "out").layout(repo, "base")
    (repo / "out").mkdir()
    (repo / "out" / "_build").symlink_to(precious, target_is_directory=True)
    with pytest.raises(PipelineError, match="is a symbolic link"):
        make_book(Profile("base", "", {}), layout)
    assert (precious / "book" / "keep.txt").read_text() == "keep"


def test_a_foreign_entry_in_the_book_output_folder_is_named_and_left(repo: Path) -> None:
    """A ``--book-out`` named by mistake: its ``_build`` holds the user's own files beside what
    Jupyter Book writes. The build names the first and deletes nothing, before staging."""
    from racer_lib.book.build import make_book
    from racer_lib.book.profiles import Profile

    layout = Folders(book_out=repo / "out").layout(repo, "base")
    build = repo / "out" / "_build"
    (build / "html").mkdir(parents=True)
    (build / "html" / "index.html").write_text("an earlier book")
    (build / "notes.txt").write_text("my notes")
    with pytest.raises(PipelineError, match=r"_build holds notes.txt, which the build did not"):
        make_book(Profile("base", "", {}), layout)
    assert (build / "notes.txt").read_text() == "my notes"
    assert (build / "html" / "index.html").read_text() == "an earlier book"
    assert not layout.staging.exists()  # refused before anything was written
    (build / "notes.txt").unlink()
    (build / "html").rename(build / "my_site")  # a folder by another name: not the book's
    with pytest.raises(PipelineError, match="holds my_site"):
        make_book(Profile("base", "", {}), layout)
    assert (build / "my_site" / "index.html").is_file()
