"""A profile's (or ``--set``'s) parameter values are plain data and are written into a notebook
as Python literals: a ``!!binary``, ``!!set`` or ``!!timestamp`` value, nested anywhere, is
refused in one line naming the parameter and the tag; a string that tries to close its quotes
stays the string it was; a profile over the size limits is refused before it is read whole.
Every test looks for a canary file the injected code would have written."""

from __future__ import annotations

import ast
import datetime
import shutil
from pathlib import Path

import nbformat
import pytest

from racer_lib import cli
from racer_lib.book import parameters
from racer_lib.book.parameters import parameters_source, plain_problem
from racer_lib.book.profiles import PipelineError, load_profile

FIXTURE = Path(__file__).parent / "fixtures" / "pipeline"
CANARY = "CANARY"
# A string that closes the quotes papermill (or str()) would put around it, and calls open().
BREAKOUT = '"); open("CANARY","w").write("x"); ("'
# What papermill wrote as code: str() of bytes or a set holding it, between double quotes.
PAYLOAD = '" + str(open("CANARY","w").write("x")) + "'
PAYLOAD_BASE64 = "IiArIHN0cihvcGVuKCJDQU5BUlkiLCJ3Iikud3JpdGUoIngiKSkgKyAi"  # PAYLOAD as !!binary
NASTY = [
    BREAKOUT,
    '\'\'\' """ \\" \\n \\',
    "a\"b'c\\d\ne\r\tf \"\"\" '''",
    "é \u2028 \x00 \U0001f600",
    "\\",
    "",
]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy book's repository root; the working folder is its parent, where a canary of the
    test's own process would land."""
    root = tmp_path / "repo"
    for folder in ("notebooks", "profiles"):
        shutil.copytree(FIXTURE / folder, root / folder)
    monkeypatch.chdir(tmp_path)
    return root


def no_canary(repo: Path) -> None:
    """No canary in the repository (a notebook's working folder) or the test's folder."""
    assert not (repo / CANARY).exists() and not (repo.parent / CANARY).exists()


def write(repo: Path, name: str, text: str) -> Path:
    path = repo / "profiles" / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- what is plain


@pytest.mark.parametrize(
    ("value", "where", "says"),
    [
        (b"x", "p", "bytes (YAML tag !!binary)"),
        ({"note": b"x"}, "p.note", "bytes (YAML tag !!binary)"),
        ([1, {"a": {1, 2}}], "p[1].a", "set (YAML tag !!set)"),
        (["ok", [{"when": datetime.date(2020, 1, 1)}]], "p[1][0].when", "!!timestamp"),
        ({"k": [("a", 1)]}, "p.k[0]", "tuple (YAML tag !!omap or !!pairs)"),
        ({1: "one"}, "p", "has a key that is int"),
        ([object()], "p[0]", "is object"),
        ({"x": float("nan")}, "p.x", "is NaN"),
    ],
)
def test_anything_but_plain_data_is_named_with_where_it_lies(value, where, says) -> None:
    problem = plain_problem("p", value)
    assert problem is not None and problem.startswith(repr(where)) and says in problem, problem
    assert "\n" not in problem


def test_plain_data_passes_all_the_way_down() -> None:
    value = {"a": [1, 2.5, True, None, "s", {"b": [[]], "c": {}}], "inf": float("inf")}
    assert plain_problem("p", value) is None


def test_a_str_subclass_with_its_own_repr_is_not_plain() -> None:
    class Sly(str):
        def __repr__(self) -> str:
            return BREAKOUT

    assert "is Sly" in plain_problem("p", {"k": Sly("x")})


# --------------------------------------------------------------------------- the injected cell


@pytest.mark.parametrize("text", NASTY)
def test_the_parameters_cell_reads_back_every_string_exactly(text: str, tmp_path, monkeypatch):
    """Quotes, backslashes, newlines, triple quotes, NUL, a line separator: ``literal_eval`` of
    each written value is the value, and running the cell writes no file."""
    monkeypatch.chdir(tmp_path)
    value = {"note": text, "list": [text, 1, -2.5, None, True, float("-inf")], text: [text]}
    source = parameters_source({"label": text, "simulator": value})
    lines = source.splitlines()
    assert lines[0] == "# Parameters" and len(lines) == 3  # one line per parameter
    assert ast.literal_eval(lines[1].partition(" = ")[2]) == text
    assert ast.literal_eval(lines[2].partition(" = ")[2]) == value
    space: dict = {}
    exec(compile(source, "<parameters>", "exec"), space)  # what the kernel runs
    assert (space["label"], space["simulator"]) == (text, value)
    assert not (tmp_path / CANARY).exists()


@pytest.mark.parametrize("value", [b'"); open("CANARY","w").write("x"); ("', {BREAKOUT}])
def test_the_parameters_cell_refuses_what_is_not_plain(value) -> None:
    with pytest.raises(ValueError, match="plain data"):
        parameters_source({"label": value})


def test_papermill_injects_the_cell_the_runner_writes(tmp_path: Path) -> None:
    """Through papermill's own parameterizing (no kernel): the runner's translator writes the
    injected cell, and a bytes value papermill would have written as ``"b'...'"`` (code, with a
    quote in it) is refused."""
    from papermill.parameterize import parameterize_notebook

    from racer_lib.book.scheduling import KERNEL_NAME, _literal_parameters

    _literal_parameters()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("label = 'default'", metadata={"tags": ["parameters"]})]
    nb.metadata["papermill"] = {}
    given = {"label": BREAKOUT, "trainer": {"note": NASTY[2]}}
    done = parameterize_notebook(nb, given, kernel_name=KERNEL_NAME, language="python")
    source = done.cells[1].source
    assert done.cells[1].metadata["tags"] == ["injected-parameters"]
    assert source == parameters_source(given)
    with pytest.raises(ValueError, match="YAML tag !!binary"):
        parameterize_notebook(
            nb, {"label": BREAKOUT.encode()}, kernel_name=KERNEL_NAME, language="python"
        )


# --------------------------------------------------------------------------- profiles, --set

TAGGED = {
    "binary": (f"!!binary {PAYLOAD_BASE64}", "!!binary"),
    "set": (f"[ok, {{deep: !!set {{'{PAYLOAD}'}}}}]", "!!set"),
    "timestamp": ("{when: !!timestamp 2001-12-14t21:59:43.10-05:00}", "!!timestamp"),
    "omap": ("!!omap [{a: 1}]", "!!omap"),
}


def declare(repo: Path, lines: str) -> None:
    """Add ``lines`` (``name = default``) to toy notebook 01_alpha's parameters cell."""
    nb = repo / "notebooks" / "01_alpha.md"
    nb.write_text(nb.read_text().replace('label = "default"\n', f'label = "default"\n{lines}'))


@pytest.mark.parametrize("kind", TAGGED)
def test_a_tagged_value_in_a_profile_is_refused_naming_the_parameter(repo: Path, kind) -> None:
    value, tag = TAGGED[kind]
    path = write(repo, "tagged", f"notebooks:\n  01_alpha:\n    label: {value}\n")
    with pytest.raises(PipelineError) as info:
        load_profile("tagged", repo)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and tag in message
    assert "notebook '01_alpha', parameter 'label" in message


def test_items_of_a_list_whose_default_is_empty_are_checked(repo: Path) -> None:
    """``_fits`` takes any item for a default of ``[]``; plain data is checked anyway."""
    declare(repo, "tags = []\n")
    write(repo, "listed", "set:\n  tags: [a, !!set {b}]\nnotebooks:\n  01_alpha: {}\n")
    with pytest.raises(PipelineError, match=r"'set' gives parameter 'tags\[1\]' is set"):
        load_profile("listed", repo)


def build(repo: Path, capsys, *args: str) -> tuple[int, list[str]]:
    """``racer book build --root repo --no-book ARGS``: the status and the lines on stderr."""
    try:
        status = cli.main(["book", "build", "--root", str(repo), "--no-book", *args])
    except SystemExit as exc:  # argparse refuses a --set it cannot read
        status = exc.code
    return status, capsys.readouterr().err.strip().splitlines()


EVIL = {
    "binary": f"notebooks:\n  01_alpha: {{simulator: {{note: !!binary {PAYLOAD_BASE64}}}}}\n",
    "python object": "notebooks:\n  01_alpha: {simulator: !!python/object/apply:os.system [x]}\n",
    "nested set": f"notebooks:\n  01_alpha: {{}}\nset:\n  tags: [x, !!set {{'{PAYLOAD}'}}]\n",
}


@pytest.mark.parametrize("kind", EVIL)
def test_racer_refuses_a_profile_that_would_run_code_in_one_line(repo, capsys, kind) -> None:
    """A mapping parameter (default ``{}``) and a list one (default ``[]``): their types fit,
    what they hold would have been written into the notebook as code."""
    declare(repo, "simulator = {}\ntags = []\n")
    write(repo, "evil", EVIL[kind])
    status, err = build(repo, capsys, "--profile", "evil")
    assert status == 2 and len(err) == 1, err
    assert "evil.yaml" in err[0]
    no_canary(repo)
    assert not (repo / "build").exists() and not (repo / "results").exists()


@pytest.mark.parametrize(
    "assignment",
    [f"simulator={{note: !!binary {PAYLOAD_BASE64}}}", f"tags=[a, !!set {{'{PAYLOAD}'}}]"],
    ids=["binary", "nested set"],
)
def test_racer_refuses_a_set_that_would_run_code_in_one_line(repo, capsys, assignment) -> None:
    declare(repo, "simulator = {}\ntags = []\n")
    status, err = build(repo, capsys, "--profile", "base", "--set", assignment)
    assert status == 2 and len(err) == 1, err
    assert "--set" in err[0] and "!!" in err[0]
    no_canary(repo)
    assert not (repo / "build").exists()


def test_a_profile_over_the_size_limit_is_refused_before_it_is_read(repo, monkeypatch) -> None:
    path = write(repo, "big", "notebooks:\n  01_alpha: {}\n" + "#" * parameters.MAX_PROFILE_BYTES)
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: pytest.fail("read"))
    with pytest.raises(PipelineError) as info:
        load_profile("big", repo)
    assert f"{path} holds {path.stat().st_size} bytes, more than a profile may hold" in str(
        info.value
    )


def test_a_profile_of_too_many_values_is_refused_with_its_line(repo: Path) -> None:
    many = ", ".join(["1"] * parameters.MAX_PROFILE_VALUES)
    write(repo, "many", f"notebooks:\n  01_alpha:\n    seed: [{many}]\n")
    with pytest.raises(PipelineError, match="line 3: more than 10000 values") as info:
        load_profile("many", repo)
    assert "\n" not in str(info.value)


def test_a_long_set_value_is_refused(capsys) -> None:
    from racer_lib.cli.book import _assignment

    with pytest.raises(Exception, match="more than a profile may hold"):
        _assignment("label=" + "x" * (parameters.MAX_PROFILE_BYTES + 1))


@pytest.mark.slow
def test_a_string_that_tries_to_break_out_runs_as_the_string_it_is(repo, capsys) -> None:
    """End to end, with a kernel: the breakout string (and a --set one) reach the notebook as
    themselves, and no canary is written."""
    write(repo, "inert", "notebooks:\n  01_alpha:\n    label: '" + BREAKOUT + "'\n")
    status, err = build(repo, capsys, "--profile", "inert")
    assert status == 0, err
    import pandas as pd

    csv = repo / "results" / "inert" / "01_alpha" / "params.csv"
    assert pd.read_csv(csv, keep_default_na=False)["label"].tolist() == [BREAKOUT]
    no_canary(repo)
