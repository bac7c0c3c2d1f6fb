"""Profiles: reading ``profiles/NAME.yaml`` (``extends`` resolved), the repository layout of a run,
checking each notebook's parameters against its ``parameters`` cell, and what a profile's chapters
require (data files, models) and whether it can be had here.

A profile names the notebooks it runs, in run order, with their parameters::

    description: ...
    extends: sim            # optional: a parent profile, overridden key by key
    on_missing: page        # or error: what happens when a chapter's requirements are not met
    notebooks:
      07_budget_frontier: {budgets: [2.0, 3.0], n_seeds: 2}
    set:                    # optional: for every notebook that declares the parameter
      trainer: {device: cuda}

``set`` is inherited through ``extends`` and wins over the notebooks' own entries; ``racer book
build --set NAME=VALUE`` adds to it (:meth:`Profile.with_set`).

What a chapter needs beyond the repository (``data:<source>``, ``model:<name>``) is stated once,
in the chapter registry (:data:`racer_lib.paper.registry.REQUIRES`); a profile's own ``requires``
adds needs of notebooks the registry does not know. Every notebook receives ``profile`` and
``results_dir`` on top of the profile's parameters, and a notebook with a ``trainer``
parameter gets :data:`RUNNER_TRAINER` under the profile's own trainer keys; one with a
``policy_store`` parameter (:data:`STORE_PARAMETER`) gets the router store's folder. All checks
happen before the first notebook runs, and any problem raises :class:`PipelineError` (one line,
naming the file): a profile that is not UTF-8, that gives a key of a mapping twice (with both
lines; YAML forbids it, PyYAML would keep the last), that uses YAML anchors or aliases (``&``,
``*``: a few lines of them stand for billions of values) or that names no notebook, itself or
through ``extends``, is refused. A name of ``set`` (or ``--set``) must be declared by a notebook of
the run, and every value must be plain data (strings, numbers, booleans, null, lists and
mappings of them: no ``!!binary``, ``!!set`` or ``!!timestamp``), of its default's type, in its
parameter's domain and name no file or folder outside the repository; a profile file over
:data:`~racer_lib.book.parameters.MAX_PROFILE_BYTES` bytes or
:data:`~racer_lib.book.parameters.MAX_PROFILE_VALUES` values is refused
(:mod:`racer_lib.book.parameters`, which states the rules).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from racer_lib.book.parameters import (
    RUNNER_TRAINER,
    STORE_PARAMETER,
    RefusedYAML,
    domain_problem,
    outside_problem,
    plain_problem,
    read_yaml,
    short_list,
    short_repr,
    too_big,
    type_problem,
)
from racer_lib.errors import RacerError
from racer_lib.paper import registry

PARAMETERS_TAG = "parameters"
INJECTED_PARAMETERS = ("profile", "results_dir")
RUN_LAST = registry.RUN_LAST  # run after every other notebook of a profile
_PROFILE_KEYS = {"description", "extends", "notebooks", "requires", "on_missing", "set"}
_ON_MISSING = ("page", "error")
REQUIREMENT_KINDS = ("data", "model")
_MODELS = ("smollm2",)  # model:<name> requirements the runner knows how to look for
_SET_OPTION = "--set"  # where a value of `racer book build --set` comes from, in messages


class PipelineError(RacerError):
    """A problem with a profile, a notebook, its execution or the book build."""


@dataclass(frozen=True)
class Profile:
    """A resolved profile: ``notebooks`` maps notebook stems, in run order, to parameters."""

    name: str
    description: str
    notebooks: dict[str, dict[str, Any]]
    requires: dict[str, list[str]] = field(default_factory=dict)  # stem -> "data:X", "model:Y"
    on_missing: str = "page"  # unmet requirements: a generated page ("page") or an error
    files: dict[tuple[str, str], Path] = field(default_factory=dict)  # (stem, parameter) -> file
    #: parameters given to every notebook of the run that declares them (the profile's ``set``,
    #: then ``racer book build --set``), over the notebooks' own entries
    set_all: dict[str, Any] = field(default_factory=dict)
    #: where each name of ``set_all`` was given: a profile file, or :data:`_SET_OPTION`
    set_from: dict[str, Path | str] = field(default_factory=dict)

    def with_set(self, values: dict[str, Any]) -> Profile:
        """This profile with ``values`` set in every notebook that declares them."""
        _check_set(f"profile {self.name!r} ({_SET_OPTION})", values)
        return replace(
            self,
            set_all={**self.set_all, **values},
            set_from={**self.set_from, **dict.fromkeys(values, _SET_OPTION)},
        )


@dataclass(frozen=True)
class Folders:
    """Where a run writes, each folder ``None`` for its default under the repository root."""

    build_dir: Path | str | None = None  # <root>/build: <build_dir>/<profile>/executed, ...
    results_root: Path | str | None = None  # <root>/results: <results_root>/<profile>/<stem>
    book_out: Path | str | None = None  # <root>/book: the HTML in <book_out>/_build/html

    def layout(self, root: Path, profile: str) -> Layout:
        """The absolute paths of a run of ``profile`` in the repository ``root``."""
        return Layout(
            root=root,
            build=Path(self.build_dir or root / "build").resolve() / profile,
            results=Path(self.results_root or root / "results").resolve() / profile,
            book_out=Path(self.book_out or root / "book").resolve(),
        )


@dataclass(frozen=True)
class Layout:
    """Absolute paths of one run's inputs and outputs."""

    root: Path
    build: Path  # <build_dir>/<profile>
    results: Path  # <results_root>/<profile>
    book_out: Path  # jupyter-book --path-output; the HTML lands in <book_out>/_build/html

    @property
    def book_src(self) -> Path:
        return self.root / "book"

    @property
    def executed(self) -> Path:
        return self.build / "executed"

    @property
    def policy_store(self) -> Path:
        """``<build_dir>/policies``: the router store the chapters of every profile share
        (:mod:`racer_lib.routing.store`), passed to a notebook that declares
        :data:`STORE_PARAMETER`."""
        return self.build.parent / "policies"

    @property
    def staging(self) -> Path:
        return self.build / "book"

    @property
    def html(self) -> Path:
        return self.book_out / "_build" / "html"

    def notebook(self, stem: str) -> Path:
        """The MyST source of notebook ``stem``."""
        return self.root / "notebooks" / f"{stem}.md"

    def executed_notebook(self, stem: str, kind: str = "") -> Path:
        """The executed notebook (``kind`` "failed" or "partial" for the other states)."""
        suffix = f".{kind}.ipynb" if kind else ".ipynb"
        return self.executed / f"{stem}{suffix}"

    def results_dir(self, stem: str) -> Path:
        """The folder notebook ``stem`` writes its tables and figures into."""
        return self.results / stem


def find_root(start: Path | str | None = None) -> Path:
    """Walk up from ``start`` (default: cwd) to the folder with ``notebooks/`` and ``profiles/``."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "notebooks").is_dir() and (folder / "profiles").is_dir():
            return folder
    raise PipelineError(
        f"no repository root above {here}: expected a folder with notebooks/ and profiles/ "
        "(run from inside the repository or pass --root)"
    )


def profile_names(root: Path) -> list[str]:
    """Names of the profiles in ``root/profiles``."""
    return sorted(path.stem for path in (root / "profiles").glob("*.yaml"))


def _notebook_names(root: Path) -> list[str]:
    """Stems of the notebooks in ``root/notebooks``."""
    return sorted(path.stem for path in (root / "notebooks").glob("*.md"))


def _read_profile_file(name: str, root: Path) -> dict[str, Any]:
    path = root / "profiles" / f"{name}.yaml"
    if name not in profile_names(root):  # a plain name: never a path (../x) out of profiles/
        valid = ", ".join(profile_names(root)) or "(none)"
        raise PipelineError(
            f"unknown profile {short_repr(name)}; a profile is the plain name of a file "
            f"profiles/NAME.yaml; valid profiles: {valid}"
        )
    big = too_big(path.stat().st_size)
    if big is not None:  # refused before it is read
        raise PipelineError(f"profile {name!r}: {path} holds {big}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PipelineError(
            f"profile {name!r}: {path} is not UTF-8 text (byte {exc.start} is "
            f"{exc.object[exc.start : exc.start + 1]!r}); save it as UTF-8"
        ) from None
    try:
        data = read_yaml(text) or {}
    except RefusedYAML as exc:
        raise PipelineError(f"profile {name!r}: {path}, {exc}") from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise PipelineError(f"profile {name!r}: {path} is not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise PipelineError(f"profile {name!r}: {path} must hold a mapping")
    unknown = sorted(set(data) - _PROFILE_KEYS, key=str)
    if unknown:
        raise PipelineError(
            f"profile {name!r}: unknown key(s) {short_list(unknown)}; "
            f"allowed: {', '.join(sorted(_PROFILE_KEYS))}"
        )
    notebooks = data.get("notebooks") or {}
    if not isinstance(notebooks, dict):
        raise PipelineError(f"profile {name!r}: 'notebooks' must map notebook names to parameters")
    for stem, params in notebooks.items():
        if params is not None and not isinstance(params, dict):
            raise PipelineError(
                f"profile {name!r}: parameters of notebook {short_repr(stem)} must be a mapping"
            )
        for key, value in (params or {}).items():
            problem = plain_problem(str(key), value)
            if problem is not None:
                raise PipelineError(
                    f"profile {name!r}: {path}: notebook {short_repr(stem)}, parameter {problem}"
                )
    return data


def load_profile(name: str, root: Path, _chain: tuple[str, ...] = ()) -> Profile:
    """Load ``profiles/<name>.yaml``, resolving ``extends`` (parent notebooks first).

    A child's entry overrides its parent's parameters key by key and may add notebooks.
    Every notebook named must exist in ``notebooks/``. What a chapter requires comes from the
    chapter registry, plus the profile's own ``requires`` (for notebooks the registry lacks).
    """
    if name in _chain:
        raise PipelineError(f"profile 'extends' cycle: {' -> '.join((*_chain, name))}")
    data = _read_profile_file(name, root)
    notebooks: dict[str, dict[str, Any]] = {}
    description = str(data.get("description") or "")
    parent = data.get("extends")
    if parent is not None:
        base = load_profile(str(parent), root, (*_chain, name))
        notebooks = {stem: dict(params) for stem, params in base.notebooks.items()}
        description = description or base.description
    files = dict(base.files) if parent is not None else {}
    for stem, params in (data.get("notebooks") or {}).items():
        notebooks.setdefault(str(stem), {}).update(params or {})
        files.update({(str(stem), key): root / "profiles" / f"{name}.yaml" for key in params or {}})
    for stem in RUN_LAST:  # it reads the other chapters' results: after a child's additions too
        if stem in notebooks:
            notebooks[stem] = notebooks.pop(stem)
    requires = dict(base.requires) if parent is not None else {}
    requires.update(_read_requires(name, data.get("requires")))
    on_missing = str(data.get("on_missing") or (base.on_missing if parent is not None else "page"))
    if on_missing not in _ON_MISSING:
        raise PipelineError(
            f"profile {name!r}: on_missing is {short_repr(on_missing)}; "
            f"choose {' or '.join(_ON_MISSING)}"
        )
    stray = [stem for stem in requires if stem not in notebooks]
    if stray:
        raise PipelineError(
            f"profile {name!r}: 'requires' names notebook(s) it does not run: {short_list(stray)}"
        )

    if not notebooks and not _chain:
        raise PipelineError(
            f"profile {name!r}: {root / 'profiles' / f'{name}.yaml'} names no notebook (nor does "
            "a profile it extends), so it would run nothing; list the notebooks it runs under "
            "'notebooks:' (NAME: {parameters})"
        )
    available = set(_notebook_names(root))
    missing = [stem for stem in notebooks if stem not in available]
    if missing:
        raise PipelineError(
            f"profile {name!r} names notebook(s) not in notebooks/: {short_list(missing)}; "
            f"available: {', '.join(sorted(available)) or '(none)'}"
        )
    set_all = dict(base.set_all) if parent is not None else {}
    set_from = dict(base.set_from) if parent is not None else {}
    path = root / "profiles" / f"{name}.yaml"
    own = _check_set(f"profile {name!r}: {path}", data.get("set") or {})
    set_all.update(own)
    set_from.update(dict.fromkeys(own, path))
    return Profile(
        name,
        description,
        notebooks,
        _with_registry(requires, notebooks),
        on_missing,
        files,
        set_all,
        set_from,
    )


def _check_set(where: str, values: Any) -> dict[str, Any]:
    """A profile's ``set`` (or ``--set``): a mapping of parameter names, none the runner's own;
    ``where`` names the profile in the error."""
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        raise PipelineError(f"{where}: 'set' must map parameter names to values")
    reserved = [key for key in values if key in (*INJECTED_PARAMETERS, STORE_PARAMETER)]
    if reserved:
        raise PipelineError(
            f"{where}: 'set' gives {short_list(reserved)}; the runner sets these itself"
        )
    for key, value in values.items():
        problem = plain_problem(key, value)
        if problem is not None:
            raise PipelineError(f"{where}: 'set' gives parameter {problem}")
    return values


def _with_registry(
    requires: dict[str, list[str]], notebooks: Iterable[str]
) -> dict[str, list[str]]:
    """A profile's ``requires`` with what the chapter registry says each of its ``notebooks``
    needs (:data:`racer_lib.paper.registry.REQUIRES`) put first."""
    merged = {}
    for stem in notebooks:
        needs = list(dict.fromkeys([*registry.REQUIRES.get(stem, ()), *requires.get(stem, [])]))
        if needs:
            merged[stem] = needs
    return merged


def _read_requires(name: str, value: Any) -> dict[str, list[str]]:
    """The ``requires`` mapping of a profile file: stem -> ``kind:name`` strings, checked."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PipelineError(f"profile {name!r}: 'requires' must map notebook names to lists")
    result = {}
    for stem, needs in value.items():
        needs = [needs] if isinstance(needs, str) else needs if needs is not None else []
        if not isinstance(needs, list):
            raise PipelineError(
                f"profile {name!r}: 'requires' of {short_repr(stem)} is {short_repr(needs)}; "
                "give a list of 'data:<source>' or 'model:<name>'"
            )
        for need in needs:
            kind, _, what = str(need).partition(":")
            if kind not in REQUIREMENT_KINDS or not what:
                raise PipelineError(
                    f"profile {name!r}: requirement {short_repr(need)} of "
                    f"{short_repr(stem)} is not 'data:<source of data_manifest.yaml>' or "
                    "'model:<name>'"
                )
            if kind == "model" and what not in _MODELS:
                raise PipelineError(
                    f"profile {name!r}: unknown model {short_repr(what)} required by "
                    f"{short_repr(stem)}; known: {', '.join(_MODELS)}"
                )
        result[str(stem)] = [str(need) for need in needs]
    return result


def resolve_only(only: Iterable[str], profile: Profile) -> list[str]:
    """Map ``--only`` names (a stem or a unique prefix such as ``02``) to stems, in run order."""
    valid = list(profile.notebooks)
    chosen: set[str] = set()
    for name in only:
        matches = [name] if name in valid else [stem for stem in valid if stem.startswith(name)]
        if len(matches) != 1:
            problem = "matches several notebooks of" if matches else "is not a notebook of"
            raise PipelineError(
                f"--only {short_repr(name)} {problem} profile {profile.name!r}; "
                f"valid notebooks: {', '.join(valid)}"
            )
        chosen.add(matches[0])
    return [stem for stem in valid if stem in chosen]


@dataclass
class Prepared:
    """A notebook converted to .ipynb, checked and ready to execute."""

    stem: str
    ipynb: Path
    parameters: dict[str, Any]
    parameters_cell: int
    declared: tuple[str, ...] = ()  # the parameters its parameters cell declares


def _check_values(
    stem: str,
    given: dict[str, Any],
    defaults: dict[str, Any],
    where: Callable[[str], Path | str],
    layout: Layout,
) -> None:
    """Refuse the first parameter of ``given`` (notebook ``stem``'s) not of its default's type
    (``defaults``: name -> source text), out of its domain or naming a file or folder outside
    the repository (:mod:`racer_lib.book.parameters`), naming where it was given
    (``where(name)``: a profile file, or ``--set``). A value that is not plain data is refused
    first, whatever its default: only plain data is written into a notebook."""
    for name, value in given.items():
        problem = plain_problem(name, value)
        if problem is not None:
            raise PipelineError(f"{where(name)}: notebook {stem!r}, parameter {problem}")
        problem = type_problem(value, defaults.get(name))
        if problem is not None:
            raise PipelineError(
                f"{where(name)}: notebook {stem!r}, parameter {short_repr(name)}: {problem} in "
                f"{layout.notebook(stem)}"
            )
    found = domain_problem(given) or outside_problem(given, layout.root, layout.results_dir(stem))
    if found is not None:
        raise PipelineError(f"{where(found[0])}: notebook {stem!r}, parameter {found[1]}")


def _parameters_cell(stem: str, layout: Layout, tmp: Path) -> tuple[Path, dict[str, Any], int]:
    """Notebook ``stem`` converted to ``tmp/<stem>.ipynb``; its declared parameters (as papermill's
    ``inspect_notebook`` gives them) and the index of its parameters cell."""
    import jupytext
    import nbformat
    from papermill import inspect_notebook

    source = layout.notebook(stem)
    try:
        nb = jupytext.read(source)
    except Exception as exc:  # jupytext raises many kinds of parse errors
        raise PipelineError(f"notebook {stem!r}: cannot read {source}: {exc}") from exc
    tagged = [
        index
        for index, cell in enumerate(nb.cells)
        if PARAMETERS_TAG in cell.metadata.get("tags", [])
    ]
    if len(tagged) != 1:
        found = "no cell" if not tagged else f"{len(tagged)} cells (cells {tagged})"
        raise PipelineError(
            f"notebook {stem!r}: {found} tagged 'parameters' in {source}; exactly one is "
            "required (`:tags: [parameters]` on a code-cell)"
        )
    ipynb = tmp / f"{stem}.ipynb"
    nbformat.write(nb, ipynb)
    try:
        inspected = inspect_notebook(ipynb)
    except ValueError as exc:  # e.g. no kernelspec language in the header
        raise PipelineError(f"notebook {stem!r}: cannot read its parameters: {exc}") from exc
    return ipynb, dict(inspected), tagged[0]


def prepare(stem: str, profile: Profile, layout: Layout, tmp: Path) -> Prepared:
    """Convert one MyST notebook to ``tmp/<stem>.ipynb`` and check its parameters: declared,
    of their defaults' types, in their domains, naming no file or folder outside the repository
    (:mod:`racer_lib.book.parameters`)."""
    ipynb, inspected, cell = _parameters_cell(stem, layout, tmp)
    declared = list(inspected)
    missing = [name for name in INJECTED_PARAMETERS if name not in declared]
    if missing:
        raise PipelineError(
            f"notebook {stem!r} must declare {', '.join(missing)} in its parameters cell "
            f"(the runner always sets {' and '.join(INJECTED_PARAMETERS)}); "
            f"declared: {', '.join(declared) or '(none)'}"
        )
    given = profile.notebooks[stem]
    reserved = [name for name in given if name in (*INJECTED_PARAMETERS, STORE_PARAMETER)]
    if reserved:
        raise PipelineError(
            f"profile {profile.name!r} sets {short_list(reserved)} for notebook {stem!r}; "
            "the runner sets these itself"
        )
    undeclared = [name for name in given if name not in declared]
    if undeclared:
        raise PipelineError(
            f"profile {profile.name!r} gives notebook {stem!r} parameter(s) it does not "
            f"declare: {short_list(undeclared)}; declared parameters: {', '.join(declared)}"
        )
    given = {**given, **{k: v for k, v in profile.set_all.items() if k in declared}}

    def where(name: str) -> Path | str:
        if name in profile.set_all and name in profile.set_from:
            return profile.set_from[name]
        return profile.files.get((stem, name), f"profile {profile.name!r}")

    defaults = {name: spec.get("default") for name, spec in inspected.items()}
    _check_values(stem, given, defaults, where, layout)
    if "trainer" in declared:
        given["trainer"] = {**RUNNER_TRAINER, **(given.get("trainer") or {})}
    if STORE_PARAMETER in declared:
        given[STORE_PARAMETER] = str(layout.policy_store)
    parameters = {
        **given,
        "profile": profile.name,
        "results_dir": str(layout.results_dir(stem)),
    }
    return Prepared(stem, ipynb, parameters, cell, tuple(declared))


def check_set_declared(
    profile: Profile, prepared: Iterable[Prepared], layout: Layout, tmp: Path
) -> None:
    """Refuse a name of ``set`` that no notebook declares: of ``--set``, no notebook of the run
    (``prepared``); of a profile's ``set``, no notebook of the profile (those not run are
    inspected only if needed). One line naming the parameter, where it was given, the notebooks."""
    prepared = list(prepared)
    declared = {name for item in prepared for name in item.declared}
    unknown = [name for name in profile.set_all if name not in declared]
    if not unknown:
        return
    run = [item.stem for item in prepared]
    for name in unknown:
        if profile.set_from.get(name) == _SET_OPTION:
            raise PipelineError(
                f"{_SET_OPTION} {short_repr(name)}: no notebook of this run declares it (the run: "
                f"{', '.join(run)}); check the name"
            )
    for stem in profile.notebooks:
        if stem not in run:
            declared.update(_parameters_cell(stem, layout, tmp)[1])
    for name in unknown:
        if name not in declared:
            raise PipelineError(
                f"profile {profile.name!r}: {profile.set_from.get(name, 'set')}: 'set' gives "
                f"{short_repr(name)}, which no notebook of the profile declares (its notebooks: "
                f"{', '.join(profile.notebooks)}); check the name"
            )
