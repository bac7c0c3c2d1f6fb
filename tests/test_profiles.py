"""Profiles that cannot be read as meant are refused with one line naming the file: bytes that
are not UTF-8, a key given twice (with its line), a profile that names no notebook."""

from __future__ import annotations

import argparse
import ast
import shutil
import time
from pathlib import Path

import pytest
import yaml

from racer_lib import cli
from racer_lib.book.profiles import PipelineError, load_profile

FIXTURE = Path(__file__).parent / "fixtures" / "pipeline"
REPO = Path(__file__).resolve().parents[1]


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


def test_yaml_anchors_and_aliases_are_refused_with_their_line(repo: Path) -> None:
    message = refused(
        repo,
        "merged",
        "notebooks:\n  01_alpha: &common {seed: 1, label: x}\n  02_beta:\n    <<: *common\n"
        "    seed: 2\n",
    )
    assert "line 2: YAML anchor &common; a profile gives every value in full" in message
    message = refused(repo, "alias", "notebooks:\n  01_alpha: {seed: *nowhere}\n")
    assert "line 2: YAML alias *nowhere" in message


def test_no_profile_of_the_repository_uses_anchors_or_aliases() -> None:
    for path in sorted((REPO / "profiles").glob("*.yaml")):
        events = yaml.parse(path.read_text(encoding="utf-8"))
        assert not [
            e for e in events if isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None)
        ]


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


# --------------------------------------------------------------------------- bounded, in domain


def declare(repo: Path, stem: str, lines: str) -> None:
    """Add ``lines`` (``name = default``) to the parameters cell of toy notebook ``stem``."""
    nb = repo / "notebooks" / f"{stem}.md"
    nb.write_text(nb.read_text().replace("results_dir = None\n", f"results_dir = None\n{lines}"))


def laughs(depth: int = 9) -> str:
    """A YAML flow list of nested aliases: a few hundred bytes that stand for 9**depth items."""
    levels = ["&l0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"&l{k} [{', '.join([f'*l{k - 1}'] * 9)}]" for k in range(1, depth)]
    return f"[{', '.join(levels)}]"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("notebooks:\n  01_alpha:\n    tags: {laughs}\n  02_beta: {{}}\n", 3),
        ("notebooks: {{01_alpha: {{}}, 02_beta: {{}}}}\nset:\n  trainer: {{lol: {laughs}}}\n", 3),
    ],
    ids=["list parameter", "set trainer"],
)
def test_a_billion_laughs_profile_is_refused_at_once_in_one_short_line(
    repo: Path, text: str, line: int
) -> None:
    """Nested aliases (9**9 values in a few hundred bytes) in a list parameter, or under
    ``set: trainer:``: refused as the profile is read, before any check, message or hash."""
    declare(repo, "01_alpha", 'tags = ["a"]\n')
    declare(repo, "02_beta", "trainer = {}\n")
    path = repo / "profiles" / "lol.yaml"
    path.write_text(text.format(laughs=laughs()), encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(PipelineError) as info:
        load_profile("lol", repo)
    assert time.perf_counter() - start < 0.5
    message = str(info.value)
    assert "\n" not in message and len(message) < len(str(path)) + 150, message
    assert f"{path}, line {line}: YAML anchor &l0" in message


def test_set_on_the_command_line_refuses_anchors_too() -> None:
    from racer_lib.cli.book import _assignment

    with pytest.raises(argparse.ArgumentTypeError, match="line 1: YAML anchor &l0") as info:
        _assignment(f"trainer={{lol: {laughs()}}}")
    assert len(str(info.value)) < 300


def test_a_long_value_is_cut_in_the_message(repo: Path, tmp_path: Path) -> None:
    from racer_lib.book.profiles import Folders, prepare

    (repo / "profiles" / "long.yaml").write_text(
        f"notebooks:\n  01_alpha: {{seed: {'x' * 100_000}}}\n", encoding="utf-8"
    )
    layout = Folders().layout(repo, "long")
    with pytest.raises(PipelineError, match="parameter 'seed': 'xxx") as info:
        prepare("01_alpha", load_profile("long", repo), layout, tmp_path)
    assert len(str(info.value)) < 400


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("1" * 5000, "line 3: an integer of 5000 digits, too long"),
        ("[" * 1000 + "]" * 1000, "line 3: values nested deeper than 32 levels"),
    ],
    ids=["long integer", "deep nesting"],
)
def test_what_python_cannot_read_is_refused_with_its_line(repo: Path, value, says) -> None:
    assert says in refused(repo, "unread", f"notebooks:\n  01_alpha:\n    seed: {value}\n")


def build(repo: Path, capsys, *args: str) -> tuple[int, list[str]]:
    """``racer book build --root repo --no-book ARGS``: the status and the lines on stderr."""
    status = cli.main(["book", "build", "--root", str(repo), "--no-book", *args])
    return status, capsys.readouterr().err.strip().splitlines()


def test_a_set_that_no_notebook_of_the_run_declares_is_refused(repo: Path, capsys) -> None:
    status, err = build(repo, capsys, "--profile", "base", "--set", "no_such_param=3")
    assert status == 2 and len(err) == 1, err
    assert "--set 'no_such_param': no notebook of this run declares it" in err[0]
    assert "(the run: 01_alpha, 02_beta)" in err[0]
    assert not (repo / "build").exists()  # refused before anything ran


def test_set_names_are_checked_against_the_run_or_the_profile(repo: Path, tmp_path: Path):
    """``--set``: a notebook of the run declares it; a profile's ``set``: a notebook of the
    profile (a run of some of them only keeps its profile's ``set``)."""
    from racer_lib.book.profiles import Folders, check_set_declared, prepare

    layout = Folders().layout(repo, "base")
    base = load_profile("base", repo)
    alpha = [prepare("01_alpha", base, layout, tmp_path)]  # --only 01_alpha
    check_set_declared(base.with_set({"seed": 4}), alpha, layout, tmp_path)
    with pytest.raises(PipelineError, match=r"--set 'scale': .*\(the run: 01_alpha\)"):
        check_set_declared(base.with_set({"scale": 4.0}), alpha, layout, tmp_path)
    path = repo / "profiles" / "setting.yaml"
    path.write_text("extends: base\nset: {scale: 4.0}\n", encoding="utf-8")
    setting = load_profile("setting", repo)
    check_set_declared(setting, [prepare("01_alpha", setting, layout, tmp_path)], layout, tmp_path)
    path.write_text("extends: base\nset: {scael: 4.0}\n", encoding="utf-8")
    stray = load_profile("setting", repo)
    with pytest.raises(PipelineError) as info:
        check_set_declared(stray, alpha, layout, tmp_path)
    assert str(info.value) == (
        f"profile 'setting': {path}: 'set' gives 'scael', which no notebook of the profile "
        "declares (its notebooks: 01_alpha, 02_beta); check the name"
    )


@pytest.mark.parametrize("value", ["-1", "0"])
def test_set_n_seeds_below_one_is_refused_naming_it(repo: Path, capsys, value: str) -> None:
    declare(repo, "01_alpha", "n_seeds = 2\n")
    status, err = build(
        repo, capsys, "--profile", "base", "--only", "01", "--set", f"n_seeds={value}"
    )
    assert status == 2 and len(err) == 1, err
    assert err[0] == (
        f"error: --set: notebook '01_alpha', parameter 'n_seeds' is {value}; it must be a whole "
        "number >= 1"
    )
    assert not (repo / "build").exists()


#: Parameters of a toy notebook, one of each domain of DOMAINS, at values inside it.
DOMAIN_DEFAULTS = (
    "n_seeds = 2\nbudgets = [2.0, 3.0]\nroute_budget = 2.0\ntau_r = 1.0\ntaus_c = [0.5]\n"
    'split_shares = [0.6, 0.2, 0.2]\njudges = ["qwen3-4b"]\njudge = "GPT-4"\n'
    'training = {"epochs": 2}\nscale = 0.5\nlr = 1e-3\nseed = 0\nrecords_dir = ""\n'
)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"n_seeds": 0}, "parameter 'n_seeds' is 0; it must be a whole number >= 1"),
        ({"budgets": [2.0, 1.0]}, "parameter 'budgets' holds 1.0; each item must be a number > 1"),
        ({"budgets": []}, "parameter 'budgets' is []; it must list one item at least"),
        ({"route_budget": 0.5}, "'route_budget' is 0.5; it must be a number > 1 (a budget"),
        ({"tau_r": 0.0}, "parameter 'tau_r' is 0.0; it must be a temperature > 0"),
        ({"taus_c": [1.0, -1.0]}, "'taus_c' holds -1.0; each item must be a temperature > 0"),
        ({"split_shares": [1.5, 0.2]}, "'split_shares' holds 1.5; each item must be a share in"),
        ({"judges": ["qwen3-4b", "nobody"]}, "'judges' holds 'nobody'; each item must be a judge"),
        ({"judge": "GPT-5"}, "parameter 'judge' is 'GPT-5'; it must be a judge the simulator"),
        ({"training": {"epochs": 0}}, "parameter 'training.epochs' is 0; it must be a whole"),
        ({"scale": 0.0}, "parameter 'scale' is 0.0; it must be a number > 0"),
        ({"lr": -1.0}, "parameter 'lr' is -1.0; it must be a number >= 0"),
        ({"seed": -3}, "parameter 'seed' is -3; it must be a whole number >= 0"),
        ({"budgets": [2.0, float("inf")]}, "parameter 'budgets' holds inf; each item must"),
    ],
)
def test_a_value_out_of_its_domain_is_refused_naming_the_parameter_and_file(
    repo: Path, tmp_path: Path, given: dict, says: str
) -> None:
    from racer_lib.book.profiles import Folders, prepare

    declare(repo, "01_alpha", DOMAIN_DEFAULTS)
    path = repo / "profiles" / "out.yaml"
    path.write_text(yaml.safe_dump({"notebooks": {"01_alpha": given}}), encoding="utf-8")
    layout = Folders().layout(repo, "out")
    with pytest.raises(PipelineError) as info:
        prepare("01_alpha", load_profile("out", repo), layout, tmp_path)
    message = str(info.value)
    assert message.startswith(f"{path}: notebook '01_alpha', ") and says in message, message
    assert "\n" not in message


def test_values_in_their_domains_pass_and_records_name_their_own_judges(repo: Path, tmp_path):
    from racer_lib.book.profiles import Folders, Profile, prepare

    declare(repo, "01_alpha", DOMAIN_DEFAULTS)
    layout = Folders().layout(repo, "in")
    inside = {"budgets": [1.5, 10.0], "judges": ["ChatGPT", "qwen3-8b"], "split_shares": [1.0]}
    prepare("01_alpha", Profile("in", "", {"01_alpha": inside}), layout, tmp_path)
    own = {"judges": ["my-judge"], "records_dir": "records"}  # records/<judge>/...
    prepare("01_alpha", Profile("in", "", {"01_alpha": own}), layout, tmp_path)
    with pytest.raises(PipelineError, match="'judges' holds 'my-judge'"):
        prepare(
            "01_alpha", Profile("in", "", {"01_alpha": own | {"records_dir": ""}}), layout, tmp_path
        )


def test_every_profile_and_every_notebook_default_lies_in_its_domain(tmp_path: Path) -> None:
    """Each profile of the repository prepares every notebook it runs (types, domains, paths,
    its ``set``), and every notebook's own defaults pass the same checks."""
    import jupytext
    import papermill

    from racer_lib.book.profiles import (
        Folders,
        Profile,
        check_set_declared,
        prepare,
        profile_names,
    )

    for name in profile_names(REPO):
        profile = load_profile(name, REPO)
        layout = Folders().layout(REPO, name)
        prepared = [prepare(stem, profile, layout, tmp_path) for stem in profile.notebooks]
        check_set_declared(profile, prepared, layout, tmp_path)
    for source in sorted((REPO / "notebooks").glob("*.md")):
        ipynb = tmp_path / f"{source.stem}.ipynb"
        jupytext.write(jupytext.read(source), ipynb)
        defaults = {
            name: ast.literal_eval(spec["default"])
            for name, spec in papermill.inspect_notebook(ipynb).items()
            if name not in ("profile", "results_dir", "policy_store")
        }
        own = Profile("defaults", "", {source.stem: defaults})
        prepare(source.stem, own, Folders().layout(REPO, "defaults"), tmp_path)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the repository, with files no run may read."""
    folder = tmp_path / "etc"
    (folder / "qwen3-4b").mkdir(parents=True)
    for name in ("passwd", "shadow", "qwen3-4b/secret.key"):
        (folder / name).write_text("private\n")
    return folder


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the execution cache hashes (none is read: a made-up digest)."""
    from racer_lib.book import cache

    seen: list[Path] = []

    def sha256sum(path: Path) -> str:
        seen.append(Path(path))
        return "0" * 64

    monkeypatch.setattr(cache, "sha256sum", sha256sum)
    return seen


@pytest.mark.parametrize("records_dir", ["/etc", "{outside}", "linked", "linked/qwen3-4b"])
def test_a_folder_outside_the_repository_is_refused_before_any_file_in_it_is_read(
    repo: Path, capsys, outside: Path, hashed: list, records_dir: str
) -> None:
    records_dir = records_dir.format(outside=outside)
    (repo / "linked").symlink_to(outside)  # inside by its name, outside where it leads
    declare(repo, "01_alpha", 'records_dir = ""\n')
    path = repo / "profiles" / "etc.yaml"
    path.write_text(f"notebooks:\n  01_alpha: {{records_dir: {records_dir}}}\n", encoding="utf-8")
    status, err = build(repo, capsys, "--profile", "etc")
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {path}: notebook '01_alpha', parameter 'records_dir' names ")
    assert "outside the repository" in err[0]
    assert hashed == [] and not (repo / "build").exists()


def test_the_cache_never_reads_a_link_out_of_the_repository(repo: Path, outside: Path, hashed):
    from racer_lib.book.cache import input_files

    records = repo / "records" / "qwen3-4b"
    records.mkdir(parents=True)
    (records / "train.csv").write_text("id\n1\n")
    (records / "shadow").symlink_to(outside / "shadow")
    with pytest.raises(PipelineError, match="records_dir names records/qwen3-4b/shadow, outside"):
        input_files({"records_dir": "records"}, repo)
    with pytest.raises(PipelineError, match="outside the repository"):
        input_files({"records_paths": [str(outside / "passwd")]}, repo)
    assert all(outside not in file.resolve().parents for file in hashed)


def _notebook_defaults(stem: str) -> dict:
    """The literal defaults of notebook ``stem``'s parameters cell (name -> value)."""
    import jupytext

    cells = jupytext.read(REPO / "notebooks" / f"{stem}.md").cells
    cell = next(c for c in cells if "parameters" in c.metadata.get("tags", []))
    found = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


def _plain(value):
    """``value`` with tuples as lists and integral floats as floats, as YAML reads it."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_notebook_defaults_are_the_sim_profiles_values() -> None:
    """Papermill on a notebook alone gives the published (sim) page: every value the sim
    profile sets is the notebook's own default, and the runner's own two name the sim build."""
    sim = yaml.safe_load((REPO / "profiles" / "sim.yaml").read_text())["notebooks"]
    differ = []
    for stem, given in sim.items():
        defaults = _notebook_defaults(stem)
        expected = {"profile": "sim", "results_dir": f"results/sim/{stem}", **(given or {})}
        for name, value in expected.items():
            if _plain(defaults.get(name)) != _plain(value):
                differ.append(f"{stem}: {name} = {defaults.get(name)!r}, sim sets {value!r}")
    assert not differ, "\n".join(differ)
    assert len(sim) == len(list((REPO / "notebooks").glob("*.md")))  # every notebook in sim
