"""A full disk while a router is saved is named (issue 41): PyTorch's writer swallows the
``OSError`` of the write that failed and raises ``RuntimeError: [enforce fail at
inline_container.cc:...] unexpected pos ...``; :func:`racer_lib.routing.policy.write_torch`
raises the ``OSError`` (errno 28, the file its filename) instead, and ``racer router train``
prints ``cannot write PATH: no space left on device`` in one line."""

from __future__ import annotations

import errno
import io

import pytest
import torch

from racer_lib import cli
from racer_lib.errors import WriteError
from racer_lib.routing import policy
from racer_lib.routing.policy import Router

FAST = ["--arch", "linear", "--epochs", "2", "--seeds", "1", "-q"]


class _Filling(io.FileIO):
    """A file on a disk with ``room`` bytes left: a write past them raises ENOSPC."""

    room = 0

    def write(self, data) -> int:
        if len(data) > _Filling.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        _Filling.room -= len(data)
        return super().write(data)


@pytest.fixture
def disk_full_after(monkeypatch: pytest.MonkeyPatch):
    """``disk_full_after(n, buffered=False)``: from now on, a file
    :mod:`racer_lib.routing.policy` opens for writing takes ``n`` bytes, then every write fails
    with ENOSPC. Unbuffered, closing the file writes nothing more, so nothing but the failed
    write itself tells (the case PyTorch's ``RuntimeError`` reached the user); buffered, as
    ``open`` gives it, closing it fails too when bytes are left in its buffer."""
    real_open = open

    def full_after(room: int, buffered: bool = False) -> None:
        def opener(path, mode="r", *args, **kwargs):
            if "w" in mode and "b" in mode:
                raw = _Filling(path, "w")
                return io.BufferedWriter(raw) if buffered else raw
            return real_open(path, mode, *args, **kwargs)

        _Filling.room = room
        monkeypatch.setattr(policy, "open", opener, raising=False)

    return full_after


def a_router() -> Router:
    layers = [(torch.randn(4, 64), torch.zeros(4)), (torch.randn(1, 4), torch.zeros(1))]
    return Router(layers, "mlp", 64, "test-64d", tokens_per_unit=100.0, budget=2.0)


@pytest.mark.parametrize("buffered", [False, True], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("room", [0, 100, 4096])
def test_write_torch_raises_the_write_error_not_pytorchs(disk_full_after, tmp_path, room, buffered):
    path = tmp_path / "blob.pt"
    disk_full_after(room, buffered)
    with pytest.raises(OSError) as info:
        policy.write_torch({"x": torch.zeros(20_000)}, path)
    assert type(info.value) is OSError  # not RuntimeError, not a subclass of it
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    # what PyTorch raised (its RuntimeError, or the write's error without a file) is the cause
    assert isinstance(info.value.__cause__, (RuntimeError, OSError))


def test_a_runtime_error_of_pytorch_alone_is_left_as_it_is(tmp_path, monkeypatch):
    def broken(blob, stream):
        raise RuntimeError("pytorch's own")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(RuntimeError, match="pytorch's own"):
        policy.write_torch({}, tmp_path / "blob.pt")


def test_saving_a_router_on_a_full_disk_keeps_the_old_file(disk_full_after, tmp_path):
    path = a_router().save(tmp_path / "router.pt")
    before = path.read_bytes()
    disk_full_after(200)
    with pytest.raises(WriteError) as info:
        a_router().save(path)
    assert str(info.value) == f"cannot write {path}: no space left on device"
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["router.pt"]  # no temporary left


def test_racer_router_train_says_so_in_one_line(disk_full_after, tmp_path, capsys):
    records = tmp_path / "mix.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--scale", "0.03", "--dim", "8"]
    assert cli.main([*argv, "--out", str(records)]) == 0
    out = tmp_path / "router.pt"
    capsys.readouterr()
    disk_full_after(300)
    status = cli.main(["router", "train", str(records), "--budget", "3", "--out", str(out), *FAST])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert err == [f"error: cannot write {out}: no space left on device"]
    assert not out.exists()
