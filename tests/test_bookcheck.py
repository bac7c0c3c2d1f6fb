"""The browser check of the built book (racer_lib.book.bookcheck, `make book-check`): it must pass a
clean page, fail a wide table, an uncaptioned image and a console error (each on its own
page), and pass the smoke build's book; and the checks of a page's own HTML
(racer_lib.book.pagecheck): a numbering gap, a number without its table, an object's repr,
stderr, a warning and a download line, each on fixtures cut from the built pages of issue 42. The
browser tests need Debian's chromium and chromium-driver (.ci/run installs them); without them
they skip."""

import html
import shutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from racer_lib.book import bookcheck, page, pagecheck

HAVE_BROWSER = bool(shutil.which("chromium") and shutil.which("chromedriver"))
needs_browser = pytest.mark.skipif(
    not HAVE_BROWSER, reason="Debian's chromium and chromium-driver are not installed"
)

LAYOUT = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>
<link rel="icon" href="data:,"><style>
body {{ margin: 0; font-family: sans-serif; }}
main {{ width: 1000px; margin: 0 auto; }}
article.bd-article {{ width: 700px; }}
img {{ max-width: 100%; height: auto; }}
</style></head><body><main><article class="bd-article">{body}</article></main></body></html>
"""


def _png(path, width_in=4.0, fontsize=10.0):
    fig, ax = plt.subplots(figsize=(width_in, 2.0))
    ax.plot([0, 1], [0, 1])
    ax.set_title("a title", fontsize=fontsize)
    ax.tick_params(labelsize=fontsize)
    fig.savefig(path, dpi=100)
    return fig


def _table(number: str, body: str = "<table><tr><td>1</td></tr></table>") -> str:
    """A numbered table as :func:`racer_lib.book.page.wrap_table` writes it, in a cell output."""
    return _output("text_html", page.wrap_table(body, number, "A table.", "simulated"))


def _output(kind: str, text: str) -> str:
    """A cell's output as MyST-NB writes it (kind: stream, stderr, text_plain, text_html)."""
    if kind != "text_html":
        text = f'<div class="highlight"><pre><span></span>{html.escape(text)}</pre></div>'
    return f'<div class="cell_output container"><div class="output {kind}">{text}</div></div>'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A small built "book": one clean page and one page per fault."""
    root = tmp_path_factory.mktemp("html")
    _png(root / "plot.png")
    plt.rcParams["savefig.dpi"] = 100
    fig = _png(root / "tiny.png", width_in=16.0, fontsize=9.0)  # 1536 CSS px shown in 700
    tiny = page.figure_html(fig, root / "tiny.png", "1.1", "A figure.", "A line.", "simulated")
    plt.close("all")
    pages = {
        "index.html": '<p>A clean page with a <a href="other.html#there">link</a>.</p>'
        '<figure><img src="plot.png" alt="A rising line."><figcaption>Figure 1. A line.'
        "</figcaption></figure>",
        "other.html": '<h2 id="there">There</h2><table><tr><td>1</td><td>2</td></tr></table>',
        "wide.html": "<table><tr>"
        + "".join(f"<td>column_{i}</td>" for i in range(80))
        + "</tr></table>",
        "nocaption.html": '<p><img src="plot.png" alt="plot.png"></p>',
        "console.html": "<p>fine text</p><script>throw new Error('deliberate failure');</script>",
        "broken.html": '<p><a href="missing.html">gone</a> <a href="other.html#nowhere">x</a></p>',
        "leftovers.html": f"<p>wrote {root}/results/x.csv and the cost $\\frac{{1}}{{2}}$ "
        "is raw TeX.</p>",
        "external.html": '<script src="https://cdn.example.org/lib.js"></script><p>x</p>',
        "smallfont.html": tiny,
        "plumbing.html": _table("7.1")
        + _table("7.2")
        + _table("7.3")
        + _table("7.5")
        + _output("stderr", "x/tqdm/auto.py:21: TqdmWarning: IProgress not found.")
        + _output("text_plain", "PosixPath('results/sim/10_x/x.png')"),
    }
    for name, body in pages.items():
        (root / name).write_text(LAYOUT.format(title=name, body=body))
    return root


def test_pages_lists_html_outside_assets(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "x.html").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.html").write_text("a")
    with pytest.raises(bookcheck.InputError, match="index.html is missing"):
        bookcheck.pages(tmp_path)
    (tmp_path / "index.html").write_text("i")
    assert bookcheck.pages(tmp_path) == ["index.html", "sub/a.html"]


def test_machine_paths_finds_paths_of_this_machine_not_urls(tmp_path):
    root = str(tmp_path)
    text = f"wrote {root}/results/a.csv; see https://example.org/usr/share and results/x.csv"
    found = bookcheck.machine_paths(text, [root])
    assert root in found
    assert not any("example.org" in f for f in found)
    assert bookcheck.machine_paths("relative/path and 1/2 of it", []) == []
    assert bookcheck.machine_paths("read /usr/share/dict/words", []) == ["/usr/share/dict/words"]


def test_broken_links_checks_files_and_anchors(tmp_path):
    (tmp_path / "a.html").write_text('<h1 id="top">x</h1>')
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "index.html").write_text("x")
    hrefs = ["a.html#top", "a.html#gone", "nope.html", "d/", "https://x.org/y", "#top"]
    broken = bookcheck.broken_links("a.html", hrefs, tmp_path, {})
    assert broken == ["a.html#gone (no anchor #gone)", "nope.html (no file nope.html)"]


def test_tex_pattern_finds_raw_tex_only():
    assert bookcheck.TEX_PATTERN.search("the cost $\\frac{1}{2}$ here")
    assert bookcheck.TEX_PATTERN.search("with \\tau_C = 1")
    assert not bookcheck.TEX_PATTERN.search("costs $5 and $10 each")
    assert not bookcheck.TEX_PATTERN.search("plain text, C = 4, τ = 1")


def test_displayed_font_shrinks_with_the_figure():
    assert page.displayed_font(10, 800, 1000) == 10  # never upscaled
    assert page.displayed_font(10, 2000, 1000) == 5


@needs_browser
def test_check_flags_each_fault_and_passes_the_clean_page(site, tmp_path):
    results = {r.page: r for r in bookcheck.check_book(site, screenshots=tmp_path, progress=False)}
    kinds = {name: {p.kind for p in r.problems} for name, r in results.items()}
    assert kinds["index.html"] == set(), results["index.html"].problems
    assert kinds["other.html"] == set(), results["other.html"].problems
    assert kinds["wide.html"] == {"wide"}
    assert "px wider than the column" in results["wide.html"].problems[0].detail
    nocaption = [p.detail for p in results["nocaption.html"].problems]
    assert any("has no caption" in d for d in nocaption)
    assert any("is not a description" in d for d in nocaption)
    console = results["console.html"].problems
    assert [p.kind for p in console] == ["console"]
    assert "deliberate failure" in console[0].detail
    links = sorted(p.detail for p in results["broken.html"].problems)
    assert links == [
        "missing.html (no file missing.html)",
        "other.html#nowhere (no anchor #nowhere)",
    ]
    assert kinds["leftovers.html"] == {"path", "tex"}
    assert "external" in kinds["external.html"]
    font = [p for p in results["smallfont.html"].problems if p.kind == "font"]
    assert len(font) == 1, results["smallfont.html"].problems
    shown_pt = float(font[0].detail.split("shown at ")[1].split(" pt")[0])
    assert 3.0 < shown_pt < 5.0  # 9 pt text of a 16 in figure squeezed into 700 px
    assert kinds["plumbing.html"] == {"numbering", "repr", "stderr", "warning"}
    assert (tmp_path / "wide.png").stat().st_size > 0  # a screenshot per page
    summary = bookcheck.summary(list(results.values()))
    assert f"{len(results)} pages checked at 1280 px" in summary


@needs_browser
@pytest.mark.slow
def test_smoke_book_passes_the_browser_check(smoke, tmp_path):
    result, _ = smoke
    html = result.html_index.parent
    results = bookcheck.check_book(html, screenshots=tmp_path / "shots", progress=False)
    print(bookcheck.summary(results))
    problems = [str(p) for r in results for p in r.problems]
    assert not problems, "\n".join(problems[:40])
    assert len(results) >= 10


@needs_browser
def test_cli_check_exits_1_and_replaces_only_its_screenshots(site, tmp_path, capsys):
    from racer_lib import cli

    shots = tmp_path / "shots"
    shots.mkdir()
    (shots / "keep.txt").write_text("mine")
    (shots / "stale.png").write_bytes(b"old")
    assert cli.main(["book-check", "--html", str(site), "--screenshots", str(shots)]) == 1
    out = capsys.readouterr().out
    assert "pages checked at 1280 px" in out and "wide.html: [wide]" in out
    assert (shots / "keep.txt").read_text() == "mine" and not (shots / "stale.png").exists()
    assert (shots / "index.png").stat().st_size > 0


#: One page per defect class of issue 42, as the built pages showed it (a clean page first).
DEFECTS = {
    None: _table("7.1")
    + _table("7.2")
    + "<p>Table 7.2 above; the paper's Table 3.</p>"
    + _output("stream", "wrote results/sim/07_x/frontier.png"),
    "gap": _table("7.1") + _table("7.2") + _table("7.3") + _table("7.5"),
    "late start": _table("5.2") + _table("5.3"),
    "no table": _table("8.1") + _table("8.2", body=""),
    "named, not shown": _table("8.1") + "<p>Table 8.2 lists the decided claims.</p>",
    "PosixPath": _output("text_plain", "PosixPath('results/sim/10_x/advanced_baselines.png')"),
    "Figure": _output("text_plain", "<Figure size 640x480 with 1 Axes>"),
    "matplotlib": _output("text_plain", "<matplotlib.legend.Legend at 0x7f0c1e2d>"),
    "stderr": _output("stderr", "progress 10/10"),
    "warning": _output("stream", ".venv/lib/tqdm/auto.py:21: TqdmWarning: IProgress not found."),
    "download": _output(
        "stream", "Downloading data from 'https://raw.githubusercontent.com/x/y.json' to file"
    ),
}
EXPECTED = {
    None: set(),
    "gap": {"numbering"},
    "late start": {"numbering"},
    "no table": {"numbering"},
    "named, not shown": {"numbering"},
    "PosixPath": {"repr"},
    "Figure": {"repr"},
    "matplotlib": {"repr"},
    "stderr": {"stderr"},
    "warning": {"warning"},
    "download": {"download"},
}


@pytest.mark.parametrize("defect", list(DEFECTS), ids=lambda d: str(d))
def test_pagecheck_finds_each_defect_class_and_passes_a_clean_page(defect):
    body = DEFECTS[defect]
    found = pagecheck.page_problems(LAYOUT.format(title="p", body=body))
    assert {kind for kind, _ in found} == EXPECTED[defect], found


def test_pagecheck_names_the_missing_number_and_the_line():
    (gap,) = pagecheck.numbering_problems(DEFECTS["gap"])
    assert gap[1] == "table numbers skip or repeat: 7.1, 7.2, 7.3, 7.5"
    (empty,) = pagecheck.numbering_problems(DEFECTS["no table"])
    assert empty[1] == "Table 8.2 has no table"
    (warning,) = pagecheck.output_problems(DEFECTS["warning"])
    assert "TqdmWarning: IProgress not found." in warning[1]
    code = "<pre>chapter.show(x)  # Table 7.9 in a comment, PosixPath('a') in code</pre>"
    assert pagecheck.page_problems(_table("7.1") + code) == []  # code is not the page's text
