"""What a user sees while ``racer book build`` runs (issue 30): the bar names each running chapter
with its time and the chapter's own last progress line; a clean build prints no ERROR.

The builds run the toy repository of tests/test_pipeline.py with notebooks written into the copy:
``04_count`` draws a tqdm bar for four seconds; ``05_linger`` waits three seconds and then, as a
kernel on a busy machine may, is still in the handler of its last reply when the runner shuts it
down (jupyter_client's interrupt then reached it: ``KeyboardInterrupt caught in kernel.``).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from racer_lib.book import scheduling
from racer_lib.book.profiles import Folders
from racer_lib.cli import main
from tests.test_pipeline import MYST_HEADER, make_repo, write_profile

PARAMETERS = """
```{code-cell} ipython3
:tags: [parameters]

profile = None
results_dir = None
```
"""
COUNT = (
    MYST_HEADER
    + "\n# Count\n"
    + PARAMETERS
    + """
```{code-cell} ipython3
import time

from tqdm import tqdm

for _ in tqdm(range(8), desc="counting"):
    time.sleep(0.5)
```
"""
)
LINGER = (
    MYST_HEADER
    + "\n# Linger\n"
    + PARAMETERS
    + """
```{code-cell} ipython3
import time

kernel = get_ipython().kernel
reply = kernel.shell_handlers["kernel_info_request"]


async def linger(*args):
    await reply(*args)
    time.sleep(1.0)


kernel.shell_handlers["kernel_info_request"] = linger
time.sleep(3)
```
"""
)
LOGS = (
    MYST_HEADER
    + "\n# Logs\n"
    + PARAMETERS
    + """
```{code-cell} ipython3
get_ipython().kernel.log.error("a kernel error of its own")
```
"""
)


def _build(repo: Path, profile: str, jobs: int) -> subprocess.CompletedProcess:
    """``racer book build`` of ``profile``, its stdout and stderr together."""
    racer = str(Path(sys.executable).parent / "racer")
    command = [racer, "book", "build", "--root", str(repo), "--no-book", "--profile", profile]
    env = {**os.environ, "TQDM_MININTERVAL": "1"}  # a pipe: redrawn as on a terminal
    return subprocess.run(
        [*command, "--jobs", str(jobs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = make_repo(tmp_path_factory.mktemp("progress") / "repo")
    for name, text in (("04_count", COUNT), ("05_linger", LINGER), ("06_logs", LOGS)):
        (repo / "notebooks" / f"{name}.md").write_text(text)
    write_profile(repo, "slow", {"04_count": {}, "05_linger": {}})
    write_profile(repo, "logs", {"06_logs": {}})
    return repo


@pytest.fixture(scope="module")
def slow_build(repo: Path) -> subprocess.CompletedProcess:
    """One build of ``04_count`` and ``05_linger``, two at a time."""
    return _build(repo, "slow", jobs=2)


@pytest.mark.slow
def test_the_bar_names_each_running_chapter_with_its_time_and_its_own_progress(slow_build):
    """The bar once stayed at the last finished chapter for the 30 minutes of the next one."""
    assert slow_build.returncode == 0, slow_build.stdout
    drawn = re.split(r"[\r\n]", slow_build.stdout)
    end = next(i for i, line in enumerate(drawn) if "2/2" in line)
    counting = re.compile(r"running .*04_count (\d+) s \(counting: +\d+%\|.*\| [1-7]/8 ")
    seen = [int(m[1]) for line in drawn[:end] if (m := counting.search(line))]
    assert seen and max(seen) >= 2, slow_build.stdout
    assert any(re.search(r"running 04_count \d+ s.*; 05_linger \d+ s", line) for line in drawn)


@pytest.mark.slow
def test_a_clean_build_prints_no_error(slow_build, repo: Path):
    """``[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel.`` once ended clean builds."""
    assert slow_build.returncode == 0, slow_build.stdout
    assert [line for line in slow_build.stdout.splitlines() if "ERROR" in line] == []
    assert not list((repo / "build" / "slow" / "executed").glob("*.progress*"))


@pytest.mark.slow
def test_a_kernel_error_is_still_reported(repo: Path):
    build = _build(repo, "logs", jobs=1)
    assert build.returncode == 0, build.stdout
    assert "[IPKernelApp] ERROR | a kernel error of its own" in build.stdout


@pytest.mark.slow
def test_a_busy_kernel_is_still_interrupted_and_stopped(monkeypatch: pytest.MonkeyPatch):
    """The kernel manager waits for a kernel to stop before interrupting it, not for ever."""
    monkeypatch.setattr(scheduling, "SHUTDOWN_GRACE", 0.5)

    async def shut_down_busy_kernel() -> float:
        manager = scheduling._kernel_manager()(kernel_name=scheduling.KERNEL_NAME)
        await manager.start_kernel(extra_arguments=["--IPKernelApp.log_level=ERROR"])
        client = manager.client()
        client.start_channels()
        await client.wait_for_ready(timeout=60)
        client.execute("import time; time.sleep(60)")
        await asyncio.sleep(1)
        start = time.monotonic()
        await manager.shutdown_kernel()
        client.stop_channels()
        assert not await manager.is_alive()
        return time.monotonic() - start

    assert asyncio.run(shut_down_busy_kernel()) < 10


# --------------------------------------------------------------------------- the progress line


def test_the_progress_line_is_the_bar_being_drawn_cleaned_and_cut(tmp_path: Path):
    layout = Folders(tmp_path / "build", tmp_path / "results").layout(tmp_path, "p")
    assert scheduling.last_progress(layout, "04_count") == ""  # no file: nothing, no error
    layout.executed.mkdir(parents=True)
    path = scheduling.progress_file(layout, "04_count")
    with scheduling._LastLine(path) as last_line:
        assert scheduling.last_progress(layout, "04_count") == ""
        last_line.write("a warning\n")
        assert scheduling.last_progress(layout, "04_count") == ""  # a line, not a bar
        last_line.write("\rcounting:   0%|          | 0/8")
        last_line.write("\rcounting:  50%|\x1b[32m█████\x1b[0m     | 4/8 [00:02<00:02]")
        assert scheduling.last_progress(layout, "04_count") == (
            "counting:  50%|█████     | 4/8 [00:02<00:02]"
        )
        last_line.write("\r" + " " * 40 + "\r")  # closed (leave=False): no bar
        assert scheduling.last_progress(layout, "04_count") == ""
        last_line.write("\rcounting: 100%|██████████| 8/8\n")  # closed, left on screen
        assert scheduling.last_progress(layout, "04_count") == ""
        last_line.write("\r" + "x" * 200)
        assert scheduling.last_progress(layout, "04_count", width=10) == "x" * 9 + "…"
    assert not path.exists()


def test_a_log_is_redrawn_rarely_a_terminal_every_second(monkeypatch: pytest.MonkeyPatch):
    """A bar redrawn every second fills a CI log with a line per second of the build."""
    import io

    from racer_lib.book import runner

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("TQDM_MININTERVAL", raising=False)
    assert runner.refresh_seconds(Terminal()) == runner.REFRESH_SECONDS
    assert runner.refresh_seconds(io.StringIO()) == runner.LOG_REFRESH_SECONDS
    assert runner.LOG_REFRESH_SECONDS >= 30 * runner.REFRESH_SECONDS
    monkeypatch.setenv("TQDM_MININTERVAL", "5")
    assert runner.refresh_seconds(io.StringIO()) == runner.refresh_seconds(Terminal()) == 5.0


def test_the_longest_ready_chapter_starts_first(tmp_path: Path):
    """A long chapter started last ran alone at the end of a fresh build while the other core
    idled (chapter 16 for 2.5 minutes of `make book`). The expected times are this build's last
    ones where it has them, else the registry's typical ones; a damaged record counts as none."""
    from racer_lib.book.profiles import Layout, Prepared
    from racer_lib.book.scheduling import expected_seconds, longest_first
    from racer_lib.paper import registry

    layout = Layout(tmp_path, tmp_path / "build", tmp_path / "results", tmp_path / "book")
    layout.build.mkdir()
    typical = registry.TYPICAL_SECONDS
    assert expected_seconds(layout, typical) == typical
    assert typical[registry.ROBUSTNESS] > typical[registry.DYNAMICS] > 0
    (layout.build / "timings.json").write_text('{"06_training_dynamics": 900.5, "x": "slow"}')
    expected = expected_seconds(layout, typical)
    assert expected[registry.DYNAMICS] == 900.5 and "x" not in expected
    assert expected[registry.ROBUSTNESS] == typical[registry.ROBUSTNESS]
    (layout.build / "timings.json").write_bytes(b"\xff{")
    assert expected_seconds(layout, typical) == typical
    stems = ["01_a", "04_b", "16_c", "05_d", "07_e"]
    plan = [Prepared(s, tmp_path / f"{s}.ipynb", {}, 0) for s in stems]
    times = {"16_c": 160.0, "07_e": 260.0, "05_d": 35.0}
    assert [p.stem for p in longest_first(plan, times)] == ["07_e", "16_c", "05_d", "01_a", "04_b"]


@pytest.mark.slow
def test_a_kernel_that_dies_before_it_starts_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The port race of jupyter_client (a kernel's port taken by another process's kernel
    before it binds it): the kernel dies before its first reply, nothing has run, and the runner
    starts another; the build ends as a clean one. A failure after the start is not retried."""
    import papermill

    repo = make_repo(tmp_path / "repo")
    write_profile(repo, "one", {"01_alpha": {}})
    real, calls = papermill.execute_notebook, []

    def port_taken_once(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return real(*args, **kwargs)

    monkeypatch.setattr(papermill, "execute_notebook", port_taken_once)
    assert main(["book", "build", "--root", str(repo), "--profile", "one", "--no-book",
                 "--jobs", "1"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert len(calls) == 2
    assert "notebook '01_alpha': its kernel stopped before it started" in err
    assert "starting another (2 of 3)" in err
    assert (repo / "build" / "one" / "executed" / "01_alpha.ipynb").is_file()

    def never_starts(*args, **kwargs):
        calls.append(args[0])
        raise RuntimeError("Kernel died before replying to kernel_info")

    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", never_starts)
    assert main(["book", "build", "--root", str(repo), "--profile", "one", "--no-book",
                 "--jobs", "1", "--force"]) == 2  # fmt: skip
    assert len(calls) == scheduling.KERNEL_STARTS
    assert "could not be executed: RuntimeError: Kernel died" in capsys.readouterr().err

    def dies_later(*args, **kwargs):
        calls.append(args[0])
        raise RuntimeError("Kernel died")  # mid-run: cells may have written results

    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", dies_later)
    assert main(["book", "build", "--root", str(repo), "--profile", "one", "--no-book",
                 "--jobs", "1", "--force"]) == 2  # fmt: skip
    assert len(calls) == 1
