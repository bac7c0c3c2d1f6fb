"""The report's verdict panel and its links (issue 42): the forest plot of the emergent claims
(racer_lib.paper.forest), the claims per status with their legend and the protocol's measured
rates (racer_lib.book.verdict), each claim's evidence anchor and permalink
(racer_lib.paper.evidence, report.linked), the anchors every chapter records
(racer_lib.book.chapter), the "cite this page" box (racer_lib.book.cite) and the first-screen
assertion of the browser check; on the smoke build, every report row's link reaches an anchor
that exists on its chapter's page."""

import json
import re
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from IPython.core.formatters import DisplayFormatter

from racer_lib.book import bookcheck, chapter, cite, page, verdict
from racer_lib.paper import claims as st
from racer_lib.paper import evidence, forest, registry, report

ROOT = Path(__file__).resolve().parents[1]


def _claims(**extra) -> pd.DataFrame:
    """A small report table: four emergent claims and one that is not."""
    rows = [
        ("Fig. 4", "RACER beats Random", st.REPRODUCED, True, 0.3, 0.2, 0.4, 0.15, " pts"),
        ("Fig. 4", "RACER stays within budget", st.REPRODUCED, True, -0.2, -0.3, -0.1, 0.05, ""),
        ("Table 3", "beta alike", st.INCONCLUSIVE, True, 0.01, -0.1, 0.12, 0.15, " pts"),
        ("Fig. 1(b)", "a finding", st.NOT_REPRODUCED, True, 0.11, 0.07, 0.15, np.nan, ""),
        ("Table 1", "a level", st.BY_CONSTRUCTION, False, np.nan, np.nan, np.nan, np.nan, ""),
    ]
    columns = ["artifact", "claim", "status", "emergent", "effect", "lo", "hi", "sesoi", "unit"]
    table = pd.DataFrame(rows, columns=columns)
    table["provenance"] = ["simulated", "simulated", "release", "simulated", "simulated"]
    table["qualifier"] = ["", report.CALIBRATED_ONLY, "", "", ""]
    table["chapter"] = [
        "07_budget_frontier",
        "07_budget_frontier",
        "09_beta_sensitivity",
        "03_motivation_and_benchmarks",
        "08_robustness_ablation",
    ]
    table["link"] = [f"{c}.html" for c in table["chapter"]]
    table["csv"] = [
        "07_budget_frontier/frontier_runs.csv",
        "07_budget_frontier/frontier_runs.csv",
        "09_beta_sensitivity/beta_runs.csv",
        "03_motivation_and_benchmarks/paper_findings.csv",
        "08_robustness_ablation/dataset_statistics.csv",
    ]
    for name, value in extra.items():
        table[name] = value
    return table


# --------------------------------------------------------------------------- the forest plot


def test_forest_rows_divide_each_effect_by_its_sesoi_and_keep_its_unit():
    rows = forest.forest_rows(_claims())
    assert len(rows) == 4  # the emergent claims only
    # in the order of the report's emergent table: by status, stable within one
    assert list(rows["status"]) == [
        st.REPRODUCED,
        st.REPRODUCED,
        st.NOT_REPRODUCED,
        st.INCONCLUSIVE,
    ]
    first = rows.iloc[0]
    assert np.allclose([first["x"], first["x_lo"], first["x_hi"]], [2.0, 0.2 / 0.15, 0.4 / 0.15])
    assert first["note"] == "+0.3 pts (0.15)" and first["label"].startswith("Fig. 4: RACER")
    assert bool(rows.iloc[1]["hollow"]) and not bool(first["hollow"])
    finding = rows.iloc[2]  # no SESOI: no place on the axis, its note says so
    assert np.isnan(finding["x"]) and finding["note"] == "+0.11 (no SESOI)"
    assert list(rows["group"]) == ["simulated", "simulated", "simulated", "release"]


def test_forest_plot_has_a_panel_per_kind_of_records_and_fits_the_first_screen():
    fig = forest.forest_plot(_claims())
    axes = fig.get_axes()
    assert len(axes) == 2  # simulated, then real judges' released judgments
    assert "SIMULATED" in axes[0].get_title("left") and "real" in axes[1].get_title("left")
    assert [t.get_text() for t in axes[1].get_yticklabels()] == ["Table 3: beta alike"]
    plt.close(fig)
    many = pd.concat([_claims()] * 12, ignore_index=True)  # 48 emergent claims
    fig = forest.forest_plot(many)
    assert fig.get_size_inches()[1] <= forest._MAX_HEIGHT_IN + 1e-9
    plt.close(fig)


# --------------------------------------------------------------------------- evidence links


def test_a_claim_id_is_stable_readable_and_distinct():
    a = evidence.claim_id("Fig. 3(b)", "RACER-C stays within budget")
    assert a == evidence.claim_id("Fig. 3(b)", "RACER-C stays within budget")
    assert re.fullmatch(r"claim-fig-3-b-[0-9a-f]{6}", a)
    assert a != evidence.claim_id("Fig. 3(b)", "RACER-C is cheaper")
    ids = {evidence.claim_id(c.artifact, c.claim) for c in registry.claims()}
    assert len(ids) == len(registry.claims())


SHOWN = [
    {"kind": "table", "anchor": "table-7-1", "file": "frontier_summary.csv", "caption": "x"},
    {"kind": "figure", "anchor": "figure-7-1", "paper": "Fig. 4", "file": "fig4.png"},
    {"kind": "table", "anchor": "table-7-2", "caption": "The paper's reading of its Table 2."},
    {"kind": "table", "anchor": "table-7-3", "file": "frontier_runs.csv"},
]


@pytest.mark.parametrize(
    ("artifact", "csv", "anchor"),
    [
        ("Fig. 4", "07_budget_frontier/frontier_runs.csv", "table-7-3"),  # its CSV's table
        ("Fig. 4", "07_budget_frontier/other.csv", "figure-7-1"),  # the figure it regenerates
        ("Table 2", "07_budget_frontier/other.csv", "table-7-2"),  # a caption naming it
        ("Table 21", "07_budget_frontier/other.csv", "figure-7-1"),  # not Table 2: first figure
        ("§5.3 text", "", "figure-7-1"),
    ],
)
def test_a_claims_evidence_is_the_best_match_among_what_its_chapter_showed(artifact, csv, anchor):
    assert evidence.evidence_anchor({"artifact": artifact, "csv": csv}, SHOWN) == anchor


def test_a_findings_evidence_is_the_table_of_its_chapters_findings():
    shown = [*SHOWN, {"kind": "table", "anchor": "table-7-4", "caption": "Fig. 4's readings."}]
    row = {"artifact": "Fig. 4", "csv": "07_budget_frontier/frontier_findings.csv"}
    assert evidence.evidence_anchor(row, shown) == "figure-7-1"
    assert evidence.evidence_anchor({**row, "rule": "finding"}, shown) == "table-7-4"
    section = {"artifact": "§5.3 text", "csv": "", "rule": "finding"}
    assert evidence.evidence_anchor(section, shown) == "figure-7-1"


def test_no_shown_item_no_anchor():
    assert evidence.evidence_anchor({"artifact": "Fig. 4", "csv": "a/b.csv"}, []) == ""
    tables = [SHOWN[0]]
    assert evidence.evidence_anchor({"artifact": "§7", "csv": ""}, tables) == "table-7-1"


def test_with_evidence_puts_each_chapters_anchor_on_the_link(tmp_path):
    folder = tmp_path / "07_budget_frontier"
    folder.mkdir()
    (folder / evidence.ANCHORS_JSON).write_text(json.dumps(SHOWN))
    (tmp_path / "09_beta_sensitivity").mkdir()
    (tmp_path / "09_beta_sensitivity" / evidence.ANCHORS_JSON).write_text("not json")
    table = _claims()
    linked = evidence.with_evidence(table, tmp_path)
    assert list(linked["link"])[:3] == [
        "07_budget_frontier.html#table-7-3",
        "07_budget_frontier.html#table-7-3",
        "09_beta_sensitivity.html",  # an unreadable index: the page alone
    ]
    assert list(table["link"])[0] == "07_budget_frontier.html"  # the input is left as it was


def _rendered(view: pd.DataFrame) -> str:
    return page.table_html(view, "1.2", "Claims.", None, page.TableLayout(max_rows=len(view)))


def test_linked_rows_carry_their_permalink_and_link_their_evidence():
    table = _claims().assign(build_value="", robustness="", reason="", rule="difference", n=10)
    table = table.assign(power=np.nan, mde=np.nan, p=0.01, test="t")
    table["link"] = [f"{c}.html#figure-1-1" for c in table["chapter"]]
    ran = ["07_budget_frontier", "03_motivation_and_benchmarks"]
    views = report.claims_views(table)
    shown = "".join(report.linked(_rendered(view), table, ran) for _, _, view in views)
    for r in table.to_dict("records"):
        ident = evidence.claim_id(r["artifact"], r["claim"])
        assert shown.count(f'<tr id="{ident}">') == 1  # every claim once: its permalink
        assert f'<a class="racer-permalink" href="#{ident}"' in shown
    assert shown.count('<a href="07_budget_frontier.html#figure-1-1">07_budget_frontier</a>') == 2
    assert "<td>09_beta_sensitivity</td>" in shown  # did not run: plain text
    emergent = report.linked(_rendered(report.emergent_view(table)), table, ran)
    assert '<td><a href="07_budget_frontier.html#figure-1-1">Fig. 4</a></td>' in emergent
    assert "<td>Table 3</td>" in emergent and "<tr id=" not in emergent
    assert '<th style="min-width: 16em">claim</th>' in report.linked("<th>claim</th>", table, [])


# --------------------------------------------------------------------------- chapter anchors


def test_a_chapter_records_the_anchor_of_each_table_and_figure_it_shows(tmp_path, capsys):
    out = chapter.setup(tmp_path / "07_budget_frontier")
    csv = chapter.save_table(pd.DataFrame({"a": [1.0]}), out / "frontier_runs.csv")
    shown = chapter.render(csv, "The runs.", csv=out / "frontier_runs.csv")
    chapter.render(csv, "Numbered, never displayed.")  # table 7.2: no anchor on the page
    data, _ = DisplayFormatter().format(shown)  # what IPython does when it displays it
    assert 'id="table-7-1"' in data["text/html"]
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    html = chapter.figure(fig, out / "f.png", "simulated", caption="A line.", alt="A line.")
    assert 'id="figure-7-1"' in html and "wrote" in capsys.readouterr().out
    recorded = evidence.read_anchors(out)
    assert [(s["anchor"], s.get("file")) for s in recorded] == [
        ("table-7-1", "frontier_runs.csv"),
        ("figure-7-1", "f.png"),
    ]
    chapter.setup(out)  # a re-run starts afresh
    assert evidence.read_anchors(out) == []


# --------------------------------------------------------------------------- the panel


def test_the_legend_lists_every_status_with_its_count_colour_and_meaning():
    legend = verdict.legend_html(report.status_counts(_claims()))
    for status in st.STATUSES:
        assert f"<b>{status}</b>: {forest.STATUS_MEANINGS[status]}" in legend
        assert forest.STATUS_COLORS[status] in legend
    assert '<td class="racer-count">2</td>' in legend and "(5 in all)" in legend


def test_the_rates_say_what_was_measured_and_what_was_not(tmp_path):
    empty = verdict.rates_html(tmp_path)
    assert empty.count("not measured in this build") == 2
    assert "make bench-verdicts" in empty and "make bench-claim-rates" in empty
    found = json.loads((ROOT / "results" / "bench" / "verdicts.json").read_text())
    per_claim = found.pop("claim_rates")  # a record without the per-claim part
    (tmp_path / "verdicts.json").write_text(json.dumps(found))
    rates = verdict.rates_html(tmp_path)
    fpr, power = found["false_positive_rate"], found["power"]
    assert f"{fpr['hits']} of {fpr['trials']} decisions on null builds" in rates
    assert f"{power['hits']} of {power['trials']} decisions" in rates
    assert "Status stability" in rates and rates.count("not measured in this build") == 1
    stability = found["status_stability"]
    met = "met" if stability["meets_target"] else "not met"
    assert f"(goal ≥ {100 * stability['target']:.1f} %, {met})" in rates
    assert "make bench-claim-rates" in rates
    (tmp_path / "verdicts.json").write_text(json.dumps({**found, "claim_rates": per_claim}))
    rates = verdict.rates_html(tmp_path)
    assert "not measured in this build" not in rates
    assert f"{per_claim['meeting_target']} of {per_claim['measured']} emergent claims" in rates


def test_the_cite_box_names_the_companion_the_paper_the_commit_and_the_profile():
    box = cite.cite_box(ROOT / "CITATION.cff", "abc123def456", "sim")
    assert "commit <code>abc123def456</code>" in box and "profile <code>sim</code>" in box
    assert cite.PAGE_TOKEN in box and cite.CITE_TOKEN in box and 'id="cite-this-page"' in box
    assert "Reasoning Is Not Free" in box and "racer-companion" in box


def test_the_first_screen_check_fails_on_what_is_missing_or_below_900_px():
    fine = {name: [300.0, 850.0] for name in bookcheck.FIRST_SCREEN}
    assert bookcheck.first_screen(fine) == []
    low = {**fine, "the forest plot": [500.0, 1300.0]}
    (problem,) = bookcheck.first_screen(low)
    assert problem.kind == bookcheck.SCREEN and "1300 px down" in problem.detail
    (problem,) = bookcheck.first_screen({**fine, "the claims per status (counts and legend)": None})
    assert "not on the page" in problem.detail


# --------------------------------------------------------------------------- the smoke build


def test_every_report_row_links_to_an_anchor_on_its_chapters_page(smoke):
    result, _ = smoke
    html = Path(result.html_index).parent
    folder = Path(result.results_dirs[registry.REPORT])
    table = pd.read_csv(folder / "claims.csv", keep_default_na=False, na_values=[""])
    ran = set(result.results_dirs) - {registry.REPORT}
    mine = table[table["chapter"].isin(ran)]
    assert len(mine) > 0 and mine["link"].str.contains("#").all()  # each ran chapter shows some
    report_page = html / "notebooks" / f"{registry.REPORT}.html"
    text = report_page.read_text(encoding="utf-8")
    for r in mine.to_dict("records"):
        assert f'href="{r["link"]}"' in text, r["link"]  # the page links it
    for r in table.to_dict("records"):
        assert f'id="{evidence.claim_id(r["artifact"], r["claim"])}"' in text  # its permalink
    hrefs = re.findall(r'href="([^"#][^"]*#[^"]+)"', text)
    assert not bookcheck.broken_links(f"notebooks/{report_page.name}", hrefs, html, {})
    assert 'id="cite-this-page"' in text and "{glue" not in text


@pytest.mark.skipif(
    not (shutil.which("chromium") and shutil.which("chromedriver")),
    reason="Debian's chromium and chromium-driver are not installed",
)
def test_the_browser_check_fails_a_report_whose_verdict_is_below_the_fold(tmp_path):
    """Chapter 01 as it was before the panel: parameters and code output above the counts."""
    layout = (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
        '</head><body style="margin:0"><article class="bd-article">{}</article></body></html>'
    )
    panel = (
        '<div class="racer-bottom-line"><p>The bottom line.</p></div><div class="racer-verdict">'
        '<figure><img alt="A forest plot." style="display:block;width:10px;height:300px" '
        'src="data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 width=%2210%22 '
        'height=%22300%22/%3E"><figcaption>Figure 1.1.</figcaption></figure>'
        '<table class="racer-verdict-legend"><tr><td>15</td></tr></table></div>'
        '<aside id="cite-this-page">Cite this page</aside>'
    )
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "index.html").write_text(layout.format("<p>home</p>"))
    for name, spacer in (("ok", 100), ("low", 700)):
        folder = tmp_path / name / "notebooks"
        folder.mkdir(parents=True)
        body = f'<div style="height:{spacer}px">parameters, code</div>{panel}'
        (folder / "01_reproduction_report.html").write_text(layout.format(body))
        (tmp_path / name / "index.html").write_text(layout.format("<p>home</p>"))
    shots = tmp_path / "shots"
    problems = {}
    for name in ("ok", "low"):
        results = bookcheck.check_book(tmp_path / name, screenshots=shots / name)
        problems[name] = [p for r in results for p in r.problems if p.kind == bookcheck.SCREEN]
    assert problems["ok"] == []
    below = {p.detail.split(" ends")[0] for p in problems["low"]}
    assert below == {"the forest plot", "the claims per status (counts and legend)"}
    assert (shots / "ok" / "report_first_screen.png").is_file()
    assert (shots / "ok" / "report_forest_plot.png").is_file()
