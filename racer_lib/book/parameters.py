"""What a profile may give a notebook's parameters, each rule stated once.

* YAML read by a profile's rules (:func:`read_yaml`): no anchors or aliases (a few lines of nested
  aliases stand for billions of values, which any check, message or hash would go through), no
  key given twice, no integer too long for Python, nothing nested deeper than :data:`_MAX_DEPTH`,
  no more than :data:`MAX_PROFILE_BYTES` bytes or :data:`MAX_PROFILE_VALUES` values;
* a value that is plain data (:func:`plain_problem`): a string, number, boolean or null, or a
  list or mapping (string keys) of them, all the way down; YAML's ``!!binary``, ``!!set``,
  ``!!timestamp``, ``!!omap`` and ``!!pairs`` build other things, which are refused;
* the notebook's injected parameters cell written from the checked values as Python literals
  (:func:`parameters_source`), never from ``str()`` of a value;
* a value of the type of the notebook's default (:func:`type_problem`);
* a value in its parameter's domain (:data:`DOMAINS`, :func:`domain_problem`): counts, budgets,
  temperatures, shares, judges;
* no file or folder outside the repository (:func:`outside_problem`), found before anything in
  it is read; every path a parameter gives is resolved once, symlinks followed, by
  :func:`parameter_path` (relative to the repository, or to the chapter's ``results_dir`` for
  another chapter's results folder, :data:`RESULTS_SUFFIX`), which the check, the cache key
  (:func:`racer_lib.book.cache.input_files`) and the notebook
  (:func:`racer_lib.book.chapter.read_result`) share;
* what the runner adds to a declaring notebook's parameters: the router store's folder
  (:data:`STORE_PARAMETER`) and, under a ``trainer``'s own keys, :data:`RUNNER_TRAINER`.

A check returns what is wrong (a phrase) or None; :mod:`racer_lib.book.profiles` raises, naming
the profile file and the notebook. A value in a message is cut to :data:`_SHOWN_CHARS` characters
(:func:`short_repr`): it may be huge.
"""

from __future__ import annotations

import ast
import datetime
import math
import reprlib
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from racer_lib.records.files import DataLoader, RefusedYAML

_SHOWN_CHARS = 80  # a value in a message is cut to this many characters
_MAX_DEPTH = 32  # levels of nested lists and mappings a profile (or --set) may give
_RECORDS_PARAMETERS = ("records_dir", "records_paths")  # a chapter given these reads records

MAX_PROFILE_BYTES = 1 << 20
"""The most bytes a profile file (or a ``--set`` value) may hold: 1 MiB. The largest profile of
the repository is 7 KiB; a bigger file is refused before it is read, so that no check, message,
hash or notebook goes through megabytes of parameters."""

MAX_PROFILE_VALUES = 10_000
"""The most YAML values (scalars, lists and mappings, keys included) a profile file (or a
``--set`` value) may hold. The largest profile of the repository holds 316; a file with more
is refused as it is read, before any value is built."""

# What the runner asks of every notebook's trainer (a ``trainer`` parameter, TrainSettings
# fields) under the profile's own keys: glibc's malloc keeps freed memory while a batch trains
# (racer_lib.routing.train._keeping_freed_memory, speed only). A library call never does
# unless asked; a notebook run by the runner asks.
RUNNER_TRAINER = {"keep_freed_memory": True}
# The parameter through which the runner gives a notebook the router store (a folder; the
# notebook passes it to racer_lib.paper.experiments.fit): only to those that declare it.
STORE_PARAMETER = "policy_store"

_REPR = reprlib.Repr()  # containers cut to a few items, strings and numbers to _SHOWN_CHARS
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = _SHOWN_CHARS


def _cut_text(text: str) -> str:
    """``text`` cut to :data:`_SHOWN_CHARS` characters."""
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _cut_path(text: str) -> str:
    """A path cut to :data:`_SHOWN_CHARS` characters in its middle, so that its end (the file
    or folder it names) is still shown."""
    if len(text) <= _SHOWN_CHARS:
        return text
    half = (_SHOWN_CHARS - 3) // 2
    return text[:half] + "..." + text[-half:]


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to :data:`_SHOWN_CHARS` characters; a huge value is never written out
    whole (:mod:`reprlib` cuts its containers and strings first)."""
    return _cut_text(_REPR.repr(value))


def short_list(names: Iterable[Any], most: int = 8) -> str:
    """Up to ``most`` of ``names`` (strings as they are, unless a character would not print, a
    line break among them: then as :func:`repr`; other values as :func:`short_repr`), each cut
    to :data:`_SHOWN_CHARS` characters, then how many more."""
    names = list(names)
    shown = [
        _cut_text(n if n.isprintable() else repr(n)) if isinstance(n, str) else short_repr(n)
        for n in names[:most]
    ]
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(shown) + more


# --------------------------------------------------------------------------- YAML


class _ProfileLoader(DataLoader):
    """YAML's safe loader with the rules of a profile (:func:`read_yaml`): no anchor or alias
    (:class:`~racer_lib.records.files.DataLoader`), and more. Merge keys (``<<``) of a mapping
    written out are left alone."""

    in_full = "; a profile gives every value in full, without anchors (&) or aliases (*)"
    depth = 0  # of the node being composed
    values = 0  # nodes composed so far

    def compose_node(self, parent, index):
        line = self.peek_event().start_mark.line + 1
        if self.depth >= _MAX_DEPTH:
            raise RefusedYAML(f"line {line}: values nested deeper than {_MAX_DEPTH} levels")
        self.values += 1
        if self.values > MAX_PROFILE_VALUES:
            raise RefusedYAML(
                f"line {line}: more than {MAX_PROFILE_VALUES} values, more than a profile may "
                "hold (racer_lib.book.parameters.MAX_PROFILE_VALUES)"
            )
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ValueError, LookupError, AttributeError, TypeError, ArithmeticError) as exc:
            # a tag given a value it cannot build (``!!int ''``, ``!!timestamp 0``): PyYAML's
            # constructors fail with Python's own errors
            line = node.start_mark.line + 1
            value = node.value if isinstance(node, yaml.ScalarNode) else "..."
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise RefusedYAML(
                f"line {line}: {_cut_text(tag)} {short_repr(value)} is no value of that tag "
                f"({type(exc).__name__})"
            ) from None

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise RefusedYAML(
                            f"line {line}: key {short_repr(key)} given twice (first at line "
                            f"{seen[key]}); give each key once"
                        )
                    seen[key] = line
                except TypeError:  # an unhashable key: the safe loader refuses it itself
                    continue
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than int() reads (sys.get_int_max_str_digits)
            if len(node.value) <= sys.get_int_max_str_digits():  # ``!!int x``: not a number
                raise
            line = node.start_mark.line + 1
            raise RefusedYAML(
                f"line {line}: an integer of {len(node.value)} digits, too long"
            ) from None


_ProfileLoader.add_constructor("tag:yaml.org,2002:int", _ProfileLoader.construct_yaml_int)


def too_big(size: int) -> str | None:
    """How ``size`` bytes of profile are more than :data:`MAX_PROFILE_BYTES`; None if not."""
    if size <= MAX_PROFILE_BYTES:
        return None
    return (
        f"{size} bytes, more than a profile may hold ({MAX_PROFILE_BYTES} bytes, "
        "racer_lib.book.parameters.MAX_PROFILE_BYTES)"
    )


def read_yaml(text: str) -> Any:
    """``text`` read as YAML by a profile's rules: no anchor or alias, no mapping that gives a
    key twice (YAML's own rule, which PyYAML does not enforce: it keeps the last value), no
    integer too long for Python to read, nothing nested deeper than :data:`_MAX_DEPTH` levels,
    no more than :data:`MAX_PROFILE_BYTES` bytes (UTF-8) or :data:`MAX_PROFILE_VALUES` values.
    A :class:`RefusedYAML` (its message: the line, what) for these, before any value is built;
    another ``yaml.YAMLError`` for text that is not YAML."""
    big = too_big(len(text.encode("utf-8", errors="surrogatepass")))
    if big is not None:
        raise RefusedYAML(big)
    return yaml.load(text, Loader=_ProfileLoader)


# --------------------------------------------------------------------------- plain data

#: What a parameter's value may be, in words, for messages.
PLAIN = "a string, number, boolean or null, or a list or mapping (string keys) of these"
_SCALARS = (str, int, float, bool, type(None))  # exact types: no subclass with its own repr
# The YAML tag that builds a value of each type the safe loader makes but a parameter refuses.
_TAGS = {
    bytes: "!!binary",
    set: "!!set",
    datetime.datetime: "!!timestamp",
    datetime.date: "!!timestamp",
    tuple: "!!omap or !!pairs",
}


def _what(value: Any) -> str:
    """The type of a value that is not plain data, with the YAML tag that builds it."""
    tag = _TAGS.get(type(value))
    return type(value).__name__ + (f" (YAML tag {tag})" if tag else "")


def _plain_parts(name: str, value: Any) -> Iterator[tuple[str, Any, bool]]:
    """Every part of ``value`` with where it lies (``name``, ``name.key``, ``name[2]``) and
    whether it is a mapping's key; a container before its items, depth first, without
    recursion (a value from Python may be deeper than a profile's)."""
    stack: list[tuple[str, Any, bool]] = [(name, value, False)]
    while stack:
        where, part, is_key = stack.pop()
        yield where, part, is_key
        if is_key:
            continue
        if type(part) is dict:
            for key, item in reversed(list(part.items())):
                stack.append((f"{where}.{key}", item, False))
                stack.append((where, key, True))
        elif type(part) is list:
            stack.extend(reversed([(f"{where}[{k}]", item, False) for k, item in enumerate(part)]))


def plain_problem(name: str, value: Any) -> str | None:
    """How parameter ``name``'s ``value`` is not plain data (:data:`PLAIN`): the first part of
    it that is something else (bytes of ``!!binary``, a set of ``!!set``, a date of
    ``!!timestamp``, a tuple, any other object), a mapping key that is not a string, or a NaN;
    None if it is plain all the way down. Only such a value is written into a notebook
    (:func:`parameters_source`): it cannot be code."""
    for where, part, is_key in _plain_parts(name, value):
        if type(part) is float and math.isnan(part):
            return f"{short_repr(where)} is NaN (.nan); a parameter's value is a number"
        if type(part) is str or (not is_key and type(part) in (*_SCALARS, dict, list)):
            continue
        said = "has a key that is" if is_key else "is"
        return (
            f"{short_repr(where)} {said} {_what(part)}: {short_repr(part)}; a parameter's "
            f"value is plain data: {PLAIN}"
        )
    return None


def _literal(value: Any) -> str:
    """``value`` (plain data, :func:`plain_problem`) as Python source that
    ``ast.literal_eval`` reads back equal: ``repr`` of each string, key and number, an
    infinite float as ``1e999``."""
    if type(value) is dict:
        return "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in value.items()) + "}"
    if type(value) is list:
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    if type(value) is float and math.isinf(value):
        return "1e999" if value > 0 else "-1e999"
    return repr(value)


def parameters_source(parameters: dict[str, Any], comment: str = "Parameters") -> str:
    """The source of a notebook's injected parameters cell: ``# comment``, then ``name =
    literal`` per parameter, each value written by :func:`_literal` from the checked value. A
    ``ValueError`` (a bug: the runner checks every value first) for a name that is not an
    identifier or a value that is not plain data: nothing else is ever written as code."""
    lines = [f"# {comment}".strip()]
    for name, value in parameters.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"parameter name {short_repr(name)} is not a Python name")
        problem = plain_problem(name, value)
        if problem is not None:
            raise ValueError(problem)
        lines.append(f"{name} = {_literal(value)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- types


def _kind(value: Any) -> str:
    """What a parameter value is, in words (YAML's spelling)."""
    for types, word in [
        (bool, "a boolean (true/false)"),
        (int, "a whole number"),
        (float, "a number"),
        (str, "a string"),
        ((list, tuple), "a list"),
        (dict, "a mapping"),
    ]:
        if isinstance(value, types):
            return word
    return "null" if value is None else type(value).__name__


def _fits(value: Any, default: Any) -> bool:
    """Whether a profile's ``value`` has the type of the notebook's ``default``: a list for a
    list (each item fitting one of the default's items), a boolean for a boolean, a whole
    number for a whole number (not a boolean: YAML reads ``yes`` as true), a number for a
    number, a string for a string; a default of None takes anything."""
    if default is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple)) and (
            not default or all(any(_fits(v, d) for d in default) for v in value)
        )
    return isinstance(value, type(default))


def type_problem(value: Any, default: str | None) -> str | None:
    """How ``value`` is not of the type of the notebook's default (``default``: its source text,
    as papermill's ``inspect_notebook`` gives it; a default that is not a literal is not
    checked); None if it is."""
    try:
        default_value = ast.literal_eval(default) if default is not None else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if _fits(value, default_value):
        return None
    return (
        f"{short_repr(value)} is {_kind(value)}, but the notebook's default is "
        f"{_cut_text(default or '')} ({_kind(default_value)}"
        + (", each item like its items" if isinstance(default_value, list) else "")
        + ")"
    )


# --------------------------------------------------------------------------- domains


class _Domain(NamedTuple):
    """What a parameter's value (each item of a list) must be: ``holds`` tells, ``says`` in
    words, for the message."""

    says: str
    holds: Callable[[Any], bool]


def _whole(value: Any) -> bool:
    """An int (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    """An int (not a boolean) or a finite float."""
    return _whole(value) or (isinstance(value, float) and math.isfinite(value))


def _known_judges() -> tuple[str, ...]:
    """The judges the simulator knows, then LLMBar's released judges."""
    from racer_lib.records.llmbar import LLMBAR_JUDGES
    from racer_lib.records.simulate import JUDGES

    return (*JUDGES, *LLMBAR_JUDGES)


_COUNT = _Domain("a whole number >= 1", lambda v: _whole(v) and v >= 1)
_BUDGET = _Domain(
    "a number > 1 (a budget in the cost unit, where All-Instruct costs 1)",
    lambda v: _number(v) and v > 1,
)
_JUDGE = _Domain("a judge the simulator or LLMBar's records know", lambda v: v in _known_judges())
_RECORDS_JUDGE = _Domain("a judge's name", lambda v: isinstance(v, str) and bool(v.strip()))

#: The domain of every parameter of this name, in any notebook: its value (each item of a list,
#: which must hold one at least; each key of a mapping, such as ``training`` or ``sizes``, by its
#: own name) must lie in it. A name not listed is not checked. A notebook given ``records_dir``
#: or ``records_paths`` reads records whose folders or files name the judges: any name is taken.
DOMAINS: dict[str, _Domain] = {
    # counts: seeds, pairs, epochs, batches, steps, tokens, dimensions, neighbours
    **dict.fromkeys(
        (
            "n_seeds",
            "n_pairs",
            "n_batches",
            "n_instances",
            "n_starts",
            "epochs",
            "mf_epochs",
            "mirt_epochs",
            "batch_size",
            "batch_sizes",
            "gpu_batch_size",
            "max_tokens",
            "gpu_max_tokens",
            "steps",
            "dim",
            "knn_k",
            "levels",
            "sizes",  # chapter 05: instance sizes (chapter 16's mapping holds its own keys)
        ),
        _COUNT,
    ),
    **dict.fromkeys(
        ("seed", "torch_threads", "lhs_points"),
        _Domain("a whole number >= 0", lambda v: _whole(v) and v >= 0),
    ),
    **dict.fromkeys(("budget", "budgets", "table_budget", "route_budget"), _BUDGET),
    **dict.fromkeys(
        ("tau_r", "tau_c", "taus", "taus_r", "taus_c"),
        _Domain("a temperature > 0", lambda v: _number(v) and v > 0),
    ),
    # the scales multiply the paper's counts (racer_lib.records.simulate takes any scale > 0)
    **dict.fromkeys(
        ("scale", "record_scale", "benchmark_scale", "shift_scale"),
        _Domain("a number > 0", lambda v: _number(v) and v > 0),
    ),
    "split_shares": _Domain("a share in [0, 1]", lambda v: _number(v) and 0 <= v <= 1),
    "deltas": _Domain("a KL radius > 0", lambda v: _number(v) and v > 0),
    # entropy weights; learning rates and dual steps as racer_lib.routing.train.TrainSettings
    **dict.fromkeys(
        ("beta", "betas", "paper_beta", "rate_betas", "lr", "dual_step"),
        _Domain("a number >= 0", lambda v: _number(v) and v >= 0),
    ),
    **dict.fromkeys(("judge", "judges"), _JUDGE),
}


def _out_of_domain(name: str, value: Any, records: bool) -> str | None:
    """How the first value of parameter ``name`` (or of a key of its mapping, ``name.key``) out
    of its domain is; None if all lie in it. ``records``: the notebook reads records, which
    name their own judges."""
    if isinstance(value, dict):
        for key, item in value.items():
            found = _out_of_domain(f"{name}.{key}", item, records) if isinstance(key, str) else None
            if found:
                return found
        return None
    domain = DOMAINS.get(name.rpartition(".")[2])
    if domain is None:
        return None
    if domain is _JUDGE and records:
        domain = _RECORDS_JUDGE
    says = domain.says
    if domain is _JUDGE:
        says += f" ({', '.join(_known_judges())})"
    shown = short_repr(name)
    if not isinstance(value, (list, tuple)):
        return None if domain.holds(value) else f"{shown} is {short_repr(value)}; it must be {says}"
    if not value:
        return f"{shown} is []; it must list one item at least, each {says}"
    for item in value:
        if not domain.holds(item):
            return f"{shown} holds {short_repr(item)}; each item must be {says}"
    return None


def domain_problem(given: dict[str, Any]) -> tuple[str, str] | None:
    """The first parameter of ``given`` (a notebook's parameters) with a value out of its
    domain (:data:`DOMAINS`), and how: ``(name, "'name' is ...; it must be ...")``; or None."""
    records = any(given.get(name) for name in _RECORDS_PARAMETERS)
    for name, value in given.items():
        found = _out_of_domain(name, value, records)
        if found is not None:
            return name, found
    return None


# --------------------------------------------------------------------------- files


RESULTS_SUFFIX = "_results"
"""A parameter whose name ends so (chapter 03's ``fig2_results``, ``shift_results``) names
another chapter's results folder relative to the chapter's own ``results_dir``
(:func:`racer_lib.book.chapter.read_result`); every other parameter names a file or folder
relative to the repository root, the notebooks' working folder."""


def parameter_strings(value: Any) -> Iterator[str]:
    """The strings of a parameter's value: itself, or those of a list or of a mapping's values
    (nested too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from parameter_strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from parameter_strings(item)


def resolve_path(text: str | Path, base: Path | str) -> Path | None:
    """The one resolution of a path a parameter gives: ``text`` relative to ``base`` (or
    absolute), every symbolic link followed, ``..`` applied after them, as the operating system
    would when the notebook opens it. None for an empty text, one holding a NUL, or one that
    cannot be resolved (a loop of links, a name too long). Nothing is read."""
    if not str(text).strip() or "\0" in str(text):
        return None
    try:
        return (Path(base) / text).resolve()
    except (OSError, ValueError, RuntimeError):
        return None


def parameter_path(
    name: str, text: str, root: Path, results_dir: Path | str | None = None
) -> Path | None:
    """Where parameter ``name``'s string ``text`` leads (:func:`resolve_path`): relative to
    ``results_dir`` for a chapter's results folder (:data:`RESULTS_SUFFIX`), else to the
    repository ``root``. The check (:func:`outside_problem`), the cache key
    (:func:`racer_lib.book.cache.input_files`) and the notebook read the same path."""
    relative = results_dir is not None and name.endswith(RESULTS_SUFFIX)
    return resolve_path(text, Path(results_dir) if relative else root)


def named_paths(
    name: str, value: Any, root: Path, results_dir: Path | str | None = None
) -> Iterator[tuple[str, Path]]:
    """``(text, path)`` for each string of parameter ``name``'s ``value`` that names a path
    (:func:`parameter_path`): an existing file or folder other than ``root`` or a folder above
    it (never an input), or, for a chapter's results folder (:data:`RESULTS_SUFFIX`), any
    non-empty path (it may not be written yet). Nothing in them is read."""
    top = resolve_path(root, "/") or root
    results = results_dir is not None and name.endswith(RESULTS_SUFFIX)
    for text in parameter_strings(value):
        path = parameter_path(name, text, root, results_dir)
        if path is None:
            continue
        if not results:
            try:
                if not path.exists() or path == top or path in top.parents:
                    continue
            except (OSError, ValueError):
                continue
        yield text, path


def named_path(text: str, root: Path) -> Path | None:
    """The existing file or folder a string names relative to the repository ``root``
    (:func:`named_paths` of a parameter that is no results folder); None where it names none."""
    return next((path for _, path in named_paths("", text, root)), None)


def allowed_folders(root: Path, results_dir: Path | str | None = None) -> tuple[Path, ...]:
    """Where a parameter may lead (resolved): the repository ``root`` and, given the chapter's
    ``results_dir``, the folder of the profile's results (``results_dir``'s parent), which
    ``racer book build --results-dir`` may put outside the repository."""
    folders = [resolve_path(root, "/") or root]
    if results_dir is not None:
        parent = resolve_path(Path(results_dir).parent, "/")
        if parent is not None and parent not in folders:
            folders.append(parent)
    return tuple(folders)


def outside(path: Path, root: Path, results_dir: Path | str | None = None) -> bool:
    """Whether ``path`` (resolved) lies outside the repository ``root`` (and, given
    ``results_dir``, outside the profile's results folder: :func:`allowed_folders`)."""
    return not any(folder in path.parents for folder in allowed_folders(root, results_dir))


def outside_problem(
    given: dict[str, Any], root: Path, results_dir: Path | str | None = None
) -> tuple[str, str] | None:
    """The first parameter of ``given`` that leads to a file or folder outside the repository
    ``root`` (or the profile's results folder, given the chapter's ``results_dir``:
    :func:`allowed_folders`), by :func:`named_paths`, and how: ``(name, "'name' names ...,
    outside ...")``; or None. Only the names are resolved: nothing is read."""
    for name, value in given.items():
        for text, path in named_paths(name, value, root, results_dir):
            if outside(path, root, results_dir):
                leads = f" (it leads to {_cut_path(str(path))})" if str(path) != text else ""
                return name, (
                    f"{short_repr(name)} names {short_repr(text)}{leads}, outside the "
                    f"repository {root.resolve()}; a chapter reads files inside the repository "
                    "only (copy or move them there)"
                )
    return None
