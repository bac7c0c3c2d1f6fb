"""Profiles that cannot be read as meant are refused with one line naming the file: bytes that
are not UTF-8, a key given twice (with its line), a profile that names no notebook."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from racer_lib import cli
from racer_lib.book.profiles import PipelineError, load_profile

FIXTURE = Path(__file__).parent / "fixtures" / "pipeline"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository root with the toy book's notebooks and profiles."""
    root = tmp_path / "repo"
    for folder in ("notebooks", "profiles"):
        shutil.copytree(FIXTURE / folder, root / folder)
    return root


def refused(repo: Path, name: str, text: str | bytes) -> str:
    """The one-line message of loading profile ``name`` written as ``text``."""
    path = repo / "profiles" / f"{name}.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(PipelineError) as info:
        load_profile(name, repo)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def test_a_profile_that_is_not_utf8_is_refused_naming_the_file(repo: Path) -> None:
    message = refused(
        repo, "latin", "description: caf\xe9\nnotebooks:\n  01_alpha: {}\n".encode("latin-1")
    )
    assert "not UTF-8" in message and "byte 16" in message


def test_a_child_of_a_non_utf8_profile_names_the_parent(repo: Path) -> None:
    parent = repo / "profiles" / "parent.yaml"
    parent.write_bytes(b"description: \xff\nnotebooks: {01_alpha: {}}\n")
    (repo / "profiles" / "kid.yaml").write_text("extends: parent\n", encoding="utf-8")
    with pytest.raises(PipelineError, match=f"{parent} is not UTF-8 text"):
        load_profile("kid", repo)


@pytest.mark.parametrize(
    ("text", "key", "line", "first"),
    [
        ("description: a\nnotebooks:\n  01_alpha: {}\ndescription: b\n", "description", 4, 1),
        (
            "notebooks:\n  01_alpha: {seed: 1}\n  02_beta: {}\n  01_alpha: {seed: 2}\n",
            "01_alpha",
            4,
            2,
        ),
        ("notebooks:\n  01_alpha:\n    seed: 1\n    label: x\n    seed: 2\n", "seed", 5, 3),
        ("notebooks:\n  01_alpha: {seed: 1, seed: 2}\n", "seed", 2, 2),
    ],
)
def test_a_key_given_twice_is_refused_with_its_line(
    repo: Path, text: str, key: str, line: int, first: int
) -> None:
    message = refused(repo, "twice", text)
    assert f"line {line}: key {key!r} given twice (first at line {first})" in message


def test_the_duplicate_check_leaves_yaml_merge_keys_alone(repo: Path) -> None:
    path = repo / "profiles" / "merged.yaml"
    path.write_text(
        "notebooks:\n  01_alpha: &common {seed: 1, label: x}\n  02_beta:\n    <<: *common\n"
        "    seed: 2\n",
        encoding="utf-8",
    )
    assert load_profile("merged", repo).notebooks["02_beta"] == {"seed": 2, "label": "x"}


@pytest.mark.parametrize(
    "text",
    ["", "# nothing but a comment\n", "description: nothing to run\n", "notebooks: {}\n"],
)
def test_an_empty_profile_is_refused(repo: Path, text: str) -> None:
    message = refused(repo, "empty", text)
    assert "names no notebook" in message


def test_a_profile_that_only_extends_keeps_its_parents_notebooks(repo: Path) -> None:
    (repo / "profiles" / "same.yaml").write_text("extends: base\n", encoding="utf-8")
    assert list(load_profile("same", repo).notebooks) == list(load_profile("base", repo).notebooks)


def test_racer_prints_a_bad_profile_as_one_line(repo: Path, capsys) -> None:
    (repo / "profiles" / "twice.yaml").write_text(
        "notebooks:\n  01_alpha: {}\nnotebooks:\n  02_beta: {}\n", encoding="utf-8"
    )
    status = cli.main(["book", "build", "--profile", "twice", "--root", str(repo), "--no-book"])
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "key 'notebooks' given twice" in err[0], err


# --------------------------------------------------------------------------- set, --set


def test_set_gives_every_notebook_that_declares_a_parameter_its_value(repo: Path, tmp_path):
    """A profile's ``set`` (inherited through ``extends``) and ``--set`` reach each notebook
    that declares the parameter, over its own entry, and are type-checked like it."""
    from racer_lib.book.profiles import Folders, prepare

    (repo / "profiles" / "everywhere.yaml").write_text(
        "extends: child\nset:\n  scale: 4.0\n  label: everywhere\n", encoding="utf-8"
    )
    (repo / "profiles" / "below.yaml").write_text("extends: everywhere\n", encoding="utf-8")
    profile = load_profile("below", repo)
    assert profile.set_all == {"scale": 4.0, "label": "everywhere"}
    layout = Folders().layout(repo, "below")
    alpha, beta, gamma = (
        prepare(stem, profile, layout, tmp_path).parameters
        for stem in ("01_alpha", "02_beta", "03_gamma")
    )
    assert (alpha["label"], alpha["seed"], beta["scale"]) == ("everywhere", 3, 4.0)
    assert "scale" not in alpha and "label" not in beta and "scale" not in gamma
    again = profile.with_set({"scale": 5.0})  # racer book build --set scale=5.0
    assert prepare("02_beta", again, layout, tmp_path).parameters["scale"] == 5.0
    assert profile.set_all["scale"] == 4.0  # the loaded profile is left as it was
    with pytest.raises(PipelineError, match="parameter 'scale': 'big' is a string"):
        prepare("02_beta", profile.with_set({"scale": "big"}), layout, tmp_path)
    with pytest.raises(PipelineError, match="the runner sets these itself"):
        profile.with_set({"results_dir": "elsewhere"})


def test_the_runner_asks_every_trainer_to_keep_freed_memory(repo: Path, tmp_path):
    """A notebook with a ``trainer`` parameter gets RUNNER_TRAINER under the profile's keys
    (a profile may turn it off); a notebook without one gets no ``trainer``."""
    from racer_lib.book.profiles import RUNNER_TRAINER, Folders, prepare

    nb = repo / "notebooks" / "02_beta.md"
    nb.write_text(nb.read_text().replace("scale = 1.0", "scale = 1.0\ntrainer = {}"))
    layout = Folders().layout(repo, "child")
    profile = load_profile("child", repo)
    assert prepare("02_beta", profile, layout, tmp_path).parameters["trainer"] == RUNNER_TRAINER
    asked = profile.with_set({"trainer": {"device": "cpu", "keep_freed_memory": False}})
    got = prepare("02_beta", asked, layout, tmp_path).parameters["trainer"]
    assert got == {"keep_freed_memory": False, "device": "cpu"}
    assert "trainer" not in prepare("01_alpha", asked, layout, tmp_path).parameters


@pytest.mark.parametrize(
    "text, says",
    [("set: [scale]\n", "'set' must map parameter names to values"),
     ("set:\n  profile: x\n", "the runner sets these itself")],
)  # fmt: skip
def test_a_bad_set_is_refused(repo: Path, text: str, says: str) -> None:
    assert says in refused(repo, "bad", "extends: base\n" + text)


def test_the_cli_reads_set_as_yaml_and_refuses_what_is_no_assignment(capsys) -> None:
    from racer_lib.cli.book import _assignment

    assert _assignment("trainer={device: cuda, precision: bf16}") == (
        "trainer",
        {"device": "cuda", "precision": "bf16"},
    )
    assert _assignment("seed=4") == ("seed", 4)
    with pytest.raises(SystemExit) as info:
        cli.main(["book", "build", "--profile", "sim", "--set", "no assignment"])
    assert info.value.code == 2
    assert "'no assignment' is not NAME=VALUE" in capsys.readouterr().err


def test_the_runner_passes_the_router_store_to_a_notebook_that_declares_it(repo: Path, tmp_path):
    """``policy_store`` (STORE_PARAMETER) is the runner's to give, as a parameter (no
    environment variable): the build's store folder, to declaring notebooks only; a profile
    or --set cannot give it."""
    from racer_lib.book.profiles import STORE_PARAMETER, Folders, prepare

    nb = repo / "notebooks" / "02_beta.md"
    nb.write_text(nb.read_text().replace("scale = 1.0", 'scale = 1.0\npolicy_store = ""'))
    layout = Folders().layout(repo, "child")
    profile = load_profile("child", repo)
    given = prepare("02_beta", profile, layout, tmp_path).parameters
    assert given[STORE_PARAMETER] == str(layout.policy_store) == str(repo / "build" / "policies")
    assert STORE_PARAMETER not in prepare("01_alpha", profile, layout, tmp_path).parameters
    with pytest.raises(PipelineError, match="the runner sets these itself"):
        profile.with_set({STORE_PARAMETER: "elsewhere"})
