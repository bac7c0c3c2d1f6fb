"""Loaded by every Python process started with this folder on ``PYTHONPATH`` (a notebook's
kernel under tests/test_smoke_faults.py): with ``RACER_TEST_WRITE_FAULT`` set to
``FAIL_AT:ERRNO:FOLDER:LOG``, the write points of the process under ``FOLDER`` are counted
(:class:`tests.faults.Faults`, each one appended to ``LOG``) and the ``FAIL_AT``-th fails (0:
none, to count them). Without the variable it does nothing."""

import os

_SPEC = os.environ.get("RACER_TEST_WRITE_FAULT")
if _SPEC:
    import sys

    _fail_at, _code, _under, _log = _SPEC.split(":", 3)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    from tests.faults import Faults

    class _Logged(Faults):
        """Counts over every process of the run (a chapter's shell cells start ``racer``
        commands): the ``FAIL_AT``-th point of the run fails, in whichever process reaches it,
        as the log (the run's points in order) numbers them."""

        _busy = False

        def _hit(self, what, path):
            if _Logged._busy:  # the log's own reads and writes are not points
                return
            _Logged._busy = True
            try:
                try:
                    with open(_log, encoding="utf-8") as log:
                        so_far = sum(1 for _ in log)
                except FileNotFoundError:
                    so_far = 0
                self.points = self.points[:0] + [("", "")] * so_far
                before = len(self.points)
                try:
                    super()._hit(what, path)
                finally:
                    if len(self.points) > before:
                        with open(_log, "a", encoding="utf-8") as log:  # not under FOLDER
                            log.write(f"{what} {self.points[-1][1]}\n")
            finally:
                _Logged._busy = False

    _FAULTS = _Logged(_under, int(_fail_at) or None, int(_code)).__enter__()
