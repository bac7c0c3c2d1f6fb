"""racer_lib.book.chapter and the table helpers of racer_lib.paper.plots that every chapter uses."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from racer_lib.book import chapter, page
from racer_lib.paper import plots  # noqa: E402


def test_setup_makes_the_folder_and_pins_threads(tmp_path):
    import torch

    before = torch.get_num_threads()
    try:
        out = chapter.setup(tmp_path / "a" / "b", torch_threads=1)
        assert out.is_dir() and out == tmp_path / "a" / "b"
        assert torch.get_num_threads() == 1
        assert plt.rcParams["savefig.dpi"] == 150  # the book's style is in force
    finally:
        torch.set_num_threads(before)


def test_combined_provenance():
    assert chapter.combined_provenance(["simulated", "simulated"]) == "simulated"
    assert chapter.combined_provenance(["simulated", "release"]) == "mixed"
    assert chapter.combined_provenance([]) == "mixed"


def test_save_table_puts_provenance_and_columns_first(tmp_path, capsys):
    path = tmp_path / "t.csv"
    written = chapter.save_table([{"a": 1, "b": 2.5}], path, "simulated", split_by="random")
    assert f"wrote {path}" in capsys.readouterr().out
    assert list(written.columns) == ["provenance", "split_by", "a", "b"]
    back = pd.read_csv(path)
    assert back.to_dict("records") == [
        {"provenance": "simulated", "split_by": "random", "a": 1, "b": 2.5}
    ]
    frame = pd.DataFrame({"x": [1, 2]})
    chapter.save_table(frame, tmp_path / "u.csv")  # no provenance: written as given
    assert list(frame.columns) == ["x"]  # the caller's frame is not changed
    assert pd.read_csv(tmp_path / "u.csv").columns.tolist() == ["x"]


def test_save_figure_stamps_and_writes(tmp_path, capsys):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    path = chapter.save_figure(fig, tmp_path / "f" / "fig.png", "simulated", show=False)
    assert path.is_file() and path.stat().st_size > 0
    assert "wrote" in capsys.readouterr().out
    assert any(plots.STAMPS["simulated"] in t.get_text() for t in fig.texts)
    plt.close(fig)


def test_random_instances_have_their_own_stamp_and_caption_line(tmp_path):
    """A figure of random synthetic instances (chapter 05's theorem checks) is stamped and
    captioned as such, not as judge records of any kind."""
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    chapter.save_figure(fig, tmp_path / "fig.png", "random instances", show=False)
    (text,) = [t.get_text() for t in fig.texts]
    assert text == plots.STAMPS["random instances"] and "random" in text
    assert text not in {plots.STAMPS[k] for k in ("simulated", "release", "generated")}
    line = page.provenance_line("random instances")
    assert "Random" in line and not line.startswith("Records:")  # not the generic fallback
    plt.close(fig)


def test_mean_sd_and_paper_value():
    assert plots.mean_sd(85.4567, 0.123) == "85.5 ± 0.1"
    assert plots.mean_sd(85.4567, 0.123, digits=2) == "85.46 ± 0.12"
    assert plots.mean_sd(85.4567, math.nan) == "85.5"  # one seed: no spread to show
    assert plots.paper_value(3.44) == "3.4" and plots.paper_value(math.nan) == "–"


def test_paper_comparison_lays_out_methods_by_judge():
    table = pd.DataFrame(
        {
            "method": ["A", "B", "A", "B"],
            "judge": ["x", "x", "y", "y"],
            "accuracy": [80.0, 81.0, 70.0, 71.0],
            "accuracy_sd": [1.0, math.nan, 0.5, 0.5],
            "cost": [2.0, 3.0, 2.5, 3.5],
            "cost_sd": [0.1, 0.2, 0.1, 0.1],
            "paper_accuracy": [79.0, math.nan, 69.0, 72.0],
            "paper_cost": [2.1, math.nan, 2.4, 3.6],
        }
    )
    show = plots.paper_comparison(table, "method", "judge", ["B", "A"], ["y", "x"])
    assert list(show.index) == ["B", "A"]
    assert list(show.columns[:4]) == [
        ("y", "accuracy"),
        ("y", "paper accuracy"),
        ("y", "cost"),
        ("y", "paper cost"),
    ]
    assert show.loc["B", ("x", "accuracy")] == "81.0"
    assert show.loc["B", ("x", "paper accuracy")] == "–"
    assert show.loc["A", ("x", "accuracy")] == "80.0 ± 1.0"
    long = plots.paper_comparison(table, "method", "judge", ["B", "A"], ["y", "x"], long=True)
    assert list(long.index) == [("y", "B"), ("y", "A"), ("x", "B"), ("x", "A")]
    assert list(long.columns) == ["accuracy", "paper accuracy", "cost", "paper cost"]
    assert long.loc[("x", "A"), "accuracy"] == "80.0 ± 1.0"
    assert long.loc[("x", "B"), "paper cost"] == "–"


def _results(tmp_path):
    pd.DataFrame(
        {"method": ["A", "B", "B"], "budget": [2.0, 2.0, 4.0], "accuracy": [80.25, 81.5, 83.0]}
    ).to_csv(tmp_path / "runs.csv", index=False)
    return chapter.Prose(tmp_path)


def _notebook(tmp_path, *markdown):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(m) for m in markdown]
    path = tmp_path / "chapter.ipynb"
    nbformat.write(nb, path)
    return path


def test_prose_glues_numbers_read_from_the_csv_and_records_them(tmp_path):
    prose = _results(tmp_path)
    acc = prose.value("runs.csv", "accuracy", method="A")
    assert prose.glue("acc", acc) is None  # a cell ending in a glue shows nothing
    prose.glue("best", prose.value("runs.csv", "accuracy", agg="max", method="B"))
    prose.glue("n", prose.value("runs.csv", "accuracy", agg="count", method="B"))
    prose.glue("top", prose.text("runs.csv", "method", budget=4.0))
    assert acc.value == 80.25 and f"{acc:.1f}" == "80.2"
    recorded = pd.read_csv(tmp_path / "prose.csv")
    assert list(recorded["name"]) == ["acc", "best", "n", "top"]
    assert list(recorded["agg"]) == ["one", "max", "count", "text"]
    assert set(recorded["csv"]) == {"runs.csv"}
    page = _notebook(
        tmp_path,
        "A reaches {glue:text}`acc:.1f` %, {glue:text}`top` at best {glue:text}`best:.2f` % "
        "over {glue:text}`n:.0f` runs.",
    )
    assert chapter.check_prose(tmp_path / "prose.csv", page) == []


def test_glue_reads_glues_a_chapters_list_of_reads(tmp_path):
    prose = _results(tmp_path)
    prose.glue_reads([("best", "runs.csv", "accuracy", "max", {"method": "B"}),
                      ("top", "runs.csv", "method", "text", {"budget": 4.0})])  # fmt: skip
    recorded = pd.read_csv(tmp_path / "prose.csv").set_index("name")
    assert float(recorded.loc["best", "value"]) == 83.0
    assert recorded.loc["top", "value"] == "B" and recorded.loc["top", "agg"] == "text"


def test_check_prose_finds_a_changed_number_and_an_unglued_name(tmp_path):
    prose = _results(tmp_path)
    prose.glue("acc", prose.value("runs.csv", "accuracy", method="A"))
    prose.glue("top", prose.text("runs.csv", "method", budget=4.0))
    pd.DataFrame({"method": ["A", "C"], "budget": [2.0, 4.0], "accuracy": [70.0, 1.0]}).to_csv(
        tmp_path / "runs.csv", index=False
    )
    problems = chapter.check_prose(tmp_path / "prose.csv")
    assert len(problems) == 2
    assert "acc is 80.25 on the page but 70.0" in problems[0]
    assert "top is B on the page but C" in problems[1]
    page = _notebook(
        tmp_path, "A is {glue:text}`acc:.1f`; {glue:text}`gap:.1f`; {glue:text}`top:.1f`"
    )
    problems = chapter.check_prose(tmp_path / "prose.csv", page)
    assert any("'gap' is not glued" in p for p in problems)
    assert any("top:.1f" in p for p in problems)  # a word formatted as a number


def test_prose_refuses_typed_numbers_and_ambiguous_rows(tmp_path):
    prose = _results(tmp_path)
    with pytest.raises(TypeError, match="not a Value read from a CSV"):
        prose.glue("x", 81.5)
    with pytest.raises(ValueError, match="2 rows match .*exactly one"):
        prose.value("runs.csv", "accuracy", method="B")
    with pytest.raises(ValueError, match="2 rows match .*exactly one"):
        prose.text("runs.csv", "method", method="B")
    with pytest.raises(KeyError, match="no column 'cost'"):
        prose.value("runs.csv", "cost", method="A")
    with pytest.raises(ValueError, match="agg must be one of"):
        prose.value("runs.csv", "accuracy", agg="median")
    prose.glue("a", prose.value("runs.csv", "accuracy", method="A"))
    with pytest.raises(ValueError, match="glued twice"):
        prose.glue("a", prose.value("runs.csv", "accuracy", method="A"))


def test_a_new_prose_starts_afresh(tmp_path):
    prose = _results(tmp_path)
    prose.glue("a", prose.value("runs.csv", "accuracy", method="A"))
    assert (tmp_path / "prose.csv").exists()
    chapter.Prose(tmp_path)
    assert not (tmp_path / "prose.csv").exists()
