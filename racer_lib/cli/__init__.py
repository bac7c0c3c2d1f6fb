"""The ``racer`` command (also ``python -m racer_lib``).

Grammar: every command is ``racer NOUN VERB``, the noun the thing acted on, the verb the
action; ``racer --help`` lists every command with one example.

* ``racer book build|check`` (:mod:`~racer_lib.cli.book`): execute a profile's notebooks and
  build the book; open every page of the built book in headless Chromium;
* ``racer data list|verify|fetch`` (:mod:`~racer_lib.cli.data`): the real data files;
* ``racer judge run|merge`` (:mod:`~racer_lib.cli.judge`): judge pairs in both modes, then
  turn the run into judge records;
* ``racer pairs embed`` (:mod:`~racer_lib.cli.pairs`): embed preference pairs for routing;
* ``racer records validate|import|split|route`` (:mod:`~racer_lib.cli.records`): check record
  files, import other tools' judge outputs or a table in one's own columns, split records,
  route a record file's pairs with a saved router (paced online with ``--pace``);
* ``racer router train|evaluate|sweep|info`` (:mod:`~racer_lib.cli.router`): train a router on
  records under a budget (a logistic-regression baseline beside it), evaluate it on held-out
  pairs, sweep budgets, describe a router file;
* ``racer simulator check|generate`` (:mod:`~racer_lib.cli.simulator`): the calibrated
  simulator of judge records.

To add a command, write ``_add_<verb>(parser)`` (its arguments and ``handler``) and
``cmd_<noun>_<verb>(args) -> int`` in the noun's module and add a
:class:`~racer_lib.cli.common.Verb`, with its one example, to the module's
:class:`~racer_lib.cli.common.Noun`; a new noun goes into :data:`NOUNS`.

Old spellings (``racer run``, ``racer book-check``, ``racer route``, ``racer embed``, ``racer
simulate check|generate``, ``racer judge --dataset ...``, ``racer judge-merge``) still work for
one release, with a one-line note on stderr naming the new one (:data:`DEPRECATED`).

Errors: :func:`main` prints a :class:`racer_lib.errors.RacerError` (bad input, files or
settings) as one line, ``error: ...``, and exits 2; Ctrl-C prints ``interrupted`` and exits 130;
a reader of its output that has gone (``racer data list | head -1``) ends it quietly, exit 141;
any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence

from racer_lib import __version__
from racer_lib.cli.book import BOOK, cmd_book_build, cmd_book_check
from racer_lib.cli.common import Noun, add_noun
from racer_lib.cli.data import DATA, cmd_data_fetch, cmd_data_list, cmd_data_verify
from racer_lib.cli.judge import JUDGE, cmd_judge_merge, cmd_judge_run
from racer_lib.cli.pairs import PAIRS, cmd_pairs_embed
from racer_lib.cli.records import (
    RECORDS,
    cmd_records_import,
    cmd_records_route,
    cmd_records_validate,
    routes_path,
)
from racer_lib.cli.router import ROUTER, cmd_router_evaluate, cmd_router_info, cmd_router_train
from racer_lib.cli.simulator import SIMULATOR, cmd_simulator_check, cmd_simulator_generate
from racer_lib.errors import RacerError

__all__ = [
    "DEPRECATED",
    "NOUNS",
    "build_parser",
    "export_env",
    "cmd_book_build",
    "cmd_book_check",
    "cmd_data_fetch",
    "cmd_data_list",
    "cmd_data_verify",
    "cmd_judge_merge",
    "cmd_judge_run",
    "cmd_pairs_embed",
    "cmd_records_import",
    "cmd_records_route",
    "cmd_records_validate",
    "cmd_router_evaluate",
    "cmd_router_info",
    "cmd_router_train",
    "cmd_simulator_check",
    "cmd_simulator_generate",
    "commands_help",
    "main",
    "routes_path",
]

#: The nouns of ``racer``, in the order of the data flow and of ``racer --help``.
NOUNS: tuple[Noun, ...] = (DATA, SIMULATOR, JUDGE, RECORDS, PAIRS, ROUTER, BOOK)

#: Old spellings accepted for one release: the old first word -> the words that replace it.
#: ``judge``, still a noun, is old only when an option follows it (``racer judge --dataset ...``
#: is ``racer judge run --dataset ...``); ``simulate`` became the noun ``simulator`` and keeps
#: the verb that follows it.
DEPRECATED: dict[str, tuple[str, ...]] = {
    "run": ("book", "build"),
    "book-check": ("book", "check"),
    "route": ("records", "route"),
    "embed": ("pairs", "embed"),
    "simulate": ("simulator",),
    "judge": ("judge", "run"),
    "judge-merge": ("judge", "merge"),
}

_HELP = ("-h", "--help")


def _rename(argv: list[str]) -> tuple[list[str], list[str]] | None:
    """The old and the new spelling's leading words if ``argv`` starts with a deprecated one."""
    if not argv or argv[0] not in DEPRECATED:
        return None
    first, rest = argv[0], argv[1:]
    new = list(DEPRECATED[first])
    if any(noun.name == first for noun in NOUNS):  # `racer judge --dataset ...`
        if not rest or not rest[0].startswith("-") or rest[0] in _HELP:
            return None  # `racer judge run|merge ...` or the noun's help
        return [first, rest[0]], new
    if len(new) == 1 and rest and not rest[0].startswith("-"):  # a renamed noun, then its verb
        return [first, rest[0]], [*new, rest[0]]
    return [first], new


def _resolve_deprecated(argv: list[str]) -> list[str]:
    """``argv`` with a deprecated spelling replaced by the new one (a one-line note on stderr)."""
    renamed = _rename(argv)
    if renamed is None:
        return argv
    old, new = renamed
    print(
        f"racer: `racer {' '.join(old)} ...` is deprecated and goes in the next release; use "
        f"`racer {' '.join(new)} ...`",
        file=sys.stderr,
    )
    return [*DEPRECATED[argv[0]], *argv[1:]]


def commands_help(width: int = 88) -> str:
    """``racer --help``'s list of commands, each with its summary and its one example, then
    the old spellings that still work."""
    lines = ["commands (`racer NOUN VERB --help` shows a command's options):"]
    for noun in NOUNS:
        for verb in noun.verbs:
            name = f"  {noun.name} {verb.name}"
            lines += textwrap.wrap(
                verb.summary, width, initial_indent=f"{name:<22}", subsequent_indent=" " * 22
            )
            lines.append(" " * 22 + verb.example)
    lines += ["", "old spellings, accepted until the next release with a note on stderr:"]
    for old, new in DEPRECATED.items():
        if any(noun.name == old for noun in NOUNS):
            before, after = f"racer {old} --OPTION ...", f"racer {' '.join(new)} --OPTION ..."
        elif len(new) == 1:
            before, after = f"racer {old} VERB ...", f"racer {new[0]} VERB ..."
        else:
            before, after = f"racer {old} ...", f"racer {' '.join(new)} ..."
        lines.append(f"  {before:<26} -> {after}")
    return "\n".join(lines)


def build_parser(noun: str | None = None) -> argparse.ArgumentParser:
    """The ``racer`` argument parser: every verb of every noun of :data:`NOUNS`, or, given the
    ``noun`` a command line starts with, the arguments of that noun's verbs only (the others
    are named for ``--help``: a command starts in a second instead of three)."""
    parser = argparse.ArgumentParser(
        prog="racer",
        description=textwrap.fill(
            "RACER companion: fetch the data, simulate or judge records, route pairs with a "
            "saved router, run the notebooks and build the book. Every command is `racer NOUN "
            "VERB`.",
            88,
        ),
        epilog=commands_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="NOUN VERB",
        help="a noun, then one of its verbs (every command is listed below)",
    )
    for each in NOUNS:
        add_noun(subparsers, each, arguments=noun is None or each.name == noun)
    return parser


#: The exit status when the reader of ``racer``'s output has gone (``racer data list | head
#: -1``): a shell's for a command ended by SIGPIPE (128 + 13).
BROKEN_PIPE = 141
#: The exit status on Ctrl-C (SIGINT): a shell's for a command it ended (128 + 2).
INTERRUPTED = 130


def _reader_gone() -> bool:
    """Whether the reader of standard output has gone (a pipe whose other end is closed polls
    as an error); True where that cannot be told (no file descriptor, no ``poll``)."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # a captured stdout; no poll (Windows)
        return True


def _stdout_gone() -> int:
    """What ``racer`` does when its standard output's reader has gone: nothing more is written
    there (it points to ``os.devnull``, so that Python's own flush at exit does not fail again
    and print ``Exception ignored ... BrokenPipeError``), nothing is said, :data:`BROKEN_PIPE`
    is the status (Python's documented way: the note on SIGPIPE of the ``signal`` module)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (a captured stdout)
        pass
    return BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run its command (:func:`main`); standard output flushed before
    returning, so that a reader that has gone is found here, not at exit."""
    argv = _resolve_deprecated(list(sys.argv[1:] if argv is None else argv))
    try:
        args = build_parser(argv[0] if argv else "").parse_args(argv)
    except SystemExit:  # --help, --version or a usage error: what argparse printed goes out
        sys.stdout.flush()
        raise
    try:
        status = args.handler(args)
    except RacerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        status = 2
    sys.stdout.flush()
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``racer``; return the exit status: 2 on a :class:`racer_lib.errors.RacerError` (its
    message printed as one line); :data:`INTERRUPTED` (130) on Ctrl-C, with the one line
    ``interrupted``; :data:`BROKEN_PIPE` (141), quietly, when the reader of its output has
    gone (``racer data list | head -1``). Any other exception propagates with its traceback."""
    try:
        return _run(argv)
    except BrokenPipeError:
        if not _reader_gone():  # another pipe than stdout's (a subprocess's): a bug
            raise
        return _stdout_gone()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED


#: The thread counts of numpy's BLAS and torch, fixed for the commands of shell cells.
_THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def export_env(**values) -> dict[str, str]:
    """Set environment variables for shell cells that run ``racer ...`` (chapter 17) and
    return them: each value as text, a mapping as command-line flags (``{"epochs": 10}`` ->
    ``--epochs 10``, a list value repeating its flag: ``{"subset": ["a", "b"]}`` -> ``--subset
    a --subset b``); a ``None`` value unsets its variable; a path inside the working folder is
    written relative to it (the staged page makes the others relative).
    ``PATH`` gets this interpreter's folder first, where ``racer`` is installed; the thread
    counts (``OMP_NUM_THREADS`` ...) are 1 unless given, so that what the commands compute does
    not depend on how many chapters the book runs at a time."""

    def text(value) -> str:
        if isinstance(value, os.PathLike):  # inside the working folder: relative to it
            path, here = os.path.abspath(value), os.getcwd()
            return os.path.relpath(path, here) if path.startswith(here + os.sep) else str(value)
        if isinstance(value, dict):
            return " ".join(
                f"--{k.replace('_', '-')} {v}"
                for k, vs in value.items()
                for v in (vs if isinstance(vs, (list, tuple)) else [vs])
            )
        return str(value)

    env = {name: text(value) for name, value in values.items() if value is not None}
    for name in [n for n, v in values.items() if v is None]:
        os.environ.pop(name, None)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    # one thread per command unless told otherwise: the router a shell cell trains is then the
    # same whether the book runs its chapters two at a time (a thread each) or one by one
    env.update({name: env.get(name, "1") for name in _THREADS})
    os.environ.update(env)
    return env
