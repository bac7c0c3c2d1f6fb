"""What every noun of the ``racer`` command shares: the :class:`Verb` and :class:`Noun` records
that declare a command and its one example, and the argparse types used by several nouns.

A command is ``racer NOUN VERB``. A noun module (:mod:`racer_lib.cli.book`, ...) defines one
:class:`Noun` whose verbs each name a function ``_add_<verb>(parser)`` that declares the verb's
arguments and sets ``handler`` to ``cmd_<noun>_<verb>(args) -> int``; :func:`add_noun` puts
them into the ``racer`` parser, and ``racer --help`` lists every verb with its example.

No output overwrites an input: every command that writes a file first calls
:func:`refuse_overwrite` with what it reads and what it writes.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from racer_lib.errors import InputError

__all__ = ["Noun", "Verb", "add_noun", "add_pace_options", "positive_int", "refuse_overwrite"]

#: racer_lib.routing.pacing.BudgetPacer's default dual step (checked by tests/test_pacing.py).
DEFAULT_ETA = 0.005

#: A path a command names, with what it is in words: ``("--out", out)``, ``("records file",
#: records)``; a path of None is not given (an option left out) and is skipped.
Named = tuple[str, "str | os.PathLike | None"]


@dataclass(frozen=True)
class Verb:
    """One command, ``racer NOUN VERB``.

    ``summary`` is its line in ``racer --help`` and ``racer NOUN --help``; ``example`` one full
    command line (``racer NOUN VERB ...``), shown under the summary and, unless ``declare``
    sets an epilog of its own, at the end of ``racer NOUN VERB --help``. ``declare(parser)``
    adds the arguments and the handler (and may replace the description, set to ``summary``).
    """

    name: str
    summary: str
    example: str
    declare: Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Noun:
    """A group of commands acting on one thing (``book``, ``records``, ...)."""

    name: str
    summary: str
    description: str
    verbs: tuple[Verb, ...]


def add_noun(
    subparsers: argparse._SubParsersAction, noun: Noun, arguments: bool = True
) -> argparse.ArgumentParser:
    """Declare ``racer NOUN`` and each of its verbs under ``subparsers``; with
    ``arguments=False`` the verbs are named but their arguments not declared (a noun the
    command line does not use: declaring some verbs imports torch)."""
    parser = subparsers.add_parser(noun.name, help=noun.summary, description=noun.description)
    actions = parser.add_subparsers(dest="action", required=True, metavar="VERB")
    for verb in noun.verbs:
        sub = actions.add_parser(verb.name, help=verb.summary, description=verb.summary)
        if arguments:
            verb.declare(sub)
        if sub.epilog is None:
            sub.epilog = f"example: {verb.example}"
    return parser


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def refuse_overwrite(outputs: Iterable[Named], inputs: Iterable[Named], hint: str = "") -> None:
    """Refuse an output of a command that is one of its inputs, which writing it would destroy:
    the same path once both are made absolute with their symlinks resolved (a symlink loop
    does not raise). One line, an :class:`InputError` naming both (``racer`` exits 2): ``OUT:
    --out is the records file IN; it would be overwritten. Give another file`` and ``hint``.
    Call it before anything is read or written, so the inputs stay byte for byte as they were;
    the embeddings beside a records file are an input of their own (name them)."""
    resolved = [(name, Path(path)) for name, path in inputs if path is not None]
    for out_name, out in outputs:
        if out is None:
            continue
        target = os.path.realpath(out)
        for name, path in resolved:
            if target == os.path.realpath(path):
                raise InputError(
                    f"{out}: {out_name} is the {name} {path}; it would be overwritten. Give "
                    f"another file{hint}"
                )


def add_pace_options(parser: argparse.ArgumentParser, observed: str, cap_cost: str):
    """The options of ``--pace`` (:class:`racer_lib.routing.pacing.BudgetPacer`, beyond the
    paper), shared by ``records route`` and ``judge run --router``, in a group returned for
    more; ``observed`` says where each pair's cost comes from, ``cap_cost`` the default of
    ``--cap-cost``."""
    group = parser.add_argument_group(
        "pacing (racer_lib.routing.BudgetPacer, beyond the paper)",
        "Keep the router's budget online: the pairs in order, a dual price on cost updated "
        f"from each pair's observed cost ({observed}).",
    )
    group.add_argument(
        "--pace",
        choices=("off", "dual", "cap"),
        default="off",
        help="off: the rule alone (default); dual: online dual descent on a cost price; cap: "
        "dual plus a hard cap (cumulative cost <= C t + slack)",
    )
    group.add_argument(
        "--eta", type=float, default=DEFAULT_ETA, help=f"dual step (default {DEFAULT_ETA:g})"
    )
    group.add_argument("--slack", type=float, default=0.0, help="cap: slack (cost units)")
    group.add_argument(
        "--cap-cost",
        type=float,
        help=f"cap: the largest cost of one reasoning judgment (default: {cap_cost})",
    )
    return group
