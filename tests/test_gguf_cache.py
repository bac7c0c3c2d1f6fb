"""The model cache of GGUF judges (racer_lib.judging.gguf): a conversion is made once, checked
before each reuse, and a damaged or half-written one is never used.

The conversion itself (transformers de-quantizing SmolLM2's GGUF, a minute) is replaced here by
one that writes a few files and counts its calls; tests/test_judging.py's SmolLM2 test (CI)
checks that a model loaded through the cache generates what the GGUF loaded directly does.
"""

import errno
import json

import pytest

from racer_lib.errors import WriteError
from racer_lib.judging import gguf


@pytest.fixture
def conversions(monkeypatch):
    """Replace the conversion by one writing two files; return the list of its outputs."""
    made = []

    def convert(source, dtype, out):
        made.append(out)
        (out / "model.safetensors").write_bytes(source.read_bytes()[::-1])
        (out / "config.json").write_text(json.dumps({"dtype": dtype}))
        files = {p.name: gguf.sources.sha256sum(p) for p in sorted(out.iterdir())}
        manifest = {"gguf": source.name, "dtype": dtype, "loaded_dtype": dtype, "files": files}
        (out / gguf.MANIFEST).write_text(json.dumps(manifest))

    monkeypatch.setattr(gguf, "_convert", convert)
    return made


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "judge.Q4.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    return path


def test_a_conversion_is_made_once_and_reused(model, tmp_path, conversions):
    folder, dtype = gguf.cached_conversion(model, "float32", tmp_path / "cache")
    again, _ = gguf.cached_conversion(model, "float32", tmp_path / "cache")
    assert again == folder and dtype == "float32" and len(conversions) == 1
    assert folder.parent == tmp_path / "cache" and folder.name.startswith("judge.Q4-")
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]  # no temporary left


def test_another_file_or_dtype_is_another_conversion(model, tmp_path, conversions):
    first, _ = gguf.cached_conversion(model, "float32", tmp_path / "cache")
    other, _ = gguf.cached_conversion(model, "bfloat16", tmp_path / "cache")
    model.write_bytes(model.read_bytes() + b"\0")  # same name, other bytes
    third, _ = gguf.cached_conversion(model, "float32", tmp_path / "cache")
    assert len({first, other, third}) == 3 and len(conversions) == 3


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda f: (f / "model.safetensors").write_bytes(b"\0" * 4), "digest mismatch"),
        (lambda f: (f / "config.json").unlink(), "config.json: No such file"),
        (lambda f: (f / gguf.MANIFEST).write_text("{trunc"), "manifest unreadable"),
        (lambda f: (f / gguf.MANIFEST).unlink(), "manifest unreadable"),
    ],
    ids=["weights changed", "file missing", "manifest truncated", "no manifest"],
)
def test_a_damaged_conversion_is_named_and_made_again(model, tmp_path, conversions, damage, why):
    folder, _ = gguf.cached_conversion(model, "float32", tmp_path / "cache")
    sound = {p.name: p.read_bytes() for p in folder.iterdir()}
    damage(folder)
    with pytest.warns(gguf.ModelCacheWarning, match="damaged") as caught:
        again, _ = gguf.cached_conversion(model, "float32", tmp_path / "cache")
    message = str(caught[0].message)
    assert str(folder) in message and why in message and "converting it again" in message
    assert again == folder and len(conversions) == 2
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == sound


def test_a_conversion_that_cannot_be_written_leaves_nothing(model, tmp_path, conversions,
                                                             monkeypatch):  # fmt: skip
    def full(source, dtype, out):
        (out / "model.safetensors").write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gguf, "_convert", full)
    with pytest.raises(WriteError, match="cannot write .*judge.Q4-.*: no space left on device"):
        gguf.cached_conversion(model, "float32", tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # the half-written folder is gone


def test_two_processes_converting_at_once_end_with_one_sound_folder(model, tmp_path,
                                                                     conversions):  # fmt: skip
    """The other process renames its conversion into place while this one converts: this one
    keeps the other's (sound) folder and drops its own."""
    convert = gguf._convert
    cache = tmp_path / "cache"

    def racing(source, dtype, out):
        convert(source, dtype, out)
        if len(conversions) == 1:  # the other process, done first
            gguf.cached_conversion(source, dtype, cache)

    gguf._convert = racing
    try:
        folder, _ = gguf.cached_conversion(model, "float32", cache)
    finally:
        gguf._convert = convert
    assert len(conversions) == 2 and [p.name for p in cache.iterdir()] == [folder.name]
    assert gguf._damage(folder) is None


def test_the_default_cache_follows_racer_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("RACER_CACHE_DIR", str(tmp_path))
    assert gguf.default_cache_dir() == tmp_path / "models"


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert done.returncode == 0
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_conversion_killed_part_way_is_swept_by_the_next(tmp_path, model, conversions):
    """A killed conversion leaves its temporary folder (``.<folder>.tmp-<host>-<pid>-...``);
    the next conversion into the cache removes it, and an earlier version's (no owner in its
    name) once it is an hour old; a running conversion's folder, another machine's recent one
    and the sound conversions are left alone."""
    import os
    import time

    cache = tmp_path / "models"
    cache.mkdir()
    host = gguf._host()
    killed = cache / f".judge.Q4-0123.tmp-{host}-{_dead_pid()}-ab12cd_3"
    running = cache / f".judge.Q4-0123.tmp-{host}-{os.getpid()}-zz99"
    other = cache / ".judge.Q4-0123.tmp-elsewhere-1-abc"
    old = cache / ".judge.Q4-0123.k3j4h5g6"
    recent = cache / ".judge.Q4-4567.q1w2e3r4"
    sound = cache / "judge.Q4-0123"
    for folder in (killed, running, other, old, recent, sound):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"x" * 1000)
    hours_ago = time.time() - 2 * gguf.STALE_SECONDS
    for folder in (old, sound, running):
        os.utime(folder, (hours_ago, hours_ago))
    folder, _ = gguf.cached_conversion(model, cache_dir=cache)
    left = sorted(p.name for p in cache.iterdir())
    assert left == sorted(p.name for p in (running, other, recent, sound, folder)), left
    later = time.time() + 2 * gguf.STALE_SECONDS  # by their age: the ownerless ones only
    assert sorted(gguf.sweep_stale(cache, now=later)) == sorted([other, recent])
    assert running.is_dir() and sound.is_dir() and folder.is_dir()
