"""Fixtures shared by several test files: the smoke run, and small routing data."""

import os
import shutil
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

from racer_lib.book import runner
from racer_lib.book.profiles import Folders
from racer_lib.records.simulate import simulate
from racer_lib.routing import train as tr

ROOT = Path(__file__).resolve().parents[1]


#: Examples per property-based test of the file readers (tests/test_reader_properties.py): a
#: few thousand in CI (`make test TEST_ALL=1`, which .ci/run runs: make exports TEST_ALL to
#: pytest; or CI set, as CI services do), a few hundred in `make test`. HYPOTHESIS_PROFILE
#: names another profile. tests/test_cli_fuzz.py sets its own counts from the profile.
HYPOTHESIS_PROFILES = {"ci": 3000, "dev": 200}
for _name, _examples in HYPOTHESIS_PROFILES.items():
    settings.register_profile(
        _name,
        max_examples=_examples,
        deadline=None,  # a shared machine's pauses are no failure
        suppress_health_check=[HealthCheck.too_slow],
    )
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE")
    or ("ci" if os.environ.get("TEST_ALL") or os.environ.get("CI") else "dev")
)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups in its own hook
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test``), every test that reads the session's smoke build runs
    in one process (``--dist loadgroup``), so that the build (minutes) runs once."""
    for item in items:
        if "smoke" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("smoke"))


SMOKE_JOBS = 2  # notebooks of the session's smoke build run at a time
#: A folder to keep the smoke build's HTML in (``.ci/run`` runs ``make book-check`` on it).
ENV_KEEP_HTML = "RACER_SMOKE_HTML"
MIRROR = ROOT.parent / "shared" / "data"  # the data mirror beside a checkout (CI has it)


def smoke_profile() -> str:
    """``full-smoke`` (smoke plus the real-data chapters) when the data files are at hand.

    The files are read from ``RACER_DATA_DIR``, else from the mirror beside the checkout (then
    exported, so that the notebooks' kernels see it too), else from the download cache. Without
    them the session builds ``smoke`` and the real-data chapters' tests skip.
    """
    import os

    from racer_lib.records import sources as data

    if data.data_dir() is None and MIRROR.is_dir():
        os.environ[data.ENV_DATA_DIR] = str(MIRROR.resolve())
    files = [f for f in data.load_manifest().files if f.source in ("llmbar", "judgebench")]
    return "smoke" if data.check(files) else "full-smoke"


@pytest.fixture(scope="session")
def smoke(tmp_path_factory):
    """The smoke build run once per session: papermill runs every notebook, two at a time
    (test_parallel_runs.py compares it with a run of one at a time), then the book."""
    out = tmp_path_factory.mktemp("smoke")
    result = runner.run_profile(
        smoke_profile(),
        root=ROOT,
        folders=Folders(out / "build", out / "results", out / "book"),
        jobs=SMOKE_JOBS,
    )
    keep = os.environ.get(ENV_KEEP_HTML)
    if keep and result.html_index is not None:  # .ci/run checks this book in Chromium after
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(Path(result.html_index).parent, keep)
    return result, out


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: thread hand-offs cost more than they save (and a shared machine is worse)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def routing_data():
    """Small simulated training data: records, embeddings, cost unit and train/valid splits."""
    records, emb = simulate("qwen3-4b", "training_mix", dim=16, scale=0.03)
    unit, sp = tr.splits(records, emb)
    return records, emb, unit, sp


def execute_notebook(src, out, **options) -> None:
    """``papermill.execute_notebook(src, out, **options)`` with a quiet python3 kernel, started
    again when the kernel dies before its first reply: two kernels starting at once (the other
    xdist worker's, say) can take each other's TCP port, as the runner knows
    (:func:`racer_lib.book.scheduling._with_kernel_starts`)."""
    import functools

    import papermill

    from racer_lib.book import scheduling

    options = {
        "kernel_name": "python3",
        "cwd": ROOT,
        "progress_bar": False,
        "extra_arguments": ["--IPKernelApp.log_level=ERROR"],
        **options,
    }
    run = functools.partial(papermill.execute_notebook, src, out, **options)
    scheduling._with_kernel_starts(run, Path(src).stem)


def notebook_parameters(ipynb):
    """The parameters an executed notebook ran with: its defaults, then papermill's injection."""
    import nbformat

    nb = nbformat.read(ipynb, as_version=4)
    space = {}
    for tag in ("parameters", "injected-parameters"):
        for cell in nb.cells:
            if cell.cell_type == "code" and tag in cell.metadata.get("tags", []):
                exec(cell.source, space)
    return {k: v for k, v in space.items() if not k.startswith("__")}


def printed(result, stem: str) -> str:
    """Everything a chapter printed: the stream outputs of its executed notebook in ``result``
    (a runner result)."""
    import nbformat

    path = next(p for p in result.executed if Path(p).name == f"{stem}.ipynb")
    nb = nbformat.read(path, as_version=4)
    return "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )


def real_chapter(smoke, stem: str, needs: str):
    """``(results folder, parameters, executed notebook)`` of a real-data chapter in the smoke run.

    Skips (naming what is missing) when the session built ``smoke`` rather than ``full-smoke``.
    """
    result, _ = smoke
    if stem not in result.results_dirs:
        pytest.skip(
            f"the session's smoke run did not run {stem}: it runs only in the profile "
            f"full-smoke, which needs {needs} (RACER_DATA_DIR or the cache)"
        )
    executed = [Path(p) for p in result.executed if Path(p).name == f"{stem}.ipynb"]
    assert executed, f"no executed notebook of {stem} among {result.executed}"
    return Path(result.results_dirs[stem]), notebook_parameters(executed[0]), executed[0]


def release_table(results: Path, name: str):
    """A CSV of a real-data chapter: ``provenance`` first, every row ``release``."""
    import pandas as pd

    table = pd.read_csv(results / name)
    assert list(table.columns)[0] == "provenance", name
    assert set(table["provenance"]) == {"release"}, name
    return table
