"""Write faults on demand: the k-th write of a run fails with ENOSPC or EIO, as SQLite's tests
fail the k-th I/O call (https://sqlite.org/testing.html#i_o_error_testing).

A *write point* is a call that creates or changes something on disk under a folder: a file
opened for writing (``open``, ``io.open``, ``os.open`` with a write flag: mkstemp and filelock
go through it), ``os.replace``/``os.rename`` (the commit of an atomic write), ``os.mkdir``
(``Path.mkdir``) and ``os.unlink``/``os.remove``. :class:`Faults` counts them, in this process,
and makes the ``fail_at``-th raise ``OSError(code)``, as a full disk or a failing device would.
Run once with ``fail_at=None`` to count a run's points, then once per point.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path

import pytest

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
CODES = (errno.ENOSPC, errno.EIO)


class Faults:
    """Count the write points under ``under`` and fail the ``fail_at``-th (1-based) with
    ``OSError(code)``; a context manager (the calls are patched inside it only)."""

    def __init__(
        self, under: Path, fail_at: int | None = None, code: int = errno.ENOSPC, match=None
    ):
        self.under = str(Path(under).resolve())
        self.match = match  # (what, path) -> whether the call is a point; None: every one
        self.fail_at, self.code = fail_at, code
        self.points: list[tuple[str, str]] = []
        self.failed: tuple[str, str] | None = None
        self._mp = pytest.MonkeyPatch()

    def _hit(self, what: str, path) -> None:
        try:
            full = os.path.abspath(os.fspath(path))
        except TypeError:  # a file descriptor
            return
        if not (full == self.under or full.startswith(self.under + os.sep)):
            return
        if self.match is not None and not self.match(what, full):
            return
        self.points.append((what, full))
        if len(self.points) == self.fail_at:
            self.failed = (what, full)
            raise OSError(self.code, os.strerror(self.code), full)

    def __enter__(self) -> Faults:
        real_open, real_os_open = io.open, os.open
        wrapped = {
            name: getattr(os, name) for name in ("replace", "rename", "mkdir", "unlink", "remove")
        }

        def opener(file, mode="r", *args, **kwargs):
            if any(flag in mode for flag in "wax+"):
                self._hit(f"open({mode})", file)
            return real_open(file, mode, *args, **kwargs)

        def os_open(path, flags, *args, **kwargs):
            if flags & _WRITE_FLAGS:
                self._hit("os.open", path)
            return real_os_open(path, flags, *args, **kwargs)

        def wrap(name, real):
            def call(src, *args, **kwargs):
                self._hit(f"os.{name}", args[0] if name in ("replace", "rename") else src)
                return real(src, *args, **kwargs)

            return call

        self._mp.setattr(builtins, "open", opener)
        self._mp.setattr(io, "open", opener)
        self._mp.setattr(os, "open", os_open)
        for name, real in wrapped.items():
            self._mp.setattr(os, name, wrap(name, real))
        return self

    def __exit__(self, *exc) -> None:
        self._mp.undo()
