"""``racer`` ends quietly when the reader of its output has gone (``racer data list | head -1``:
no ``BrokenPipeError`` traceback, exit 141, as a command ended by SIGPIPE) and on Ctrl-C prints
one line, ``interrupted``, and exits 130, wherever the interrupt lands."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from racer_lib import cli

ROOT = Path(__file__).resolve().parents[1]
RACER = [sys.executable, "-m", "racer_lib"]


def test_a_reader_that_has_gone_ends_racer_quietly() -> None:
    """``racer data list`` (25 KB of lines) into a pipe whose reader closed it at once."""
    child = subprocess.Popen(
        [*RACER, "data", "list"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    child.stdout.close()  # before the child writes: `head -1` long gone
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == cli.BROKEN_PIPE
    assert err == ""  # no traceback, no "Exception ignored" at exit


def test_racer_data_list_into_head_prints_one_line_and_nothing_else() -> None:
    """Through a shell, as a user types it."""
    done = subprocess.run(
        f"{' '.join(RACER)} data list | head -1",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert len(done.stdout.splitlines()) == 1 and done.stderr == ""


def test_ctrl_c_while_a_command_runs_is_one_line_and_130(tmp_path: Path) -> None:
    records = tmp_path / "mix.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--scale", "0.03", "--dim", "8"]
    assert cli.main([*argv, "--out", str(records)]) == 0
    train = ["router", "train", str(records), "--budget", "3", "--out", str(tmp_path / "r.pt")]
    child = subprocess.Popen(
        [*RACER, *train, "--epochs", "1000000", "--arch", "linear", "-q"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # as a terminal's Ctrl-C finds it, even when this test runs in a background job (whose
        # children start with SIGINT ignored, and Python then installs no handler for it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert child.stdout.readline().startswith("training on ")  # training has begun
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=60) == cli.INTERRUPTED
    finally:
        child.kill()
        child.wait()
    assert child.stderr.read().splitlines() == ["interrupted"]
    assert not (tmp_path / "r.pt").exists()


def test_ctrl_c_while_the_command_line_is_read_is_one_line_too(monkeypatch, capsys) -> None:
    """Declaring a noun's arguments may import torch (seconds): Ctrl-C there too."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["router", "train", "x.parquet"]) == cli.INTERRUPTED
    assert capsys.readouterr().err == "interrupted\n"
