"""The executed notebook as a reader sees it: what the book shows of a papermill run.

:func:`reader_copy` turns an executed notebook into the one the book builds from, leaving the
executed file itself untouched:

- the ``parameters`` cell and papermill's ``injected-parameters`` cell are removed from the
  page, and the values the run used are shown once, as a small table (:func:`_parameters_table`)
  with the notebook's default where the run changed it and the parameter's comment;
- absolute paths of the build machine in outputs and Markdown (a generated page names the
  download cache) become relative to the repository (or ``~``);
- progress bars (tqdm's ``\\r``-redrawn lines) are dropped from the outputs;
- the paths papermill recorded (the parameters, the notebooks it read and wrote) and the
  injected parameters cell hold repository-relative paths only: the ``.ipynb`` offered for
  download carries no absolute path of the build machine.
"""

from __future__ import annotations

import ast
import html
import io
import json
import os
import re
import tokenize
from pathlib import Path
from typing import Any

PARAMETERS_TAG = "parameters"
_INJECTED_TAG = "injected-parameters"
_REMOVE_TAG = "remove-cell"
#: A tqdm progress line: "42%|████      | 21/50 [00:01<00:02, 12.3it/s]".
_PROGRESS = re.compile(r"\d+%\|.*\||\d+(?:\.\d+)?(?:it|s)/(?:s|it)\]|\| *\d+/\d+ \[")
_TEXT_MIMES = ("text/plain", "text/html", "text/markdown")


def parameter_defaults(source: str) -> dict[str, dict[str, Any]]:
    """``{name: {"default": source text of the value, "comment": its # comment}}`` of a
    parameters cell, in order."""
    tree = ast.parse(source)
    lines = source.splitlines()
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                default = ast.get_source_segment(source, node.value) or ""
                comment = comments.get(node.end_lineno or node.lineno, "")
                if (
                    not comment
                    and node.lineno > 1
                    and lines[node.lineno - 2].strip().startswith("#")
                ):
                    comment = lines[node.lineno - 2].strip().lstrip("#").strip()
                found[target.id] = {"default": default, "comment": comment}
    return found


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _shown(value: Any, root: Path | None, folders: dict[str, str] | None = None) -> str:
    if isinstance(value, str):
        return json.dumps(relative_paths(value, root, folders))
    return json.dumps(value)


def _parameters_table(
    source: str,
    used: dict[str, Any],
    root: Path | None = None,
    profile: str = "",
    folders: dict[str, str] | None = None,
) -> str:
    """Markdown (an HTML table) listing every parameter with the value this run used."""
    rows = []
    for name, info in parameter_defaults(source).items():
        default = _literal(info["default"])
        value = used.get(name, default)
        changed = name in used and value != default and name not in ("profile", "results_dir")
        note = f" (notebook default {_shown(default, root, folders)})" if changed else ""
        rows.append(
            f"<tr><td><code>{html.escape(name)}</code></td>"
            f"<td><code>{html.escape(_shown(value, root, folders))}</code>{html.escape(note)}</td>"
            f"<td>{html.escape(info['comment'])}</td></tr>"
        )
    run = f" (profile <code>{html.escape(profile)}</code>)" if profile else ""
    return (
        f"**Parameters of this run**{run.replace('<code>', '`').replace('</code>', '`')}. "
        "Another value re-runs the chapter with it: see {doc}`../rerun`.\n\n"
        '<table class="racer-parameters"><thead><tr><th>parameter</th><th>value</th>'
        "<th>meaning</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>\n"
    )


def _shown_folders(
    root: Path | None, folders: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """``(absolute folder, as shown)`` pairs, longest first: ``folders`` (e.g. a results folder
    outside the repository, shown as ``results``), the data mirror and caches named by their
    environment variables, the repository as relative paths, the home folder as ``~``."""
    from racer_lib.records.sources import ENV_CACHE_DIR, ENV_DATA_DIR

    pairs = [(str(Path(a).resolve()), shown) for a, shown in (folders or {}).items()]
    for env in (ENV_DATA_DIR, ENV_CACHE_DIR):
        if os.environ.get(env):
            pairs.append((str(Path(os.environ[env]).resolve()), f"${env}"))
    if root is not None:
        pairs.append((str(Path(root).resolve()), "."))
    if len(str(Path.home())) > 1:
        pairs.append((str(Path.home()), "~"))
    return sorted(pairs, key=lambda p: -len(p[0]))


def relative_paths(text: str, root: Path | None, folders: dict[str, str] | None = None) -> str:
    """``text`` with absolute paths of the build machine made relative (:func:`_shown_folders`):
    ``<repo>/results/x.csv`` -> ``results/x.csv``, the mirror -> ``$RACER_DATA_DIR``."""
    for folder, shown in _shown_folders(root, folders):
        text = text.replace(folder + os.sep, "" if shown == "." else shown + os.sep)
        text = re.sub(re.escape(folder) + r"(?![\w.-])", shown.replace("\\", "\\\\"), text)
    return text


def without_progress(text: str) -> str:
    """``text`` without tqdm's progress lines (each redraw ends in ``\\r``)."""
    kept = []
    for line in text.split("\n"):
        last = line.split("\r")[-1] if "\r" in line else line
        if "\r" in line or _PROGRESS.search(last):
            continue
        kept.append(line)
    return "\n".join(kept)


def _merged_streams(outputs: list) -> list:
    """``outputs`` with each run of stream outputs of one stream (``stdout``, ``stderr``) joined
    into one: a shell cell's output arrives in chunks that may cut a path (or a line) in two,
    which would then escape :func:`relative_paths` and show as broken lines."""
    merged: list = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
        ):
            text = output.get("text", "")
            before = last.get("text", "")
            last["text"] = ("".join(before) if isinstance(before, list) else before) + (
                "".join(text) if isinstance(text, list) else text
            )
            continue
        merged.append(output)
    return merged


def _clean_output(output: dict, root: Path | None, folders: dict[str, str] | None) -> dict | None:
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        text = "".join(text) if isinstance(text, list) else text
        text = relative_paths(without_progress(text), root, folders)
        if not text.strip():
            return None
        output["text"] = text
    elif output.get("output_type") == "error":
        output["evalue"] = relative_paths(str(output.get("evalue", "")), root, folders)
        output["traceback"] = [
            relative_paths(t, root, folders) for t in output.get("traceback", [])
        ]
    for mime in _TEXT_MIMES:
        data = output.get("data", {})
        if mime in data:
            value = data[mime]
            value = "".join(value) if isinstance(value, list) else value
            data[mime] = relative_paths(value, root, folders)
    return output


#: A glued value in Markdown, ``{glue:text}`name:.1f``` (MyST-NB's glue roles).
_GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)(?::[^`]*)?`")
#: What the page says in place of a value the run did not glue (a sentence about an input the
#: profile left out, such as chapter 03's panel (b) without chapter 08's results).
NOT_GLUED = "*(not computed in this run)*"


def glued_names(nb: Any) -> set[str]:
    """The names the executed notebook ``nb`` glued (MyST-NB's ``scrapbook`` output metadata)."""
    return {
        output.get("metadata", {}).get("scrapbook", {}).get("name")
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    } - {None}


def _not_glued(markdown: str, glued: set[str]) -> str:
    """``markdown`` with every glue role whose name the run did not glue replaced by
    :data:`NOT_GLUED` (the book build would otherwise stop on the missing name)."""
    return _GLUE_ROLE.sub(lambda m: m.group(0) if m.group(1) in glued else NOT_GLUED, markdown)


def reader_copy(nb: Any, root: Path | None = None, folders: dict[str, str] | None = None) -> Any:
    """The notebook the book shows (see the module docstring); ``nb`` is an nbformat node,
    changed in place and returned. ``folders``: other absolute folders and how to show them
    (a results or build folder outside the repository)."""
    import nbformat

    used = dict(nb.metadata.get("papermill", {}).get("parameters", {}) or {})
    glued = glued_names(nb)
    cells = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code":
            if PARAMETERS_TAG in tags:
                profile = str(used.get("profile", ""))
                table = _parameters_table(cell.source, used, root, profile, folders)
                cell.metadata["tags"] = [*tags, _REMOVE_TAG]
                cells.append(cell)
                cells.append(nbformat.v4.new_markdown_cell(table))
                continue
            if _INJECTED_TAG in tags:
                cell.metadata["tags"] = [*tags, _REMOVE_TAG]
                cell.outputs = []
            cell.outputs = [
                o
                for o in (
                    _clean_output(o, root, folders)
                    for o in _merged_streams(cell.get("outputs", []))
                )
                if o
            ]
        elif cell.cell_type == "markdown":  # e.g. the page of a chapter that could not run
            cell.source = _not_glued(relative_paths(cell.source, root, folders), glued)
        cells.append(cell)
    nb.cells = cells
    _relative_metadata(nb, root, folders)
    return nb


def _relative_strings(value: Any, root: Path | None, folders: dict[str, str] | None) -> Any:
    """``value`` (JSON: mappings, lists, strings) with every string's absolute paths made
    relative (:func:`relative_paths`)."""
    if isinstance(value, str):
        return relative_paths(value, root, folders)
    if isinstance(value, list):
        return [_relative_strings(item, root, folders) for item in value]
    if isinstance(value, dict):
        return {key: _relative_strings(item, root, folders) for key, item in value.items()}
    return value


def _relative_metadata(nb: Any, root: Path | None, folders: dict[str, str] | None) -> None:
    """The paths of the build machine in what papermill recorded (the parameters, the input
    and output notebooks) and in the injected parameters cell, made relative to the repository
    (:func:`relative_paths`): the ``.ipynb`` offered for download holds no absolute path of
    the machine. The notebook papermill read (a temporary copy) is named by its source,
    ``notebooks/<stem>.md``."""
    papermill = nb.metadata.get("papermill")
    if isinstance(papermill, dict):
        papermill = _relative_strings(dict(papermill), root, folders)
        source = papermill.get("input_path")
        if isinstance(source, str) and os.path.isabs(source):
            papermill["input_path"] = f"notebooks/{Path(source).stem}.md"
        nb.metadata["papermill"] = papermill
    for cell in nb.cells:
        if cell.cell_type == "code" and _INJECTED_TAG in cell.metadata.get("tags", []):
            cell.source = relative_paths(cell.source, root, folders)


def write_reader_copy(
    executed: str | os.PathLike,
    dest: str | os.PathLike,
    root: Path,
    folders: dict[str, str] | None = None,
) -> Path:
    """Read an executed notebook, write its reader's copy to ``dest``; one that cannot be read
    (damaged meanwhile) is a :class:`~racer_lib.book.profiles.PipelineError` naming it."""
    import nbformat

    from racer_lib.book.profiles import PipelineError

    try:
        nb = nbformat.read(executed, as_version=4)
    except Exception as exc:  # OSError, nbformat's NotJSONError, a reader's error
        problem = " ".join(str(exc).split())[:80] or type(exc).__name__
        raise PipelineError(
            f"{executed}: not a readable executed notebook ({problem}); run its chapter again "
            f"(racer book build --only {Path(executed).stem})"
        ) from None
    nbformat.write(reader_copy(nb, root, folders), dest)
    return Path(dest)
