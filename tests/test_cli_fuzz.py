"""A fuzzing harness for ``racer``'s cheap entry points and for the profiles (hypothesis).

Every example runs ``racer`` in this process (:func:`racer_lib.cli.main`) on what a hostile or
careless user may hand it:

* arbitrary YAML documents as a profile (``racer book build --dry-run``, which checks a profile,
  its ``--set`` values and every parameter as a build does, and runs nothing), with YAML tags
  (``!!binary``, ``!!set``, ``!!python/object/apply:os.system`` ...), anchors, huge and odd
  scalars, paths out of the repository, through links, loops and FIFOs;
* arbitrary ``--set NAME=VALUE`` values, tags included;
* arbitrary path layouts given to ``racer records validate`` and ``racer router info``: a
  folder, a symbolic link (dangling, looping, out of the folder), a FIFO, a file as a folder,
  random bytes under a records or router name;
* an arbitrary YAML document as ``racer data list``'s manifest, with ``RACER_CACHE_DIR`` and
  ``RACER_DATA_DIR`` naming any of those;
* arbitrary argument lists of these commands.

The property: exit 0, or exit 2 with one line ``error: ...`` on stderr (argparse's usage
message for a command line it cannot parse), never a traceback nor a warning; nothing written
outside the folders named (the whole test folder and the process's temporary folder are listed
before and after); no code run (a canary file that the payloads would create never appears).

How many examples per entry point: 3000 in CI (``make test TEST_ALL=1``, the ``ci`` hypothesis
profile of tests/conftest.py), 150 in ``make test`` (the harness adds about 25 s to it). What it
found is kept as explicit examples (``@example``), run every time.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import stat
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from racer_lib import cli

FIXTURE = Path(__file__).parent / "fixtures" / "pipeline"
#: Examples per entry point: 3000 under CI's hypothesis profile (``make test TEST_ALL=1``: about
#: 7 minutes for the six on a shared 2-core machine), 150 in ``make test`` (about 20 s).
EXAMPLES = 3000 if settings.default.max_examples > 500 else 150
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
CANARY = "racer-fuzz-canary"
#: The parameters the toy notebook 01_alpha declares here, with their defaults.
DECLARED = {
    "seed": "0",
    "label": '"default"',
    "records_dir": '""',
    "tags": "[]",
    "simulator": "{}",
    "other_results": '""',
    "budget": "2.0",
}

# ----------------------------------------------------------------------------------------
# The world: a toy repository and a folder of odd paths


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    """The toy repository (``repo``), a folder of odd paths beside it (``odd``), a folder out of
    the repository (``outside``), all under ``base``; and the process's own temporary folder
    (``tmp``, elsewhere)."""
    base = tmp_path_factory.mktemp("fuzz")
    repo = base / "repo"
    for folder in ("notebooks", "profiles"):
        shutil.copytree(FIXTURE / folder, repo / folder)
    nb = repo / "notebooks" / "01_alpha.md"
    cell = "".join(f"{name} = {value}\n" for name, value in DECLARED.items() if name != "seed")
    nb.write_text(nb.read_text().replace('seed = 0\nlabel = "default"\n', f"seed = 0\n{cell}"))
    outside = base / "outside"
    (outside / "04").mkdir(parents=True)
    (outside / "04" / "delta_accuracy_by_domain.csv").write_text("domain,delta\nmath,1\n")
    (repo / "linked").symlink_to(outside, target_is_directory=True)
    (repo / "loop").symlink_to("loop2")
    (repo / "loop2").symlink_to("loop")
    os.mkfifo(repo / "fifo")
    (repo / "records").mkdir()
    (repo / "records" / "a.csv").write_text("id\n1\n")
    odd = base / "odd"
    odd.mkdir()
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--scale", "0.01", "--dim", "4"]
    for name in ("valid.csv", "valid.parquet"):
        assert cli.main([*argv, "--out", str(odd / name)]) == 0
    (odd / "dir.csv").mkdir()
    (odd / "loop.csv").symlink_to("loop2.csv")
    (odd / "loop2.csv").symlink_to("loop.csv")
    os.mkfifo(odd / "fifo.csv")
    os.mkfifo(odd / "fifo.pt")
    (odd / "dangling.csv").symlink_to(base / "gone.csv")
    (odd / "link.csv").symlink_to(odd / "valid.csv")
    (odd / "out.pt").symlink_to(outside / "04" / "delta_accuracy_by_domain.csv")
    (odd / "file").write_text("a file, not a folder")
    (odd / "empty.csv").write_bytes(b"")
    (odd / "empty.parquet").write_bytes(b"")
    (odd / "empty.pt").write_bytes(b"")
    tmp = tmp_path_factory.mktemp("fuzztmp")
    return {"base": base, "repo": repo, "odd": odd, "outside": outside, "tmp": tmp}


#: Files an example writes itself (its profile, random bytes, a manifest): left out of the
#: listing of what ``racer`` wrote.
SCRATCH = ("fz.yaml", "random.csv", "random.parquet", "random.pt", "manifest.yaml")


def listing(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder`` (links not followed): its kind, size and modification."""
    found = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            if name in SCRATCH:
                continue
            path = os.path.join(top, name)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):  # a folder's own times move with the scratch files
                found[os.path.relpath(path, folder)] = (info.st_mode,)
            else:
                found[os.path.relpath(path, folder)] = (
                    info.st_mode,
                    info.st_size,
                    info.st_mtime_ns,
                )
    return found


#: A line of a progress bar (tqdm redraws it with carriage returns).
_PROGRESS = re.compile(r"\r|\d+%\|")


def racer(world: dict[str, Path], argv: list[str], env: dict[str, str] | None = None):
    """``racer ARGV`` in this process, with ``env`` set, the temporary folder ``world['tmp']``
    and a 30 s alarm (a FIFO opened for reading would wait for ever); check the property and
    return ``(status, stdout)``."""
    before = listing(world["base"])
    out, err = io.StringIO(), io.StringIO()
    saved = {name: os.environ.get(name) for name in env or {}}
    old_tmp = tempfile.tempdir

    def hang(signum, frame):
        raise TimeoutError(f"racer {argv} blocked for 30 s")

    old_alarm = signal.signal(signal.SIGALRM, hang)
    signal.alarm(30)
    try:
        os.environ.update(env or {})
        tempfile.tempdir = str(world["tmp"])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning is output the user did not ask for
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = cli.main(argv)
                except SystemExit as exc:  # argparse: --help, a usage error
                    status = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old_alarm)
        tempfile.tempdir = old_tmp
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    said = err.getvalue()
    assert "Traceback" not in said, said
    assert not (world["base"] / CANARY).exists() and not Path(CANARY).exists()
    assert listing(world["base"]) == before, f"racer {argv} wrote, moved or deleted files"
    assert not any(world["tmp"].iterdir()), f"racer {argv} left temporary files"
    lines = [line for line in said.splitlines() if line.strip() and not _PROGRESS.search(line)]
    if status == 0:
        return status, out.getvalue()
    assert status == 2, (argv, status, said)
    if lines and lines[0].startswith("usage:"):  # argparse's message
        assert re.match(r"racer[\w -]*: error: ", lines[-1]), said
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), (argv, said)
    return status, out.getvalue()


# ----------------------------------------------------------------------------------------
# YAML: scalars, tags, anchors, flow lists and mappings


def _code(world_base: str) -> str:
    """A payload that creates the canary if it is ever run as Python or through a shell."""
    return f"touch {world_base}/{CANARY}"


SCALARS = [
    "0", "1", "-1", "3", "2.0", "1e308", "-1e308", "1e-320", ".nan", ".inf", "-.inf", "true",
    "yes", "no", "on", "null", "~", "''", '""', "0x1F", "0o17", "0b101", "1_000", "+12",
    "2026-11-29", "2026-11-29T10:00:00Z", "12:30:45", "9" * 5000, "x" * 300, "=", "<<",
    "'../../../../outside/04'", "../outside/04", "/etc/passwd", "/etc", "/", ".", "..",
    "linked", "linked/04", "loop", "fifo", "records", "records/a.csv", "'\\x00'",
    '"\\x00"', '"\\ud800"', '"\\u2028"', "'#'", "qwen3-4b", "mlp", "abc", "'a: b'",
    '"); __import__(\'os\').system(\'touch ' + CANARY + "') #\"",
]  # fmt: skip
TAGS = [
    "!!binary", "!!set", "!!timestamp", "!!omap", "!!pairs", "!!str", "!!int", "!!float",
    "!!bool", "!!null", "!!map", "!!seq", "!!merge", "!!python/object/apply:os.system",
    "!!python/name:os.system", "!!python/object/new:os.system", "!!python/tuple", "!foo",
    "!<tag:yaml.org,2002:binary>",
]  # fmt: skip
KEYS = [*DECLARED, "profile", "results_dir", "policy_store", "trainer", "x", "1", "null", "<<"]
_BINARY = "IjsgaW1wb3J0IG9zOyBvcy5zeXN0ZW0oInRvdWNoIHJhY2VyLWZ1enotY2FuYXJ5IikgIw=="


def yaml_values(depth: int = 3) -> st.SearchStrategy[str]:
    """YAML flow values: odd scalars, JSON strings, tagged values, anchors and aliases,
    payloads, lists and mappings of them."""
    scalar = st.one_of(
        st.sampled_from(SCALARS),
        st.text(max_size=20).map(lambda t: '"' + t.encode("unicode_escape").decode() + '"'),
        st.integers().map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.just(f"!!binary {_BINARY}"),
        st.just(f'!!python/object/apply:os.system ["touch {CANARY}"]'),
    )
    if depth == 0:
        return scalar
    inner = yaml_values(depth - 1)
    return st.one_of(
        scalar,
        st.tuples(st.sampled_from(TAGS), inner).map(" ".join),
        st.tuples(st.sampled_from(["&a ", "*a", "&b "]), inner).map(
            lambda p: p[0] if p[0] == "*a" else p[0] + p[1]
        ),
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(st.sampled_from(KEYS) | inner, inner), max_size=4).map(
            lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
        ),
    )


@st.composite
def profiles(draw) -> str:
    """A profile file's text: a plausible profile with odd values, or any YAML document, or any
    text at all."""
    kind = draw(st.sampled_from(["plausible", "plausible", "document", "text"]))
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "document":
        return draw(yaml_values())
    params = draw(st.lists(st.tuples(st.sampled_from(KEYS), yaml_values(2)), max_size=4))
    lines = ["notebooks:", "  01_alpha: {" + ", ".join(f"{k}: {v}" for k, v in params) + "}"]
    if draw(st.booleans()):
        lines.append("  02_beta: " + draw(yaml_values(1)))
    if draw(st.booleans()):
        sets = draw(st.lists(st.tuples(st.sampled_from(KEYS), yaml_values(2)), max_size=3))
        lines.append("set: {" + ", ".join(f"{k}: {v}" for k, v in sets) + "}")
    for key in draw(st.lists(st.sampled_from(["extends", "on_missing", "requires", "zz"]))):
        lines.append(f"{key}: {draw(yaml_values(1))}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------
# The entry points


def dry_run(world, *args: str) -> list[str]:
    return ["book", "build", "--root", str(world["repo"]), "--no-book", "--dry-run", *args]


@FUZZ
@given(text=profiles())
@example(text="notebooks:\n  01_alpha: {}\non_missing: 0\nrequires: {seed: 1}\n")
@example(text="notebooks:\n  01_alpha: {seed: !!int '', tags: [!!timestamp 0]}\n")
def test_any_profile_is_checked_or_refused_in_one_line(world, text: str) -> None:
    (world["repo"] / "profiles" / "fz.yaml").write_text(text, encoding="utf-8", errors="replace")
    status, out = racer(world, dry_run(world, "--profile", "fz"))
    assert status == 2 or "would run" in out


@FUZZ
@given(
    sets=st.lists(
        st.tuples(st.sampled_from([*KEYS, "", "9x", "a-b", "x y"]), yaml_values(2)),
        min_size=1,
        max_size=3,
    )
)
@example(sets=[("seed", "!!bool 0")])
@example(sets=[("seed", "!!float ''")])
@example(sets=[("seed", "!!timestamp 0")])
def test_any_set_value_is_checked_or_refused_in_one_line(world, sets) -> None:
    argv = dry_run(world, "--profile", "base")
    for name, value in sets:
        argv += ["--set", f"{name}={value}"]
    status, out = racer(world, argv)
    assert status == 2 or "would run 2 notebook(s)" in out


ODD_RECORDS = [
    "valid.csv", "valid.parquet", "dir.csv", "loop.csv", "fifo.csv", "dangling.csv", "link.csv",
    "file/x.csv", "empty.csv", "empty.parquet", "random.csv", "random.parquet", "missing.csv",
    "valid.txt", "", ".", "fifo.pt",
]  # fmt: skip


@FUZZ
@given(
    names=st.lists(st.sampled_from(ODD_RECORDS), min_size=1, max_size=3),
    data=st.binary(max_size=300),
)
def test_records_validate_on_any_path_layout(world, names, data: bytes) -> None:
    odd = world["odd"]
    (odd / "random.csv").write_bytes(data)
    (odd / "random.parquet").write_bytes(data)
    status, out = racer(world, ["records", "validate", *(str(odd / n) for n in names)])
    if status == 0:
        assert out.count("valid records") == len(names)


ODD_ROUTERS = ["dir.csv", "loop.csv", "fifo.pt", "dangling.csv", "file/x.pt", "empty.pt"]


@FUZZ
@given(
    name=st.sampled_from([*ODD_ROUTERS, "random.pt", "out.pt", "valid.parquet"]),
    data=st.binary(max_size=300),
    json_flag=st.booleans(),
)
def test_router_info_on_any_file(world, name: str, data: bytes, json_flag: bool) -> None:
    (world["odd"] / "random.pt").write_bytes(data)
    argv = ["router", "info", str(world["odd"] / name), *(["--json"] if json_flag else [])]
    assert racer(world, argv)[0] == 2  # none of them is a router


@FUZZ
@given(
    manifest=st.one_of(st.none(), yaml_values(), st.text(max_size=100)),
    cache=st.sampled_from([None, "file", "file/below", "dir.csv", "loop.csv", "fifo.csv", "."]),
    mirror=st.sampled_from([None, "file", "dir.csv", "loop.csv", "missing"]),
)
@example(manifest="!!int", cache=None, mirror=None)
@example(manifest='!!python/object/apply:os.system ["touch x"]', cache=None, mirror=None)
@example(manifest=None, cache="file", mirror="loop.csv")
def test_data_list_with_any_manifest_and_folders(world, manifest, cache, mirror) -> None:
    odd = world["odd"]
    argv = ["data", "list"]
    if manifest is not None:
        (odd / "manifest.yaml").write_text(manifest, encoding="utf-8", errors="replace")
        argv += ["--manifest", str(odd / "manifest.yaml")]
    env = {}
    if cache is not None:
        env["RACER_CACHE_DIR"] = str(odd / cache)
    if mirror is not None:
        env["RACER_DATA_DIR"] = str(odd / mirror)
    racer(world, argv, env)


WORDS = [
    "--profile", "base", "fz", "nope", "../profiles/base", "--only", "01", "0", "zz", "--set",
    "seed=1", "x", "=", "seed=!!binary aGk=", "--jobs", "-1", "1e308", "--root", "/", "--help",
    "--build-dir", "--results-dir", "--book-out", "--no-book", "--force", "-v", "--json",
    "--manifest", "", "\x00", "\udcff", "records", "validate", "info", "list", "--",
]  # fmt: skip


@FUZZ
@given(
    command=st.sampled_from(
        [["records", "validate"], ["router", "info"], ["data", "list"], ["book", "build"]]
    ),
    words=st.lists(st.sampled_from(WORDS), max_size=6),
)
def test_any_arguments_of_the_cheap_commands(world, command, words) -> None:
    argv = [*command, *words]
    if command == ["book", "build"]:  # never a build: checked only
        argv = [*argv, "--dry-run", "--root", str(world["repo"])]
    if "--help" in argv:  # argparse's help: printed, exit 0
        argv.remove("--help")
    racer(world, argv)
