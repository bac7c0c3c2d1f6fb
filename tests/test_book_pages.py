"""What the book shows of a run (issue 15): the reader's copy of an executed notebook
(racer_lib.book.staging), and the captioned figures and compact tables (racer_lib.book.page, via
racer_lib.book.chapter.show / save_figure)."""

import base64
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import nbformat
import numpy as np
import pandas as pd
import pytest

from racer_lib.book import chapter, page, staging

PARAMETERS = (
    'profile = "sim"  # set by the runner\n'
    'results_dir = "results/sim/05_x"  # set by the runner\n'
    "budgets = [2.0, 4.0]  # budgets C in cost units\n"
    "# the number of training runs per budget\n"
    "n_seeds = 3\n"
)


def _executed(root):
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {
        "parameters": {
            "profile": "smoke",
            "results_dir": f"{root}/results/smoke/05_x",
            "budgets": [3.0],
        }
    }
    params = nbformat.v4.new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]})
    injected = nbformat.v4.new_code_cell(
        f'budgets = [3.0]\nresults_dir = "{root}/results/smoke/05_x"\n',
        metadata={"tags": ["injected-parameters"]},
    )
    work = nbformat.v4.new_code_cell("run()")
    work.outputs = [
        nbformat.v4.new_output(
            "stream", name="stderr", text="train:  50%|#####     | 1/2 [00:01<00:01, 1.0it/s]\r"
        ),
        nbformat.v4.new_output("stream", name="stdout", text=f"wrote {root}/results/a.csv\n"),
        nbformat.v4.new_output("display_data", data={"text/html": f"<p>{root}/results</p>"}),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), params, injected, work]
    return nb


def test_reader_copy_hides_parameter_cells_and_shows_the_values_once(tmp_path):
    root = tmp_path / "repo"
    nb = staging.reader_copy(_executed(root), root)
    kinds = [(c.cell_type, c.metadata.get("tags", [])) for c in nb.cells]
    assert kinds[1] == ("code", ["parameters", "remove-cell"])
    assert kinds[2][0] == "markdown"  # the table of values, right after the hidden cell
    assert kinds[3] == ("code", ["injected-parameters", "remove-cell"])
    table = nb.cells[2].source
    assert "<code>[3.0]</code> (notebook default [2.0, 4.0])" in table
    assert "<code>3</code>" in table and "the number of training runs per budget" in table
    assert "<code>&quot;results/smoke/05_x&quot;</code>" in table  # relative, no default note
    assert str(root) not in table and "profile `smoke`" in table


def test_reader_copy_drops_progress_and_makes_paths_relative(tmp_path, monkeypatch):
    monkeypatch.delenv("RACER_DATA_DIR", raising=False)
    root = tmp_path / "repo"
    outputs = staging.reader_copy(_executed(root), root).cells[-1].outputs
    assert [o.get("name") for o in outputs] == ["stdout", None]  # the progress bar is gone
    assert outputs[0]["text"] == "wrote results/a.csv\n"
    assert outputs[1]["data"]["text/html"] == "<p>results</p>"
    nb = _executed(root)
    nb.cells[0].source = f"Not run: the files are not in the cache {Path.home()}/.cache/racer"
    shown = staging.reader_copy(nb, root).cells[0].source
    assert shown == "Not run: the files are not in the cache ~/.cache/racer"


def test_relative_paths_names_the_mirror_by_its_variable(tmp_path, monkeypatch):
    mirror = tmp_path / "shared" / "data"
    monkeypatch.setenv("RACER_DATA_DIR", str(mirror))
    text = f"read {mirror}/llmbar/x.json; repo {tmp_path}/repo; not {tmp_path}/repository"
    shown = staging.relative_paths(text, tmp_path / "repo")
    assert shown == f"read $RACER_DATA_DIR/llmbar/x.json; repo .; not {tmp_path}/repository"


def test_without_progress_keeps_other_lines():
    text = "loading\n 10%|#         | 1/10 [00:00<00:01]\rdone 10/10\nfinished\n"
    assert staging.without_progress(text) == "loading\nfinished\n"


def test_parameter_defaults_reads_values_and_comments():
    found = staging.parameter_defaults(PARAMETERS)
    assert list(found) == ["profile", "results_dir", "budgets", "n_seeds"]
    assert found["budgets"] == {"default": "[2.0, 4.0]", "comment": "budgets C in cost units"}
    assert found["n_seeds"]["comment"] == "the number of training runs per budget"


def test_table_html_formats_collapses_and_offers_the_csv(tmp_path):
    frame = pd.DataFrame(
        {
            "method": [f"m{i}" for i in range(20)],
            "accuracy": np.linspace(50, 70, 20),
            "n": range(20),
            "ok": [True] * 20,
        }
    )
    frame.loc[3, "accuracy"] = np.nan
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    html = page.table_html(frame, "5.2", "Some rows.", "simulated", page.TableLayout(1, csv=csv))
    assert "Table 5.2." in html and "Simulated records" in html
    assert "Show all 20 rows" in html and "<details>" in html
    assert ">51.1<" in html and ">–<" in html and ">yes<" in html  # 1 decimal, NaN, bool
    encoded = html.split("data:text/csv;base64,")[1].split('"')[0]
    assert base64.b64decode(encoded) == csv.read_bytes()
    short = page.table_html(frame.head(3), "5.3", "Few rows.", None)
    assert "<details>" not in short and "racer-provenance" in short and ">51.05<" in short


@pytest.fixture
def displayed(monkeypatch):
    """The HTML of every object ``IPython.display.display`` is given, in order."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **_: shown.extend(objs))
    return shown


def test_show_displays_each_table_itself_and_returns_nothing(tmp_path, displayed):
    """Two tables in one cell: both appear, numbered in order, and no returned object would
    be echoed by the cell (the defect of issue 42: only a cell's last table rendered)."""
    chapter.setup(tmp_path / "07_beta")
    table = pd.DataFrame({"x": [1.0, 2.0]})
    assert chapter.show(table, "First.") is None
    assert chapter.show(table, "Second.") is None
    assert chapter.show_html("<table></table>", "Third.") is None
    assert ["Table 7.1." in displayed[0].data, "Table 7.2." in displayed[1].data] == [True, True]
    assert "Table 7.3." in displayed[2].data and len(displayed) == 3
    assert "Table 7.4." in chapter.render(table, "Composed, not displayed.").data
    assert len(displayed) == 3


def test_show_moves_a_single_provenance_column_into_the_caption(tmp_path):
    chapter.setup(tmp_path / "07_beta")
    table = pd.DataFrame({"provenance": ["release", "release"], "x": [1.0, 2.0]})
    first = chapter.render(table, "Two rows.").data
    second = chapter.render(table.assign(provenance=["release", "simulated"]), "Mixed.").data
    assert "Table 7.1." in first and "Real judges" in first and ">provenance<" not in first
    assert "Table 7.2." in second and ">provenance<" in second  # two values: kept as a column


def test_save_figure_shows_a_numbered_captioned_figure(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = chapter.setup(tmp_path / "results" / "05_frontier")
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([0, 1], [1, 2])
    ax.set_title("title", fontsize=11)
    with pytest.raises(ValueError, match="needs a caption and an alt text"):
        chapter.save_figure(fig, out / "a.png", "simulated", caption="")
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([0, 1], [1, 2])
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kw: shown.append(obj.data))
    returned = chapter.save_figure(
        fig, out / "b.png", "simulated", caption="A line.", alt="One rising line.", paper="Fig. 4"
    )
    assert returned is None  # a cell ending with it echoes no PosixPath(...) (issue 42)
    printed = capsys.readouterr().out
    assert "wrote results/05_frontier/b.png" in printed and str(tmp_path) not in printed
    html = shown[-1]
    assert "Figure 5.1." in html and "Regenerates the paper's Fig. 4." in html
    assert 'alt="One rising line."' in html and "Simulated records" in html
    width, _ = page.png_size(out / "b.png")
    dpi = plt.rcParams["savefig.dpi"]
    assert f'data-width-px="{round(width * 96 / dpi)}"' in html
    assert 'data-font-pt="' in html and os.path.exists(out / "b.png")


def test_smallest_font_reads_the_figure_texts():
    fig, ax = plt.subplots()
    ax.set_title("t", fontsize=13)
    ax.tick_params(labelsize=8.5)
    ax.set_xlabel("x", fontsize=12)
    assert page.smallest_font(fig) == 8.5
    plt.close(fig)


def test_rerun_page_marks_chapters_absent_from_the_build():
    from racer_lib.book import build

    text = (
        "| chapter | parameter |\n|---|---|\n| Fig. 2 (`04_reasoning_vs_instruct`) | `judges` |\n"
        "| | `scale` |\n| Theory (`05_dro_theory`) | `sizes` |\n"
    )
    marked = build.mark_absent_chapters(text, {"04_reasoning_vs_instruct"})
    assert "| Theory (`05_dro_theory`) *(not in this build)* | `sizes` |" in marked
    assert "| Fig. 2 (`04_reasoning_vs_instruct`) | `judges` |" in marked


def test_citation_page_gives_bibtex_for_the_paper_and_the_companion(tmp_path):
    from racer_lib.book import cite

    cff = tmp_path / "CITATION.cff"
    cff.write_text(
        "cff-version: 1.2.0\nmessage: Cite both.\ntitle: my-companion\nversion: 1.2.0\n"
        "date-released: 2026-01-02\nlicense: MIT\nrepository-code: https://example.org/repo\n"
        "authors:\n  - name: the team\npreferred-citation:\n  type: conference-paper\n"
        "  title: A Paper About Routing\n  year: 2026\n  collection-title: Proc. X\n"
        "  url: https://example.org/paper\n  authors:\n    - family-names: Doe\n"
        "      given-names: Jane\n    - family-names: Roe\n      given-names: Rick\n"
    )
    text = cite.citation_page(cff, commit="abc123")
    assert "@inproceedings{doe2026paper," in text
    assert "author = {Doe, Jane and Roe, Rick}" in text and "booktitle = {Proc. X}" in text
    assert "@software{" in text and "author = {{the team}}" in text
    assert (
        "note = {version 1.2.0, commit abc123}" in text
        and "url = {https://example.org/repo}" in text
    )
    assert "the paper: <https://example.org/paper>" in text and "built from commit `abc123`" in text
    bad = tmp_path / "bad.cff"
    bad.write_text("- a list\n")
    with pytest.raises(cite.InputError, match="bad.cff: not a citation file"):
        cite.citation_page(bad)


def test_reader_copy_shows_outside_results_folders_as_the_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("RACER_DATA_DIR", raising=False)
    root, elsewhere = tmp_path / "repo", tmp_path / "scratch" / "results" / "smoke"
    nb = _executed(root)
    nb.cells[-1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=f"wrote {elsewhere}/05_x/a.csv\n")
    ]
    nb.metadata["papermill"]["parameters"]["results_dir"] = f"{elsewhere}/05_x"
    out = staging.reader_copy(nb, root, {elsewhere: "results/smoke"})
    assert out.cells[-1].outputs[0]["text"] == "wrote results/smoke/05_x/a.csv\n"
    assert str(tmp_path) not in out.cells[2].source


def test_reader_copy_joins_a_shell_cells_chunks_before_making_paths_relative(tmp_path, monkeypatch):
    """A ``%%bash`` cell's output arrives in chunks that may cut a path in two (chapter 17's
    page showed the build machine's results folder so): they are joined first."""
    monkeypatch.delenv("RACER_DATA_DIR", raising=False)
    root, elsewhere = tmp_path / "repo", tmp_path / "scratch" / "results" / "smoke"
    nb = _executed(root)
    line = f"wrote {elsewhere}/17_x/router.pt\n"
    cut = len(line) // 2
    nb.cells[-1].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=line[:cut]),
        nbformat.v4.new_output("stream", name="stdout", text=line[cut:]),
        nbformat.v4.new_output("stream", name="stderr", text="a note\n"),
    ]
    out = staging.reader_copy(nb, root, {elsewhere: "results/smoke"}).cells[-1].outputs
    assert [o["name"] for o in out] == ["stdout", "stderr"]
    assert out[0]["text"] == "wrote results/smoke/17_x/router.pt\n"


def test_every_provenance_kind_has_a_stamp_and_a_caption_line():
    from racer_lib.paper import plots

    assert set(plots.STAMPS) == set(plots.CAPTION_LINES)
    for kind, line in plots.CAPTION_LINES.items():
        assert page.provenance_line(kind) == line


def test_show_html_numbers_and_captions_a_rendered_table(tmp_path, displayed):
    chapter.setup(tmp_path / "02_judging")
    chapter.show_html("<table><tr><td>$x$</td></tr></table>", "Quoted.", "generated", True)
    (html,) = displayed
    assert html.data.startswith('<div class="racer-table racer-verbatim" id="table-2-1">')
    assert "Table 2.1." in html.data and "Real judge outputs" in html.data
    assert html.data.endswith("<table><tr><td>$x$</td></tr></table></div>")


def test_reader_copy_marks_values_the_run_did_not_glue():
    """A sentence whose value the run did not glue (an input the profile left out) says so on
    the page instead of stopping the book build; glued values stay glue roles."""
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("prose.glue('a', ...)")
    code.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"text/plain": "1.5"}, metadata={"scrapbook": {"name": "a"}}
        )
    ]
    nb.cells = [
        code,
        nbformat.v4.new_markdown_cell("A is {glue:text}`a:.1f`, B {glue:text}`b:.0f`."),
    ]
    assert staging.glued_names(nb) == {"a"}
    staging.reader_copy(nb)
    assert nb.cells[1].source == f"A is {{glue:text}}`a:.1f`, B {staging.NOT_GLUED}."


def test_a_table_shows_no_signed_zero_and_p_values_as_such():
    """A nonzero value that would read 0.00 gets significant digits; -0.0 reads 0.00; a p
    column reads "< 0.001" rather than "0.00" (issue 42)."""
    frame = pd.DataFrame({"effect": [-0.0031, -0.0, 1.234], "p": [0.0002, 0.0025, 0.37]})
    shown = page.formatted(frame)
    assert list(shown["effect"]) == ["-0.0031", "0.00", "1.23"]
    assert list(shown["p"]) == ["< 0.001", "0.003", "0.37"]
