"""`make test` runs the suite on two processes (pytest-xdist, ``--dist loadgroup``); the hook in
tests/conftest.py puts every test that reads the session's smoke build in one group, so that
the build (minutes) runs in one process only. Checked here on a small suite of the same shape:
a session fixture named ``smoke``, read directly and through a module fixture, by tests in
several files beside tests that do not read it."""

import importlib.util
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

SUITE_CONFTEST = f"""
import importlib.util
import os

import pytest

_spec = importlib.util.spec_from_file_location("racer_tests_conftest", {str(CONFTEST)!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
pytest_collection_modifyitems = _module.pytest_collection_modifyitems  # the hook under test


@pytest.fixture(scope="session")
def smoke():
    with open("made.txt", "a") as handle:  # one line per process that builds it
        handle.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
    return "built"


@pytest.fixture(scope="module")
def derived(smoke):
    return smoke
"""

SUITE_TEST = """
import time


def test_reads_it(smoke):
    time.sleep(0.2)
    assert smoke == "built"


def test_reads_it_through_another_fixture(derived):
    time.sleep(0.2)
    assert derived == "built"


def test_does_not_read_it():
    time.sleep(0.2)
"""


def test_the_smoke_build_runs_in_one_process_of_two(tmp_path):
    assert importlib.util.find_spec("xdist"), "pytest-xdist is a test requirement (pyproject)"
    (tmp_path / "conftest.py").write_text(SUITE_CONFTEST)
    for k in range(4):
        (tmp_path / f"test_part{k}.py").write_text(SUITE_TEST)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "12 passed" in run.stdout
    built_by = (tmp_path / "made.txt").read_text().split()
    assert len(built_by) == 1 and built_by[0].startswith("gw"), built_by
