"""The runner tried as a careful user would: files changed behind its back, two builds at once, a
killed runner, a build folder it cannot write (issue 23).

Each test runs the toy repository of tests/test_pipeline.py with one more notebook, ``04_delta``,
that reads a file a parameter names, writes as many tables as a parameter says and can wait
before writing them (written into the copy, so the fixture's own tests see three notebooks).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from racer_lib.book import cache, runner
from racer_lib.book.profiles import Folders
from racer_lib.book.runner import run_profile
from tests.test_pipeline import MYST_HEADER, cli, make_repo, run_messages, write_profile

DELTA = (
    MYST_HEADER
    + """
# Delta

Reads a file, waits, writes tables.

```{code-cell} ipython3
:tags: [parameters]

profile = None
results_dir = None
records = ""
tables = 2
wait = 0.0
```

```{code-cell} ipython3
import time
from pathlib import Path

out = Path(results_dir)
text = Path(records).read_text().strip() if records else "none"
(out / "started.txt").write_text("started\\n")
time.sleep(wait)
for index in range(tables):
    (out / f"table_{index}.csv").write_text(f"index,text\\n{index},{text}\\n")
```
"""
)
RECORDS = "data/records.txt"


@pytest.fixture(autouse=True)
def steady_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library's hash held still: racer_lib being edited between two runs of a test
    (another checkout's work, a formatter) would re-run every chapter."""
    monkeypatch.setattr(runner, "library_hash", lambda: "racer_lib as tested")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The toy repository with ``04_delta`` and a records file; profile ``one`` runs delta."""
    repo = make_repo(tmp_path / "repo")
    (repo / "notebooks" / "04_delta.md").write_text(DELTA)
    (repo / "data").mkdir()
    (repo / RECORDS).write_text("abc\n")
    write_profile(repo, "one", {"04_delta": {"records": RECORDS}})
    return repo


def results(repo: Path, profile: str = "one", stem: str = "04_delta") -> Path:
    return repo / "results" / profile / stem


def keys(repo: Path, profile: str) -> list[str]:
    folder = repo / "build" / profile / "cache"
    return sorted(path.name for path in folder.glob("*.json"))


# --------------------------------------------------------------------------- inputs and outputs


def test_an_input_replaced_with_the_same_size_and_mtime_reruns_the_chapter(
    repo: Path, capsys: pytest.CaptureFixture
) -> None:
    """Keyed by (path, size, mtime), such a file once left the chapter reused, stale."""
    assert cli(repo, "--profile", "one", "--no-book") == 0
    assert (results(repo) / "table_0.csv").read_text() == "index,text\n0,abc\n"
    capsys.readouterr()
    path = repo / RECORDS
    stat = path.stat()
    path.write_text("xyz\n")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_mtime_ns == stat.st_mtime_ns and path.stat().st_size == stat.st_size
    assert cli(repo, "--profile", "one", "--no-book") == 0
    assert run_messages(capsys) == [f"re-running 04_delta: input changed: {RECORDS}"]
    assert (results(repo) / "table_0.csv").read_text() == "index,text\n0,xyz\n"
    # the same content again, under a new mtime: the content is what counts
    path.write_text("xyz\n")
    assert cli(repo, "--profile", "one", "--no-book") == 0
    assert run_messages(capsys) == ["reused 04_delta: unchanged"]


@pytest.mark.parametrize("fault", ["deleted", "truncated", "same size"])
def test_a_missing_or_changed_output_reruns_the_chapter_and_says_which(
    repo: Path, capsys: pytest.CaptureFixture, fault: str
) -> None:
    """A deleted result CSV once left "reused 04_delta: unchanged" and the file missing."""
    assert cli(repo, "--profile", "one", "--no-book") == 0
    capsys.readouterr()
    table = results(repo) / "table_1.csv"
    good = table.read_bytes()
    if fault == "deleted":
        table.unlink()
    elif fault == "truncated":
        table.write_bytes(good[:5])
    else:
        table.write_bytes(good.replace(b"abc", b"abd"))
    assert cli(repo, "--profile", "one", "--no-book") == 0
    why = "output missing" if fault == "deleted" else "output changed"
    assert run_messages(capsys) == [f"re-running 04_delta: {why}: results/one/04_delta/table_1.csv"]
    assert table.read_bytes() == good
    assert cli(repo, "--profile", "one", "--no-book") == 0
    assert run_messages(capsys) == ["reused 04_delta: unchanged"]


def test_a_rerun_that_writes_fewer_files_leaves_no_stale_file(repo: Path) -> None:
    """A dropped judge's figure once stayed in its results folder and in the book."""
    write_profile(repo, "one", {"04_delta": {"records": RECORDS, "tables": 3}})
    run_profile("one", root=repo, build_book=False)
    assert sorted(p.name for p in results(repo).iterdir())[1:] == [
        "table_0.csv",
        "table_1.csv",
        "table_2.csv",
    ]
    # a judge run's folder (racer judge run's output, resumed by a re-run) is kept
    judge_run = results(repo) / "judge" / "qwen3-4b"
    judge_run.mkdir(parents=True)
    (judge_run / "config.json").write_text("{}\n")
    (judge_run / "part-00000.parquet").write_bytes(b"PAR1")
    (results(repo) / "judge" / "stale.png").write_bytes(b"png")
    write_profile(repo, "one", {"04_delta": {"records": RECORDS, "tables": 1}})
    run_profile("one", root=repo, build_book=False)
    assert sorted(p.relative_to(results(repo)).as_posix() for p in results(repo).rglob("*")) == [
        "judge",
        "judge/qwen3-4b",
        "judge/qwen3-4b/config.json",
        "judge/qwen3-4b/part-00000.parquet",
        "started.txt",
        "table_0.csv",
    ]


@pytest.mark.parametrize(
    "garbage",
    [
        '{"format": FORMAT, "key": "k", "parts": "garbage", "reads": {}}',
        '{"parts": "garbage"}',
        "{not json",
        "[1, 2]",
        "\udcff",
    ],
)
def test_a_malformed_cache_key_reruns_the_chapter_with_a_message(
    repo: Path, capsys: pytest.CaptureFixture, garbage: str
) -> None:
    """``{"parts": "garbage"}`` once ended in an AttributeError's traceback."""
    assert cli(repo, "--profile", "one", "--no-book") == 0
    capsys.readouterr()
    key = repo / "build" / "one" / "cache" / "04_delta.json"
    text = garbage.replace("FORMAT", str(cache.CACHE_FORMAT))
    key.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert cli(repo, "--profile", "one", "--no-book") == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "re-running 04_delta: its cache key build/one/cache/04_delta.json is unreadable (" in err
    assert json.loads(key.read_text())["format"] == cache.CACHE_FORMAT


# --------------------------------------------------------------------------- failed runs


def test_a_bad_results_dir_deletes_no_cache_key(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A run with a bad ``--results-dir`` once deleted every cache key of the profile."""
    write_profile(repo, "two", {"03_gamma": {}, "04_delta": {"records": RECORDS}})
    assert cli(repo, "--profile", "two", "--no-book", "--jobs", "1") == 0
    assert keys(repo, "two") == ["03_gamma.json", "04_delta.json"]
    capsys.readouterr()
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder\n")
    assert cli(repo, "--profile", "two", "--no-book", "--results-dir", str(a_file)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"error: cannot write the results folder {a_file / 'two'}" in err
    assert keys(repo, "two") == ["03_gamma.json", "04_delta.json"]
    assert cli(repo, "--profile", "two", "--no-book") == 0
    assert run_messages(capsys) == ["reused 03_gamma: unchanged", "reused 04_delta: unchanged"]


@pytest.mark.slow
def test_a_failed_run_keeps_the_keys_of_the_chapters_it_did_not_start(
    repo: Path, capsys: pytest.CaptureFixture
) -> None:
    write_profile(repo, "two", {"02_beta": {}, "04_delta": {"records": RECORDS}})
    assert cli(repo, "--profile", "two", "--no-book", "--jobs", "1") == 0
    write_profile(repo, "two", {"02_beta": {"fail": True}, "04_delta": {"records": RECORDS}})
    assert cli(repo, "--profile", "two", "--no-book", "--jobs", "1", "--force") == 2
    assert keys(repo, "two") == ["04_delta.json"]  # beta failed; delta never started
    write_profile(repo, "two", {"02_beta": {}, "04_delta": {"records": RECORDS}})
    capsys.readouterr()
    assert cli(repo, "--profile", "two", "--no-book", "--jobs", "1") == 0
    assert run_messages(capsys) == [
        "re-running 02_beta: no previous run",
        "reused 04_delta: unchanged",
    ]


# --------------------------------------------------------------------------- a read-only build


def _read_only_run(repo: Path, build: Path) -> subprocess.CompletedProcess:
    """``racer book build`` on ``repo`` with ``build`` read-only: chmod as a user; as root
    (whom chmod does not stop) a read-only bind mount in a private mount namespace."""
    command = [str(Path(sys.executable).parent / "racer"), "book", "build", "--root", str(repo)]
    command += ["--profile", "one", "--no-book"]
    if os.geteuid() != 0:
        for path in [build, *build.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        try:
            return subprocess.run(command, capture_output=True, text=True)
        finally:
            for path in [build, *build.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
    if shutil.which("unshare") is None:
        pytest.skip("running as root without unshare: cannot make build/ read-only")
    script = f'mount --bind "{build}" "{build}" && mount -o remount,ro,bind "{build}" && '
    script += f'touch "{build}/probe" 2>/dev/null && exit 97; exec "$@"'
    completed = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *command],
        capture_output=True,
        text=True,
    )
    if completed.returncode == 97 or "unshare:" in completed.stderr[:200]:
        pytest.skip(f"cannot make build/ read-only here: {completed.stderr.strip()[:200]}")
    return completed


@pytest.mark.slow
def test_a_read_only_build_folder_with_everything_reusable_is_no_traceback(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``build/`` not writable and nothing to run once ended in a traceback (timings.json)."""
    monkeypatch.undo()  # the real library hash, as in the other process
    run_profile("one", root=repo, build_book=False)
    completed = _read_only_run(repo, repo / "build")
    assert "Traceback" not in completed.stderr, completed.stderr
    assert completed.returncode == 0, completed.stderr
    assert "reused 04_delta: unchanged" in completed.stderr
    assert not (repo / "build" / "probe").exists()


# --------------------------------------------------------------------------- one build at a time

HOLD = """
import sys, time
from pathlib import Path
from racer_lib.book import lock
with lock.build_lock(Path(sys.argv[1]), "one"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_second_build_of_a_profile_is_refused_naming_the_holder_and_others_run(
    repo: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds of one profile once ran at once; one failed with EmptyDataError."""
    from racer_lib.book import lock

    build = repo / "build" / "one"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(build)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        monkeypatch.setenv(lock.ENV_TIMEOUT, "0.5")
        assert cli(repo, "--profile", "one", "--no-book") == 2
        err = capsys.readouterr().err
        assert f"waiting for the build of profile one by PID {holder.pid}" in err
        assert f"error: profile one is being built by PID {holder.pid} (lock {build}" in err
        assert "Traceback" not in err
        assert not (repo / "build" / "one" / "cache").exists()
        assert not results(repo).exists()
        # another profile is not blocked
        write_profile(repo, "other", {"03_gamma": {}})
        assert cli(repo, "--profile", "other", "--no-book") == 0
    finally:
        holder.kill()
        holder.wait()
    # the holder gone (killed: its lock went with it), the profile runs
    assert cli(repo, "--profile", "one", "--no-book") == 0


def test_the_lock_is_per_build_folder(repo: Path, tmp_path: Path) -> None:
    from racer_lib.book import lock

    elsewhere = Folders(tmp_path / "build", tmp_path / "results")
    with lock.build_lock(repo / "build" / "one", "one"):
        result = run_profile("one", root=repo, build_book=False, folders=elsewhere)
    assert (result.results_dirs["04_delta"] / "table_0.csv").is_file()


# --------------------------------------------------------------------------- no orphans


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("sent", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_killing_the_runner_leaves_no_worker_and_no_later_csv(repo: Path, sent: int) -> None:
    """Workers once outlived a killed runner, finished their chapters and wrote CSVs. SIGKILL:
    the workers see their parent go; SIGINT (Ctrl-C): the runner stops them."""
    (repo / "notebooks" / "05_epsilon.md").write_text(DELTA.replace("# Delta", "# Epsilon"))
    slow = {"records": RECORDS, "wait": 6.0}
    write_profile(repo, "two", {"04_delta": slow, "05_epsilon": slow})
    command = [str(Path(sys.executable).parent / "racer"), "book", "build", "--root", str(repo)]
    process = subprocess.Popen(
        [*command, "--profile", "two", "--no-book", "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # Ctrl-C as in a terminal, even when this process was started with SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    started = [results(repo, "two", stem) / "started.txt" for stem in ("04_delta", "05_epsilon")]
    deadline = time.monotonic() + 120
    while not all(path.exists() for path in started):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    below = _descendants(process.pid)
    assert len(below) >= 4  # two workers, two kernels
    process.send_signal(sent)
    process.wait()
    time.sleep(8)  # longer than the notebooks would still have waited
    alive = [pid for pid in below if _alive(pid)]
    for pid in alive:  # leave no orphan behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert alive == []
    for stem in ("04_delta", "05_epsilon"):
        assert not list(results(repo, "two", stem).glob("*.csv"))


# --------------------------------------------------------------------------- faults together


def _racer(repo: Path, *args: str) -> list[str]:
    racer = str(Path(sys.executable).parent / "racer")
    return [racer, "book", "build", "--root", str(repo), "--no-book", *args]


def _csvs(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.csv"))}


def _clean_run(repo: Path, tmp_path: Path, profile: str) -> dict[str, bytes]:
    folders = Folders(tmp_path / "clean" / "build", tmp_path / "clean" / "results")
    run_profile(profile, root=repo, build_book=False, folders=folders, jobs=1)
    return _csvs(tmp_path / "clean" / "results" / profile)


@pytest.mark.slow
@pytest.mark.ci_only  # a minute of builds; `make test` keeps the one-kill tests
def test_two_builds_of_one_profile_at_once_both_succeed_with_a_clean_runs_csvs(
    repo: Path, tmp_path: Path
) -> None:
    """The second waits for the first, then reuses what it wrote."""
    write_profile(repo, "one", {"04_delta": {"records": RECORDS, "wait": 1.0}, "03_gamma": {}})
    both = [
        subprocess.Popen(
            _racer(repo, "--profile", "one"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    errs = [process.communicate()[1].decode() for process in both]
    assert [process.returncode for process in both] == [0, 0], errs
    waited = [err for err in errs if "waiting for the build of profile one by PID" in err]
    assert len(waited) == 1 and "reused 04_delta: unchanged" in waited[0]
    assert _csvs(repo / "results" / "one") == _clean_run(repo, tmp_path, "one")


@pytest.mark.slow
@pytest.mark.ci_only  # a minute of builds; `make test` keeps the one-kill tests
def test_a_runner_killed_three_times_a_flipped_router_and_a_deleted_csv_end_in_a_clean_run(
    repo: Path, tmp_path: Path
) -> None:
    """SIGKILL while planning, during one chapter and as the next starts; then bytes flipped in
    a stored router and a result deleted: the next build names each fault and writes what a
    clean run writes."""
    from tests.test_checked_routers import ROUTERS_NOTEBOOK, flip

    (repo / "notebooks" / "05_routers.md").write_text(ROUTERS_NOTEBOOK)
    notebooks = {"05_routers": {}, "04_delta": {"records": RECORDS, "wait": 2.0}, "03_gamma": {}}
    write_profile(repo, "one", notebooks)
    command = _racer(repo, "--profile", "one", "--jobs", "1")
    delta, gamma = results(repo, "one", "04_delta"), results(repo, "one", "03_gamma")

    def kill_when(ready) -> None:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not ready():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        time.sleep(2)  # the kernel notices its parent is gone

    kill_when(lambda: (repo / "build" / "one" / "build.lock.pid").exists())  # planning
    kill_when(lambda: (delta / "started.txt").exists())  # during 04_delta (05 done)
    assert not (delta / "table_0.csv").exists()
    kill_when(lambda: gamma.is_dir())  # 04_delta done, 03_gamma starting
    assert (delta / "table_0.csv").exists()
    assert keys(repo, "one") == ["04_delta.json", "05_routers.json"]
    entries = sorted((repo / "build" / "policies").glob("??/*.pt"))
    assert len(entries) == 2
    flip(entries[1])
    (delta / "table_1.csv").unlink()
    completed = subprocess.run(command, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    said = completed.stderr
    assert f"stored router {entries[1]} is damaged: digest mismatch" in said
    assert "re-running 04_delta: output missing: results/one/04_delta/table_1.csv" in said
    assert "re-running 03_gamma: no previous run" in said
    assert "reused 05_routers: unchanged" in said  # its results came from sound routers
    assert _csvs(repo / "results" / "one") == _clean_run(repo, tmp_path, "one")
    # the discarded router is trained again, as a clean run trains it, when next needed
    forced = subprocess.run([*command, "--force", "--only", "05"], capture_output=True, text=True)
    assert forced.returncode == 0, forced.stderr
    assert sorted((repo / "build" / "policies").glob("??/*.pt")) == entries
    assert _csvs(repo / "results" / "one") == _clean_run(repo, tmp_path, "one")


# --------------------------------------------------------------------------- issue 30


@pytest.mark.parametrize("fault", ["random bytes", "truncated"])
def test_a_damaged_executed_notebook_reruns_its_chapter_and_says_so(
    repo: Path, capsys: pytest.CaptureFixture, fault: str
) -> None:
    """An executed notebook overwritten or cut short was once "reused: unchanged", and the book
    build then failed with a UnicodeDecodeError / NotJSONError traceback."""
    assert cli(repo, "--profile", "one", "--no-book") == 0
    capsys.readouterr()
    executed = repo / "build" / "one" / "executed" / "04_delta.ipynb"
    good = executed.read_bytes()
    damaged = os.urandom(len(good)) if fault == "random bytes" else good[: len(good) // 2]
    executed.write_bytes(damaged)
    assert cli(repo, "--profile", "one", "--no-book") == 0
    assert run_messages(capsys) == [
        "re-running 04_delta: executed notebook changed: build/one/executed/04_delta.ipynb"
    ]
    assert json.loads(executed.read_text())["cells"]  # a whole notebook again
    assert cli(repo, "--profile", "one", "--no-book") == 0
    assert run_messages(capsys) == ["reused 04_delta: unchanged"]


def _cache_point(what: str, path: str) -> bool:
    """The cache's write points: its keys, the digests, the executed notebooks' final names."""
    name = Path(path)
    return (
        "cache" in name.parts
        or name.name.startswith(("digests.json", ".digests.json"))
        or ("executed" in name.parts and what.startswith("os."))
    )


def _cache_faults(repo: Path, points: list[int] | None) -> None:
    """A clean run of profile ``two`` (two chapters) counts the cache's write points; then the
    write at each of ``points`` (all when None) fails, ENOSPC or EIO in turn, and the run is
    done again: every CSV is byte-identical to the clean run's, each chapter's key is stored,
    and a third run reuses both."""
    from tests.faults import CODES, Faults

    write_profile(repo, "two", {"01_alpha": {}, "04_delta": {"records": RECORDS}})
    clean = repo.parent / "clean"
    shutil.copytree(repo, clean)
    with Faults(clean / "build", match=_cache_point) as counted:
        run_profile("two", root=clean, build_book=False, jobs=1)
    csvs = {p.relative_to(clean): p.read_bytes() for p in (clean / "results").rglob("*.csv")}
    assert len(counted.points) >= 10 and len(csvs) >= 3
    chosen = range(1, len(counted.points) + 1) if points is None else points
    for k in chosen:
        copy = repo.parent / f"k{k}"
        shutil.copytree(repo, copy)
        with Faults(copy / "build", match=_cache_point, fail_at=k, code=CODES[k % 2]) as faults:
            try:
                run_profile("two", root=copy, build_book=False, jobs=1)
            except OSError as exc:  # a PipelineError names the file; an OSError must too
                assert str(copy) in str(exc) or "build/" in str(exc), (k, faults.failed, exc)
            except runner.PipelineError as exc:
                assert "cannot write" in str(exc) and "\n" not in str(exc), (k, exc)
        assert faults.failed is not None, k
        run_profile("two", root=copy, build_book=False, jobs=1)
        got = {p.relative_to(copy): p.read_bytes() for p in (copy / "results").rglob("*.csv")}
        assert got == csvs, f"write {k} ({faults.failed}) changed a CSV"
        again = run_profile("two", root=copy, build_book=False, jobs=1)
        assert sorted(again.reused) == ["01_alpha", "04_delta"], (k, faults.failed)
        shutil.rmtree(copy)


def test_a_cache_write_that_fails_loses_nothing_sampled(repo: Path) -> None:
    """Three of the cache's write points (the full sweep is CI's, below)."""
    _cache_faults(repo, [1, 6, 11])


@pytest.mark.ci_only
def test_a_cache_write_that_fails_at_any_point_loses_nothing(repo: Path) -> None:
    _cache_faults(repo, None)
