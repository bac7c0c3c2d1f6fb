"""A write that fails inside a chapter of the smoke build loses nothing (issue 30): sampled
write points of the notebooks' kernels (tests/kernel_faults/sitecustomize.py) fail with ENOSPC
or EIO; the build is then run again and every CSV is byte-identical, every stored router
tensor-identical, to the session's clean smoke build. CI only: each point runs its chapter
twice."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest
import torch

from racer_lib.book import runner
from racer_lib.book.profiles import Folders
from tests.conftest import ROOT, smoke_profile

pytestmark = [pytest.mark.slow, pytest.mark.ci_only]
SITE = Path(__file__).parent / "kernel_faults"
#: The chapters sampled, with the share of each one's write points at which a write fails
#: (0: its first, 1: its last): 10 points over the router store (07 saves its routers there),
#: result tables and figures, and a saved router file (17).
SAMPLE = {
    "07_budget_frontier": (0.0, 0.5, 1.0),
    "09_beta_sensitivity": (0.25, 0.75),
    "17_your_own_judge": (0.1, 0.6),
    "03_motivation_and_benchmarks": (0.0, 0.5, 1.0),
}


def _tables(results: Path) -> dict:
    return {p.relative_to(results): p.read_bytes() for p in sorted(results.rglob("*.csv"))}


def _routers(store: Path) -> dict:
    out = {}
    for path in sorted(store.glob("??/*.pt")):
        blob = torch.load(path, weights_only=True)
        out[path.stem] = [t for layer in blob["layers"] for t in layer]
    return out


def _run(copy: Path, monkeypatch, spec: str | None, **options):
    if spec is None:
        monkeypatch.delenv("RACER_TEST_WRITE_FAULT", raising=False)
    else:
        monkeypatch.setenv("RACER_TEST_WRITE_FAULT", spec)
    folders = Folders(copy / "build", copy / "results", copy / "book")
    return runner.run_profile(
        smoke_profile(), root=ROOT, folders=folders, build_book=False, jobs=1, **options
    )


@pytest.mark.parametrize("stem", list(SAMPLE))
def test_a_write_failing_inside_a_chapter_loses_nothing(smoke, tmp_path, monkeypatch, stem):
    """The session's build is copied; the chapter runs once there to count its write points
    (under the copy), then, for each sampled point, once with that write failing (the run
    stops, naming the chapter) and once more without a fault: its tables and the router store
    must be the clean build's."""
    _, clean = smoke
    if stem not in runner.load_profile(smoke_profile(), ROOT).notebooks:
        pytest.skip(f"{stem} is not in {smoke_profile()}")
    tables = _tables(clean / "results" / stem)
    routers = _routers(clean / "build" / "policies")
    monkeypatch.setenv("PYTHONPATH", f"{SITE}:{ROOT}")
    copy = tmp_path / "copy"
    shutil.copytree(clean / "build", copy / "build")
    shutil.copytree(clean / "results", copy / "results")
    log = tmp_path / "count.log"
    _run(copy, monkeypatch, f"0:0:{copy}:{log}", only=[stem], force=True)  # count the points
    points = log.read_text().splitlines()
    # a folder made where it exists (Path.mkdir(exist_ok=True)) swallows the error: not a point
    # that can stop the chapter
    writes = [k for k, point in enumerate(points, 1) if not point.startswith("os.mkdir")]
    assert len(writes) >= 3, points
    for i, share in enumerate(SAMPLE[stem]):
        k = writes[round(share * (len(writes) - 1))]
        code = (errno.ENOSPC, errno.EIO)[i % 2]
        fired = tmp_path / f"fired{k}.log"
        with pytest.raises(runner.PipelineError):
            _run(copy, monkeypatch, f"{k}:{code}:{copy}:{fired}", only=[stem], force=True)
        after = fired.read_text().splitlines()[k - 1 :]
        assert after, f"write {k} was not reached"
        # after the failed write nothing is written but the removal of its temporary file
        # (racer_lib.records.io.atomic_write cleans up after a failed write)
        cleanup = [p for p in after[1:] if not (p.startswith("os.") and p.endswith(".tmp"))]
        assert not cleanup and all("remove" in p or "unlink" in p for p in after[1:]), (
            f"write {k} did not stop the chapter: {after[1:4]}"
        )
        _run(copy, monkeypatch, None, only=[stem])  # its key is gone: it runs again
        what = f"{stem}, write {k} ({points[k - 1]})"
        assert _tables(copy / "results" / stem) == tables, f"{what}: a CSV differs"
        got = _routers(copy / "build" / "policies")
        assert got.keys() == routers.keys(), f"{what}: the store differs"
        same = [all(torch.equal(a, b) for a, b in zip(got[key], routers[key])) for key in got]
        assert all(same), f"{what}: a router differs"
