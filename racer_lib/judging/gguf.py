"""A GGUF judge de-quantized once and kept: the transformers backend's model cache.

transformers reads a GGUF file three times to load it (configuration, tokenizer, weights) and
de-quantizes every tensor; for SmolLM2-135M that is about 25 s on a CPU, against a second to
load the same model from safetensors. The first load of a GGUF file therefore stores what it
produced, the de-quantized weights (safetensors), the configuration, the generation
configuration and the tokenizer, as a transformers folder in the cache,
``<cache>/models/<gguf stem>-<key>``, where ``key`` digests the GGUF file's bytes, the dtype
and the transformers version. Every later load reads that folder.

The folder is an artifact reused across runs, so it is checked before each use: its manifest
(``racer-gguf.json``, written last) lists every file with its sha256, and a folder whose
manifest is missing or unreadable, or whose files differ from it, is named in a
:class:`ModelCacheWarning` and converted again. It is written in a temporary folder beside it
and renamed into place: a conversion cut short (a full disk, a kill) leaves no folder that looks
complete, and two processes converting the same file at once both end with one sound folder.

A conversion killed part-way (a kill, a power cut) cannot remove its temporary folder; the next
conversion into the cache sweeps it (:func:`sweep_stale`): a temporary folder whose process is
gone from this machine, or any older than :data:`STALE_SECONDS`. The temporary folder's name says
whose it is (``.<folder>.tmp-<host>-<pid>-<random>``).

The cache is ``$RACER_CACHE_DIR/models``, else ``~/.cache/racer-companion/models``
(:func:`racer_lib.records.sources.cache_dir`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
import warnings
from pathlib import Path

from racer_lib.errors import WriteError
from racer_lib.records import sources

__all__ = [
    "MANIFEST",
    "STALE_SECONDS",
    "ModelCacheWarning",
    "cached_conversion",
    "default_cache_dir",
    "sweep_stale",
]

MANIFEST = "racer-gguf.json"
#: A temporary conversion folder older than this (seconds) is swept whoever made it: a
#: conversion takes a minute or so, and an hour-old one was cut short.
STALE_SECONDS = 3600.0
#: A temporary conversion folder: ``.<folder>.tmp-<host>-<pid>-<random>`` (this version), or
#: ``.<folder>.<random>`` (an earlier one, without its owner: swept by age only).
_TEMPORARY = re.compile(r"\..+\.(?:tmp-(?P<host>.*)-(?P<pid>\d+)-)?[a-z0-9_]+")


class ModelCacheWarning(UserWarning):
    """A stored GGUF conversion was damaged and is converted again (the message names it)."""


def default_cache_dir() -> Path:
    """``$RACER_CACHE_DIR/models``, else ``~/.cache/racer-companion/models``."""
    return sources.cache_dir() / "models"


def _key(gguf: Path, dtype: str) -> str:
    import transformers

    blob = json.dumps([sources.sha256sum(gguf), dtype, transformers.__version__])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST).read_text())


def _damage(folder: Path) -> str | None:
    """Why ``folder`` is not a sound conversion (``None``: it is)."""
    try:
        manifest = _manifest(folder)
        files, _ = dict(manifest["files"]), str(manifest["loaded_dtype"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"manifest unreadable ({type(exc).__name__})"
    for name, digest in files.items():
        try:
            if sources.sha256sum(folder / name) != digest:
                return f"{name}: digest mismatch"
        except OSError as exc:
            return f"{name}: {exc.strerror or exc}"
    return None


def _host() -> str:
    """This machine's name as a temporary folder's name holds it (letters, digits, dots)."""
    return re.sub(r"[^A-Za-z0-9.]", "", socket.gethostname()) or "host"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def sweep_stale(root: str | os.PathLike, now: float | None = None) -> list[Path]:
    """Remove the temporary conversion folders under the model cache ``root`` that no running
    conversion owns: one of this machine whose process (named in it) is gone, one of another
    machine (a shared cache) or of an earlier version older than :data:`STALE_SECONDS` (by its
    modification time); return those removed. A sound conversion (a folder without the
    leading dot) and a running conversion's folder are left alone; one that cannot be removed
    is left for the next sweep."""
    now = time.time() if now is None else now
    swept = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return swept
    for entry in entries:
        found = _TEMPORARY.fullmatch(entry.name)
        if found is None or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if found["pid"] is not None and found["host"] == _host():  # this machine's: ask it
            stale = not _alive(int(found["pid"]))
        else:  # another machine's (a shared cache), or an earlier version's: by its age
            stale = age > STALE_SECONDS
        if stale:
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.lexists(entry.path):
                swept.append(Path(entry.path))
    return swept


def _convert(gguf: Path, dtype: str, out: Path) -> None:
    """Load ``gguf`` with transformers (de-quantized to ``dtype``) and save it in ``out``."""
    import safetensors.torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=dtype)
    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):  # the weights saved are plain tensors
        del config.quantization_config
    config.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    safetensors.torch.save_model(model, str(out / "model.safetensors"))
    files = {p.name: sources.sha256sum(p) for p in sorted(out.iterdir()) if p.is_file()}
    loaded = str(model.dtype).removeprefix("torch.")  # what "auto" became, say
    manifest = {"gguf": gguf.name, "dtype": dtype, "loaded_dtype": loaded, "files": files}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))


def cached_conversion(
    gguf: str | os.PathLike, dtype: str = "float32", cache_dir: str | os.PathLike | None = None
) -> tuple[Path, str]:
    """``(folder, dtype)``: the transformers folder holding ``gguf`` de-quantized to ``dtype``
    (the cache's when it is sound, else converted now; a damaged one is named in a
    :class:`ModelCacheWarning`) and the dtype its weights have (what ``"auto"`` became).
    A :class:`~racer_lib.errors.WriteError` names the folder a conversion could not write."""
    gguf = Path(gguf)
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    folder = root / f"{gguf.stem}-{_key(gguf, dtype)}"
    damaged = folder.is_dir()
    if damaged:
        why = _damage(folder)
        if why is None:
            return folder, _manifest(folder)["loaded_dtype"]
        warnings.warn(
            ModelCacheWarning(f"{folder}: stored conversion of {gguf.name} is damaged ({why}); "
                              "converting it again"),
            stacklevel=2,
        )  # fmt: skip
    try:
        root.mkdir(parents=True, exist_ok=True)
        sweep_stale(root)  # conversions killed part-way
        owner = f"tmp-{_host()}-{os.getpid()}-"
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.{owner}", dir=root))
    except OSError as exc:
        raise WriteError(root, exc) from exc
    try:
        _convert(gguf, dtype, tmp)
        if damaged:  # never another process's conversion, renamed into place meanwhile
            shutil.rmtree(folder, ignore_errors=True)
        try:
            tmp.rename(folder)
        except OSError:
            if _damage(folder) is not None:  # not another process's sound conversion
                raise
    except OSError as exc:
        raise WriteError(folder, exc) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder, _manifest(folder)["loaded_dtype"]
