"""The project's layout keeps its promises: notebooks stay thin, modules and functions stay small,
the layers hold, every module is documented.

A chapter's logic belongs in ``racer_lib``, where it is tested once; these checks fail as soon
as a notebook grows a long cell, a function of its own or a result sentence built in Python, a
module or a function outgrows its limit (issue 21), an import runs up the layers, or a module
is added without a line in the README's layout table and in the package docstring.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import racer_lib

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.md"))
PACKAGE = ROOT / "racer_lib"
#: Issue 21's limits: no code cell over 30 lines, 1,200 lines of notebook code in all
#: (captions and glue calls included).
MAX_CELL_LINES = 30
MAX_TOTAL_LINES = 1200
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def code_lines(cell: str) -> list[str]:
    """A cell's lines of code: no blank lines, comments or cell options (``:tags:``)."""
    return [
        line
        for line in cell.splitlines()
        if line.strip() and not line.strip().startswith("#") and not line.startswith(":")
    ]


def cells(notebook: Path) -> list[str]:
    return CODE_CELL.findall(notebook.read_text())


def test_code_lines_skip_blanks_comments_and_options():
    cell = ":tags: [parameters]\n\n# a comment\nx = 1  # counted\n  # indented comment\ny = 2\n"
    assert code_lines(cell) == ["x = 1  # counted", "y = 2"]
    text = "text\n```{code-cell} ipython3\na = 1\n```\nmore\n```{code-cell}\nb = 2\n```\n"
    assert CODE_CELL.findall(text) == ["a = 1\n", "b = 2\n"]


def test_every_notebook_has_code_a_page_and_a_place_in_the_default_build():
    import yaml

    assert NOTEBOOKS and all(cells(nb) for nb in NOTEBOOKS)
    toc = (ROOT / "book" / "_toc.yml").read_text()
    sim = yaml.safe_load((ROOT / "profiles" / "sim.yaml").read_text())["notebooks"]
    for nb in NOTEBOOKS:
        assert f"- file: notebooks/{nb.stem}\n" in toc, f"book/_toc.yml lacks {nb.stem}"
        assert nb.stem in sim, f"profiles/sim.yaml does not run {nb.stem}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_cells_are_short_and_define_nothing(notebook):
    for i, cell in enumerate(cells(notebook)):
        n = len(code_lines(cell))
        assert n <= MAX_CELL_LINES, f"{notebook.name}: code cell {i} has {n} lines of code"
        # IPython magics are not Python: a line magic's line is skipped, and a cell magic's
        # cell (%%bash: shell commands a reader pastes) defines no Python
        if any(line.startswith("%%") for line in cell.splitlines()[:3]):
            continue
        source = "\n".join(line for line in cell.splitlines() if not line.startswith((":", "%")))
        tree = ast.parse(source, filename=f"{notebook.name} cell {i}")
        defined = [
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ]
        assert not defined, f"{notebook.name}: code cell {i} defines {defined}; move to racer_lib"


def test_notebook_code_stays_under_the_total():
    total = sum(len(code_lines(c)) for nb in NOTEBOOKS for c in cells(nb))
    assert total <= MAX_TOTAL_LINES, f"the notebooks hold {total} lines of code"


def modules() -> list[str]:
    """Every module of racer_lib as a path below it (``records/schema``, ``cli``), packages by
    their folder, ``__main__`` and ``__init__`` files aside."""
    out = set()
    for p in PACKAGE.rglob("*.py"):
        rel = p.relative_to(PACKAGE).with_suffix("")
        if rel.name == "__init__":
            out.add(rel.parent.as_posix())
        elif not rel.name.startswith("_"):
            out.add(rel.as_posix())
    out.discard(".")
    return sorted(out)


def test_modules_are_found():
    assert {"records/schema", "judging/run", "paper/chapters/budget_frontier", "cli"} <= set(
        modules()
    )


def _readme_row(folder: str) -> str:
    readme = (ROOT / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith(f"| `racer_lib/{folder}` |")]
    assert rows, f"README's layout table has no row `racer_lib/{folder}`"
    return rows[0]


@pytest.mark.parametrize("module", modules())
def test_every_module_is_listed_in_the_readme_and_its_package_docstring(module):
    """README's layout table has a row per package (``racer_lib/records/``) naming each of its
    modules; the package's docstring names each module too."""
    folder, _, name = module.rpartition("/")
    if (PACKAGE / module / "__init__.py").exists():  # a package: a row of its own
        _readme_row(module + "/")
        folder, name = module.rpartition("/")[0], module.rpartition("/")[2]
    row = _readme_row(folder + "/" if folder else "")
    assert f"`{name}`" in row, f"README's row racer_lib/{folder} does not list {name}"
    doc = (PACKAGE / folder / "__init__.py").read_text() if folder else racer_lib.__doc__
    assert f"{name}" in doc, f"the docstring of racer_lib/{folder} does not name {name}"


#: The subpackages a practitioner imports from (issue 29): each says what it exports.
PUBLIC_PACKAGES = ("records", "judging", "routing", "evaluation")


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_a_public_package_exports_what_a_user_imports(package):
    """``__all__`` of ``racer_lib.<package>``: every name resolves to an object defined in a
    module of the package (or a layer below), public, and ``dir()`` lists it."""
    import importlib
    import inspect

    mod = importlib.import_module(f"racer_lib.{package}")
    names = mod.__all__
    assert names and len(set(names)) == len(names) and not any(n.startswith("_") for n in names)
    for name in names:
        obj = getattr(mod, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):  # defined here, not re-exported
            assert obj.__module__.startswith("racer_lib."), (package, name, obj.__module__)
        assert name in dir(mod), (package, name)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mod.no_such_name  # noqa: B018


# --- the library: small modules and functions, layers that hold (issue 21) ------------------
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 8
#: Functions allowed past MAX_FUNCTION_LINES: argparse declarations (one add_argument a line).
ARGPARSE = re.compile(r"^_?(add|build|make)_.*(parser|arguments?)$|^_add_")


def library_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def functions(path: Path):
    """Every function of ``path`` (nested ones too) as ``(qualified name, node)``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((prefix + child.name, child))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(tree, "")
    return out


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_no_module_over_the_line_limit():
    long = {
        _rel(p): n
        for p in library_modules()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_the_line_limit():
    long = [
        f"{_rel(p)}:{node.lineno} {name} ({node.end_lineno - node.lineno + 1} lines)"
        for p in library_modules()
        for name, node in functions(p)
        if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
        and not ARGPARSE.match(name.rsplit(".", 1)[-1])
    ]
    assert not long, "functions over the limit:\n" + "\n".join(long)


def test_no_public_function_takes_more_than_eight_parameters():
    """A function with more settings takes the dataclass that carries them (``RunSpec``,
    ``PolicyConfig``, ``TrainSettings``, ``Profile``, ...)."""
    wide = []
    for p in library_modules():
        for name, node in functions(p):
            if any(part.startswith("_") for part in name.split(".")):
                continue
            a = node.args
            n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
            n -= bool(a.args) and a.args[0].arg in ("self", "cls")
            if n > MAX_PARAMETERS:
                wide.append(f"{_rel(p)}:{node.lineno} {name} ({n} parameters)")
    assert not wide, "public functions over 8 parameters:\n" + "\n".join(wide)


def test_the_limit_checks_see_what_they_count():
    src = "def f(a, b):\n" + "    x = 1\n" * 90 + "class C:\n    def g(self):\n        pass\n"
    path = ROOT / "build" / "layout_probe.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(src)
    try:
        found = {name: node.end_lineno - node.lineno + 1 for name, node in functions(path)}
    finally:
        path.unlink()
    assert found == {"f": 91, "C.g": 2}
    assert ARGPARSE.match("_add_run") and not ARGPARSE.match("run_profile")


def _lint_imports(package_root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with this checkout's contracts on the ``racer_lib`` under ``package_root``
    (``PYTHONPATH``)."""
    exe = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    return subprocess.run(
        [str(exe), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=package_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_layers_contract_holds_and_fails_on_an_upward_import(tmp_path):
    """The import-linter contract of ``make lint`` passes on the library and fails, naming the
    import, when a records module imports from the book (a copy of the package is changed)."""
    if not Path(sys.executable).with_name("lint-imports").exists():
        pytest.skip("import-linter is not installed (make installs it with the test extra)")
    assert _lint_imports(ROOT).returncode == 0
    shutil.copytree(PACKAGE, tmp_path / "racer_lib", ignore=shutil.ignore_patterns("__pycache__"))
    schema = tmp_path / "racer_lib" / "records" / "schema.py"
    schema.write_text(schema.read_text() + "\nfrom racer_lib.book import chapter  # noqa\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "racer_lib.records is not allowed to import racer_lib.book" in broken.stdout
    assert "racer_lib.records.schema -> racer_lib.book.chapter" in broken.stdout


def test_every_subpackage_is_a_layer_of_the_contract():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    subpackages = {f"racer_lib.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages <= set(layers), f"not in the layers contract: {subpackages - set(layers)}"


def test_no_import_cycle_between_modules():
    """No two modules of racer_lib import each other, directly or through others (the graph
    of module imports, ``TYPE_CHECKING`` blocks aside, has no cycle)."""
    import grimp

    graph = grimp.build_graph("racer_lib", exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    cycles = [
        (a, b)
        for a in modules
        for b in graph.find_modules_directly_imported_by(a)
        if b != a and graph.chain_exists(importer=b, imported=a)
    ]
    assert not cycles, f"import cycles through: {cycles[:5]}"


# --- notebooks: result sentences are Markdown ------------------------------------------------

BUILT_SENTENCE = re.compile(r"prose\.say\(|\bMarkdown\(|display_markdown\(")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_result_sentence_is_built_in_python(notebook):
    built = [c for c in cells(notebook) if BUILT_SENTENCE.search(c)]
    assert not built, f"{notebook.name} builds Markdown in Python: {built[0][:200]!r}"


def test_the_chapters_contract_fails_when_one_chapter_imports_another(tmp_path):
    if not Path(sys.executable).with_name("lint-imports").exists():
        pytest.skip("import-linter is not installed (make installs it with the test extra)")
    shutil.copytree(PACKAGE, tmp_path / "racer_lib", ignore=shutil.ignore_patterns("__pycache__"))
    module = tmp_path / "racer_lib" / "paper" / "chapters" / "llama_family.py"
    module.write_text(
        module.read_text() + "\nfrom racer_lib.paper.chapters import budget_frontier  # noqa\n"
    )
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "racer_lib.paper.chapters.llama_family is not allowed to import" in broken.stdout


def test_the_report_contract_fails_when_a_chapter_imports_the_report(tmp_path):
    """Issue 40: a chapter decides its claims with the engine; one that imports the
    report (as chapters 08, 09 and 12 did) breaks the contract, named."""
    if not Path(sys.executable).with_name("lint-imports").exists():
        pytest.skip("import-linter is not installed (make installs it with the test extra)")
    shutil.copytree(PACKAGE, tmp_path / "racer_lib", ignore=shutil.ignore_patterns("__pycache__"))
    module = tmp_path / "racer_lib" / "paper" / "chapters" / "beta_sensitivity.py"
    module.write_text(module.read_text() + "\nfrom racer_lib.paper import report  # noqa\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "no chapter imports the reproduction report BROKEN" in broken.stdout
