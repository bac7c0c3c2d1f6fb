"""One build of a profile at a time: a lock on its build folder.

``racer book build`` holds ``<build>/<profile>/build.lock`` (:mod:`filelock`: an operating
system lock, released by the system when the process holding it ends, however it ends) while it
plans, executes and builds, and writes its PID beside it (``build.lock.pid``). A second build
of the same profile into the same build folder waits for it, saying which PID it waits for; with
``RACER_LOCK_TIMEOUT`` set (seconds) it gives up after that long with an error naming the PID. A
build of another profile, or into another build folder, is not blocked. A build folder that
cannot be written (read-only) is used without the lock, with a warning: such a build can only
reuse what is there.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from racer_lib.book.profiles import PipelineError
from racer_lib.errors import ConfigError

ENV_TIMEOUT = "RACER_LOCK_TIMEOUT"
_LOCK_NAME = "build.lock"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def _lock_timeout() -> float | None:
    """Seconds a build waits for another build of its profile (``RACER_LOCK_TIMEOUT``); None:
    as long as it takes."""
    text = os.environ.get(ENV_TIMEOUT, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise ConfigError(f"{ENV_TIMEOUT}={text!r} is not a number of seconds (0 or more)")
    return seconds


def holder(folder: Path) -> str:
    """The PID written by the build holding the lock of ``folder`` ("unknown" if none)."""
    try:
        text = (folder / f"{_LOCK_NAME}.pid").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return "unknown"
    return text if text.isdigit() else "unknown"


def _acquire(folder: Path, profile: str, say: Callable[[str], None], timeout: float | None):
    """The acquired lock of ``folder``, or None if the folder cannot be written."""
    from filelock import FileLock, Timeout

    path = folder / _LOCK_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            say(f"waiting for the build of profile {profile} by PID {holder(folder)} (lock {path})")
            try:
                lock.acquire(timeout=-1 if timeout is None else timeout)
            except Timeout:
                raise PipelineError(
                    f"profile {profile} is being built by PID {holder(folder)} (lock {path}); "
                    f"gave up after {timeout:g} s ({ENV_TIMEOUT})"
                ) from None
    except OSError as exc:
        if folder.is_dir() and not _writable(folder):
            say(f"warning: cannot lock {path} ({exc.strerror or exc}): building without the lock")
            return None
        raise PipelineError(f"cannot lock {path}: {exc.strerror or exc}") from None
    try:
        (folder / f"{_LOCK_NAME}.pid").write_text(f"{os.getpid()}\n", encoding="utf-8")
    except OSError:  # held all the same; a waiting build names no PID
        pass
    return lock


def _writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (also under root, unlike os.access)."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


@contextmanager
def build_lock(
    folder: Path, profile: str, say: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the lock of the build folder ``folder`` (``<build>/<profile>``) inside the block."""
    lock = _acquire(Path(folder), profile, say or _stderr, _lock_timeout())
    try:
        yield
    finally:
        if lock is not None:
            try:
                (Path(folder) / f"{_LOCK_NAME}.pid").unlink(missing_ok=True)
            except OSError:
                pass
            lock.release()
