"""Every write can fail and nothing is lost (issue 30): the k-th write of a run fails with ENOSPC
or EIO, for every k over the router store's and the execution cache's write points; the run
is then done again and must give, bit for bit, what a clean run gives (tests/faults.py)."""

from __future__ import annotations

import errno
import itertools

import pytest
import torch

from racer_lib.errors import WriteError
from racer_lib.records.io import atomic_write
from racer_lib.routing import store
from racer_lib.routing import train as tr
from tests.faults import CODES, Faults

pytestmark = pytest.mark.usefixtures("one_thread")


def _entries(root):
    """Every stored policy under ``root``: key -> its layers, history and best epoch."""
    out = {}
    for path in sorted(root.glob("??/*.pt")):
        blob = torch.load(path, weights_only=True)
        out[path.stem] = (blob["layers"], blob["history"], blob["best_epoch"])
    return out


def _same(a, b) -> bool:
    if a.keys() != b.keys():
        return False
    for key in a:
        (la, ha, ea), (lb, hb, eb) = a[key], b[key]
        layers = all(torch.equal(x, y) for x, y in zip(itertools.chain(*la), itertools.chain(*lb)))
        if not (layers and ha == hb and ea == eb):
            return False
    return True


def test_a_failed_atomic_write_names_the_file_and_keeps_the_old_one(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    with Faults(tmp_path, fail_at=2, code=errno.ENOSPC) as faults:  # 1: mkdir, 2: the tmp file
        with pytest.raises(WriteError) as info:
            atomic_write(path, lambda tmp: open(tmp, "w").write("new"))
    assert str(info.value) == f"cannot write {path}: no space left on device"
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    assert faults.failed[0] == "os.open" and path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]  # no temporary file left


def test_the_store_loses_nothing_when_any_write_fails(routing_data, tmp_path):
    """Six policies in two batches of three (a memory bound that fits three); the write of
    every point of a clean run fails in turn; the run is done again, with no fault: the store
    then holds exactly a clean run's policies, bit for bit, and each batch is recorded as it
    was first trained (a batch cut short is trained again whole, not its missing members
    alone). Before issue 30 the batch was recorded after its members were saved."""
    _, _, unit, sp = routing_data
    settings = tr.TrainSettings(epochs=2, lr=1e-3)
    configs = [tr.PolicyConfig(budget=b, seed=s) for b in (2.0, 3.0, 4.0) for s in (0, 1)]
    each = store.policy_bytes(sp["train"].x.shape[1], settings.arch, settings.batch_size,
                              sp["valid"].n)  # fmt: skip
    memory = 3 * each

    def run(root):
        result, _ = store.train_stored(
            sp["train"], sp["valid"], configs, settings, unit, store.PolicyStore(root),
            memory_bytes=memory,
        )  # fmt: skip
        return result

    clean_root = tmp_path / "clean"
    with Faults(clean_root) as counted:
        clean = run(clean_root)
    inputs = store.inputs_hash(sp["train"], sp["valid"], unit)
    batches = store.PolicyStore(clean_root).batches(inputs)
    assert sorted(len(b) for b in {id(b): b for b in batches.values()}.values()) == [3, 3]
    expected = _entries(clean_root)
    points = counted.points
    assert len(points) >= 20 and len(expected) == 6
    raised = 0
    for k, code in zip(range(1, len(points) + 1), itertools.cycle(CODES)):
        root = tmp_path / f"k{k}"
        error = None
        with Faults(root, fail_at=k, code=code) as faults:
            try:
                run(root)
            except OSError as exc:
                error = exc
        assert faults.failed is not None, k
        if error is None:  # a failure the code tolerates (mkdir of a folder that exists)
            assert faults.failed[0] in ("os.mkdir", "os.open"), faults.failed
        else:
            assert isinstance(error, WriteError), (k, faults.failed, error)
            assert str(error).startswith("cannot write ") and str(root) in str(error)
            assert "\n" not in str(error)
        raised += error is not None
        again = run(root)
        assert _same(_entries(root), expected), f"write {k} ({faults.failed}) lost a policy"
        got = store.PolicyStore(root).batches(inputs)
        assert {k: [c for _, c in b] for k, b in got.items()} == {
            k: [c for _, c in b] for k, b in batches.items()
        }, f"write {k} ({faults.failed}): a batch was not trained again whole"
        for p in range(len(configs)):
            for a, b in zip(again.policies.policy_layers(p), clean.policies.policy_layers(p)):
                assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert raised >= len(points) - 6  # all but the tolerated ones stopped the run


def test_a_chapter_output_is_written_whole_or_not_at_all(tmp_path):
    """A chapter's tables, glued values and figures (``chapter.save_table``, ``Prose``,
    ``plots.save``) go through the atomic write: a write that fails at any of its points leaves
    the earlier file byte for byte, and no partial or temporary file beside it."""
    import matplotlib.pyplot as plt

    from racer_lib.book import chapter
    from racer_lib.paper import plots

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    # the folder exists: a refused mkdir of it is no failure (Path.mkdir, exist_ok)
    files = lambda what, path: what != "os.mkdir"  # noqa: E731
    writers = {
        "t.csv": lambda path, i: chapter.save_table([{"a": i}], path, "simulated"),
        "f.png": lambda path, i: plots.save(fig, path) if i else path.write_bytes(b"old"),
    }
    for name, write in writers.items():
        path = tmp_path / name
        write(path, 0)
        before = path.read_bytes()
        with Faults(tmp_path, match=files) as counted:
            write(tmp_path / f"count-{name}", 1)
        assert len(counted.points) >= 2  # the temporary file and its rename, at least
        for k in range(1, len(counted.points) + 1):
            faults = Faults(tmp_path, fail_at=k, code=CODES[k % 2], match=files)
            with faults, pytest.raises(WriteError):
                write(path, 1)
            assert path.read_bytes() == before, (name, k)
            left = {p.name for p in tmp_path.iterdir()}
            assert left == {"t.csv", "f.png", "count-t.csv", "count-f.png"} & (left | {name})
    plt.close(fig)
