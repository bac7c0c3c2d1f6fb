"""The README's "Training a router on your own records" runs as written (issue 29): its Python
blocks (in order, one namespace) and its shell block, verbatim, on a small simulated records
file named as the README names it, so the README cannot drift from the library."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from racer_lib import cli
from racer_lib.routing import RacerRouter

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Training a router on your own records"


def _blocks(language: str) -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder holding ``my_records.parquet`` (simulated, train / valid / test splits, with
    embeddings beside) and ``.venv`` pointing at this interpreter's environment."""
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--scale", "0.03", "--dim", "16"]
    assert cli.main([*argv, "--out", str(tmp_path / "my_records.parquet")]) == 0
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_section_has_its_examples():
    assert len(_blocks("python")) == 2 and len(_blocks("bash")) == 1
    assert "RacerRouter(" in _blocks("python")[0]


def test_the_python_examples_train_save_load_and_predict(workdir, capsys):
    space: dict = {}
    for code in _blocks("python"):
        exec(compile(code, "README.md", "exec"), space)
    router, modes = space["router"], space["modes"]
    assert isinstance(router, RacerRouter) and router.budget == 3.0
    assert (workdir / "router.pt").is_file()
    assert modes.shape == (len(space["records"]),) and set(np.unique(modes)) <= {0, 1}
    # what it printed: the held-out accuracy (0 to 1) and cost (All-Instruct = about 1)
    accuracy, cost = map(float, capsys.readouterr().out.split())
    assert 0 < accuracy <= 1 and 0.5 < cost
    np.testing.assert_array_equal(router.predict(space["X"]), modes)
    # the baselines' example: one 0/1 decision per pair
    assert space["decisions"].shape == modes.shape


def test_the_shell_example_runs_command_by_command(workdir):
    (script,) = _blocks("bash")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=workdir, env=env, text=True,
        capture_output=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "wrote router.pt" in done.stdout
    assert "router minus Random at its rate" in done.stdout
    assert "trained_on.records: my_records.parquet" in done.stdout
    assert (workdir / "my_records.routes.csv").is_file()
