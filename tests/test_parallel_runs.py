"""Chapters in parallel and the execution cache, on the smoke profile (issue 13's acceptance).

The session's smoke build (conftest.py) runs two notebooks at a time. Here the same profile runs
again, one notebook at a time, into its own folders: every CSV must be byte for byte the same.
Then that build is run again (every chapter reused), and once more after one parameter of one
chapter changed in its profile (only that chapter and the chapters reading it run).
"""

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import SMOKE_JOBS, smoke_profile

from racer_lib.book import profiles, runner, scheduling
from racer_lib.paper import registry

ROOT = Path(__file__).resolve().parents[1]
# A second smoke build, three minutes on two cores: CI runs it (make test TEST_ALL=1), make test
# alone does not (issue 24: the suite inside ten minutes).
pytestmark = [pytest.mark.slow, pytest.mark.ci_only]

# Columns that are wall-clock measurements, not results: left out of the comparison.
TIMINGS = {("02_judging", "run.csv"): ["seconds"]}
CHANGED = registry.REASONING  # its seed changes in the last test; 03 and 01 read it


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    out = tmp_path_factory.mktemp("sequential")
    dirs = {"folders": profiles.Folders(out / "build", out / "results")}
    result = runner.run_profile(smoke_profile(), root=ROOT, build_book=False, jobs=1, **dirs)
    return result, dirs


def _csvs(results_dir: Path) -> dict[str, Path]:
    return {p.relative_to(results_dir).as_posix(): p for p in sorted(results_dir.rglob("*.csv"))}


def test_parallel_and_sequential_runs_write_the_same_csvs(smoke, sequential):
    parallel, _ = smoke
    one_at_a_time, _ = sequential
    assert parallel.jobs == SMOKE_JOBS >= 2 and one_at_a_time.jobs == 1
    assert parallel.results_dirs.keys() == one_at_a_time.results_dirs.keys()
    compared = 0
    for stem, folder in parallel.results_dirs.items():
        ours, theirs = _csvs(folder), _csvs(one_at_a_time.results_dirs[stem])
        assert ours.keys() == theirs.keys(), stem
        for name, path in ours.items():
            drop = TIMINGS.get((stem, name))
            if drop:
                a, b = (pd.read_csv(p).drop(columns=drop) for p in (path, theirs[name]))
                pd.testing.assert_frame_equal(a, b, check_exact=True, obj=f"{stem}/{name}")
            else:
                assert path.read_bytes() == theirs[name].read_bytes(), f"{stem}/{name}"
            compared += 1
    assert compared >= 40


def test_a_second_run_reuses_every_chapter(sequential):
    first, dirs = sequential
    again = runner.run_profile(first.profile, root=ROOT, build_book=False, jobs=1, **dirs)
    assert again.seconds == {}  # nothing executed
    ran = [stem for stem in first.results_dirs if stem not in first.unavailable]
    assert again.reused == ran


def test_a_changed_parameter_reruns_that_chapter_and_its_readers(sequential, tmp_path):
    first, dirs = sequential
    # The same repository with one parameter of one chapter changed in the profile file.
    root = tmp_path / "repo"
    root.mkdir()
    for entry in ROOT.iterdir():
        if entry.name != "profiles":
            (root / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "profiles", root / "profiles")
    smoke_file = root / "profiles" / "smoke.yaml"
    profile = yaml.safe_load(smoke_file.read_text())
    profile["notebooks"][CHANGED]["seed"] += 1
    smoke_file.write_text(yaml.safe_dump(profile, sort_keys=False))

    again = runner.run_profile(first.profile, root=root, build_book=False, jobs=1, **dirs)
    readers = [
        stem
        for stem in first.results_dirs
        if CHANGED in scheduling.chapter_reads(stem, profiles.load_profile(first.profile, ROOT))
    ]
    assert {registry.MOTIVATION, registry.REPORT} <= set(readers)
    assert list(again.seconds) == [CHANGED, *readers]
    assert set(again.reused) == set(first.results_dirs) - {CHANGED, *readers} - set(
        first.unavailable
    )
