"""The one base class of every error a user can cause: :class:`RacerError`.

``racer`` (:mod:`racer_lib.cli`) catches :class:`RacerError` and prints its message alone, naming
the file, row and field where there is one. Anything else is a bug in the library and keeps its
traceback. Each module's own error (``RecordsError``, ``DataError``, ``JudgingError``,
``PipelineError``, ...) derives from it, and also from the built-in class it has always been
(``ValueError``, ``RuntimeError``, ...), so ``except ValueError`` in user code still catches it.

The classes below are for the errors no module owns: a bad setting (:class:`ConfigError`), an
input that cannot be used as given (:class:`InputError`), a missing file
(:class:`MissingFileError`), a path that cannot be read as a file (:class:`UnreadableFileError`:
a folder, a symlink loop, a FIFO, text that is not UTF-8), a missing optional package
(:class:`MissingPackageError`) and a write the system refused (:class:`WriteError`: a full
disk, an I/O error).
"""

from __future__ import annotations


class RacerError(Exception):
    """An error in the user's input, files or settings, reported without a traceback."""


class ConfigError(RacerError, ValueError):
    """A setting that cannot be used: an unknown name, a value out of range, or options that do
    not go together. The message says what is allowed."""


class InputError(RacerError, ValueError):
    """An input that cannot be used as given: a file that is not what it should be, or files
    that do not fit together (embeddings from another encoder than the router's)."""


class MissingFileError(RacerError, FileNotFoundError):
    """A file or folder the user named (or that should lie beside one) is not there."""


class UnreadableFileError(InputError):
    """A path that cannot be read as the file it should be: a folder, a symlink loop, a FIFO,
    socket or device, a file this user may not read, or text that is not UTF-8. The message is
    one line naming the path and what is wrong (:mod:`racer_lib.records.files` checks them)."""


class MissingPackageError(RacerError, ImportError):
    """An optional package a feature needs is not installed; the message says how to get it."""


class WriteError(RacerError, OSError):
    """A file could not be written (a full disk, an I/O error, no permission): one line naming
    the file and what the system said, ``cannot write PATH: no space left on device``. Its
    ``errno`` and ``filename`` are those of the :class:`OSError` it replaces, so ``except
    OSError`` still catches it; what was written before it stays as it was."""

    def __init__(self, path, error: OSError):
        reason = error.strerror or str(error) or type(error).__name__
        super().__init__(error.errno, reason[:1].lower() + reason[1:], str(path))
        self.message = f"cannot write {path}: {self.strerror}"

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # picklable across processes, as OSError is
        return (_write_error, (self.filename, self.errno, self.strerror))


def _write_error(path, errno, strerror) -> WriteError:
    return WriteError(path, OSError(errno, strerror))
