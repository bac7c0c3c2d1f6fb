"""The built book as a reader sees it: every page opened in headless Chromium (``make book-check``).

:func:`check_book` serves a built HTML folder (``book/_build/html``) on the loopback interface,
opens each page at a 1280 px wide window in Debian's Chromium (driven by selenium through
Debian's ChromeDriver: no browser is downloaded at run time) and reports, per page:

``console``   an error in the browser console (a script error, a missing file, a favicon 404);
``link``      a local link to a file that is not there, or to an anchor the page lacks;
``image``     an image that did not load, has no caption, or whose alt text is a file path;
``font``      a figure whose smallest text reads below 9 pt at the size it is shown
              (:func:`racer_lib.book.page.figure_html` records its font size and true width);
``wide``      an element of the content column wider than the column (the reader would have
              to scroll sideways), with how many pixels it sticks out;
``tex``       TeX left as text after MathJax ran (``$...$``, ``\\(``, ``\\frac`` ...);
``path``      an absolute path of the build machine in the page's text;
``external``  a script or stylesheet loaded from another host: the book must read offline;
``numbering``, ``repr``, ``stderr``, ``warning``, ``download``: what the page's HTML says that a
              reader should never meet, a table numbered and never shown, an object's repr, a
              cell's standard error, a warning or a download line (:mod:`racer_lib.book.pagecheck`).
``screen``    the report's bottom line, claims per status and forest plot not all within its
              first 900 px (:func:`first_screen`), or a chapter without its "cite this page" box.

External hosts are unreachable from the browser (its resolver maps every name but the
loopback's to nothing), so a page that needs the network shows it as console errors too.
A full-page screenshot of every page is written for review. The command exits 1 when any
page has a problem.
"""

from __future__ import annotations

import base64
import functools
import http.server
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from racer_lib.book import page as page_mod
from racer_lib.book import pagecheck
from racer_lib.errors import InputError, MissingPackageError

#: The window a reader is assumed to have (issue 15: "fit a 1280 px window").
WIDTH = 1280
_HEIGHT = 900
#: Folders of a built book that hold assets, not pages.
_ASSET_DIRS = ("_static", "_sources", "_images", "_sphinx_design_static")
#: Pixels an element may stick out of the column (sub-pixel rounding of borders).
_SLACK_PX = 2
#: How long a page may take to load and typeset its maths.
_PAGE_TIMEOUT_S = 30

KINDS = ("console", "link", "image", "font", "wide", "tex", "path", "external", *pagecheck.KINDS)

#: TeX that MathJax should have turned into maths; searched in the text outside code.
TEX_PATTERN = re.compile(
    r"\$\$|(?<![\w$])\$[^$\s][^$\n]{0,200}?[^$\s\\]\$(?![\w$])|\\\(|\\\[|"
    r"\\(?:frac|mathrm|mathbb|mathcal|tau|beta|lambda|sum|leq?|geq?|pi|cdot|times|text|in)(?![A-Za-z])"
)
#: An absolute POSIX path of at least two components, not part of a URL.
_PATH_PATTERN = re.compile(r"(?<![\w:/.~-])(/[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)+)")


@dataclass(frozen=True)
class Problem:
    """One thing a reader would trip over on one page."""

    page: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.page}: [{self.kind}] {self.detail}"


@dataclass
class PageResult:
    page: str
    problems: list[Problem]
    screenshot: Path | None = None
    column_px: int = 0


def pages(html: str | os.PathLike) -> list[str]:
    """Every page of a built book: its ``.html`` files outside the asset folders, relative."""
    root = Path(html)
    if not (root / "index.html").is_file():
        raise InputError(
            f"{root}: no built book here (index.html is missing); build it with `make book`"
        )
    found = []
    for path in sorted(root.rglob("*.html")):
        rel = path.relative_to(root)
        if rel.parts[0] not in _ASSET_DIRS:
            found.append(rel.as_posix())
    return found


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # the browser dropped a connection it no longer needed (a cancelled font load)


@contextmanager
def serve(html: str | os.PathLike) -> Iterator[str]:
    """Serve a folder on 127.0.0.1 (a free port) for the duration; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _find_browser() -> tuple[str, str]:
    """Paths of Chromium and ChromeDriver (``RACER_CHROMIUM``/``RACER_CHROMEDRIVER`` override)."""
    chromium = os.environ.get("RACER_CHROMIUM") or shutil.which("chromium")
    driver = os.environ.get("RACER_CHROMEDRIVER") or shutil.which("chromedriver")
    missing = [n for n, p in (("chromium", chromium), ("chromedriver", driver)) if not p]
    if missing:
        raise MissingPackageError(
            f"{' and '.join(missing)} not found: install Debian's packages "
            "(`apt-get install chromium chromium-driver`; .ci/run does it when they are missing)"
        )
    return chromium, driver


@contextmanager
def browser(width: int = WIDTH, height: int = _HEIGHT):
    """Headless Chromium driven by selenium, offline: names other than the loopback's fail."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        raise MissingPackageError("selenium is missing: `pip install -e .[test]`") from exc
    chromium, driver_path = _find_browser()
    profile = tempfile.mkdtemp(prefix="racer-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(_PAGE_TIMEOUT_S)
    driver.set_script_timeout(_PAGE_TIMEOUT_S)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# The page's side of the check: run in the browser once the page and its maths are ready.
_WAIT_FOR_MATHS = """
const done = arguments[arguments.length - 1];
const ready = () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(() => done(true), () => done(false));
  } else { done(true); }
};
if (document.readyState === 'complete') { ready(); }
else { window.addEventListener('load', ready); }
"""

_INSPECT = """
const column = document.querySelector('article.bd-article') || document.querySelector('main')
  || document.body;
const colRect = column.getBoundingClientRect();
const slack = arguments[0];
const describe = (el) => {
  const cls = (el.className && el.className.baseVal === undefined) ? el.className : '';
  const text = (el.innerText || el.getAttribute('alt') || '').trim().replace(/\\s+/g, ' ');
  return `<${el.tagName.toLowerCase()}${cls ? ' class="' + cls + '"' : ''}> ` +
    JSON.stringify(text.slice(0, 60));
};
const wide = [];
const reported = [];
for (const el of column.querySelectorAll('*')) {
  if (reported.some((r) => r.contains(el))) continue;
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) continue;
  const style = getComputedStyle(el);
  if (style.visibility === 'hidden') continue;
  const over = Math.max(r.right - colRect.right, colRect.left - r.left);
  const scrolls = el.scrollWidth - el.clientWidth > slack &&
    ['auto', 'scroll'].includes(style.overflowX);
  if (over > slack || scrolls) {
    const px = over > slack ? over : el.scrollWidth - el.clientWidth;
    wide.push(`${describe(el)} is ${Math.round(px)} px wider than the column` +
      (scrolls ? ' (scrolls sideways)' : ''));
    reported.push(el);
  }
}
const images = [];
for (const img of column.querySelectorAll('img')) {
  const figure = img.closest('figure');
  images.push({
    src: img.getAttribute('src') || '',
    file: img.dataset.file || '',
    alt: img.getAttribute('alt') || '',
    loaded: img.complete && img.naturalWidth > 0,
    shown: img.getBoundingClientRect().width,
    widthPx: parseFloat(img.dataset.widthPx || '0'),
    fontPt: parseFloat(img.dataset.fontPt || '0'),
    caption: !!(figure && figure.querySelector('figcaption')
      && figure.querySelector('figcaption').innerText.trim()),
  });
}
const clone = column.cloneNode(true);
for (const el of clone.querySelectorAll(
  'pre, code, script, style, mjx-container, .MathJax, .math, .highlight, kbd, samp, ' +
  '.racer-verbatim'
)) { el.remove(); }
const links = [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'));
const external = [...document.querySelectorAll('script[src], link[rel="stylesheet"][href]')]
  .map((el) => el.getAttribute('src') || el.getAttribute('href'));
return {
  wide: wide,
  images: images,
  prose: clone.textContent,
  text: document.body.innerText,
  links: links,
  external: external,
  width: Math.round(colRect.width),
};
"""


def _is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme in ("http", "https") and parts.hostname not in ("127.0.0.1",)) or (
        url.startswith("//")
    )


def _target_ids(path: Path, cache: dict[Path, set[str]]) -> set[str]:
    if path not in cache:
        text = path.read_text(errors="replace") if path.is_file() else ""
        cache[path] = set(re.findall(r"""\sid=["']([^"']+)["']""", text))
    return cache[path]


def broken_links(
    page: str, hrefs: Iterable[str], html: Path, cache: dict[Path, set[str]]
) -> list[str]:
    """Local links of ``page`` (relative to ``html``) to a missing file or a missing anchor."""
    broken = []
    here = (html / page).parent
    for href in dict.fromkeys(hrefs):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
            continue
        target = (here / unquote(parts.path)).resolve() if parts.path else (html / page)
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            broken.append(f"{href} (no file {os.path.relpath(target, html)})")
        elif parts.fragment and target.suffix == ".html":
            if unquote(parts.fragment) not in _target_ids(target, cache):
                broken.append(f"{href} (no anchor #{parts.fragment})")
    return broken


def machine_paths(text: str, roots: Sequence[str] = ()) -> list[str]:
    """Absolute paths of this machine in ``text``: any of ``roots`` (the repository, the home
    and temporary folders), and any absolute path whose first folder exists here."""
    found = [r for r in roots if r and len(r) > 1 and r in text]
    for m in _PATH_PATTERN.finditer(text):
        first = m.group(1).split("/")[1]
        if os.path.isdir("/" + first) and m.group(1) not in found:
            found.append(m.group(1))
    return found


def _default_roots(html: Path) -> list[str]:
    """Folders whose absolute path must never appear in the book."""
    roots = {str(Path.cwd().resolve()), str(Path.home()), tempfile.gettempdir().rstrip("/") + "/"}
    for p in (html.resolve(), *html.resolve().parents):
        if (p / ".git").exists() or (p / "pyproject.toml").exists():
            roots.add(str(p))
            break
    return sorted(r for r in roots if r not in ("/", ""))


def _screenshot(driver, path: Path) -> Path:
    """A full-page PNG through the DevTools protocol (beyond the 900 px window)."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {
                "x": 0,
                "y": 0,
                "width": WIDTH,
                "height": min(float(size["height"]), 16000.0),
                "scale": 1,
            },
        },
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def _check_page(
    driver,
    base_url: str,
    page: str,
    html: Path,
    roots: Sequence[str],
    screenshots: Path | None = None,
    anchors: dict[Path, set[str]] | None = None,
) -> PageResult:
    """Open one page and list its :class:`Problem` s (see the module docstring)."""
    driver.get_log("browser")  # drop what earlier pages left
    driver.get(base_url + page)
    driver.execute_async_script(_WAIT_FOR_MATHS)
    requested = page
    landed = urlsplit(driver.current_url).path.lstrip("/")
    if landed and landed != page and (html / unquote(landed)).is_file():
        page = unquote(landed)  # a redirect (index.html): links are the landing page's
    seen = driver.execute_script(_INSPECT, _SLACK_PX)
    problems = [Problem(page, "wide", w) for w in seen["wide"]]
    for entry in driver.get_log("browser"):
        if entry.get("level") == "SEVERE":
            problems.append(Problem(page, "console", entry.get("message", "").strip()))
    for img in seen["images"]:
        src = img["src"]
        name = img["file"] or (
            "an inline image" if src.startswith("data:") else src.rsplit("/", 1)[-1]
        )
        if not img["loaded"]:
            problems.append(Problem(page, "image", f"{name} did not load"))
        if not img["caption"]:
            problems.append(Problem(page, "image", f"{name} has no caption"))
        if img["fontPt"] and img["widthPx"]:
            shown_pt = page_mod.displayed_font(img["fontPt"], img["widthPx"], img["shown"])
            if shown_pt < page_mod.MIN_FONT_PT - 0.05:
                problems.append(
                    Problem(
                        page,
                        "font",
                        f"{name}: text of {img['fontPt']:g} pt shown at "
                        f"{shown_pt:.1f} pt (the figure is {img['widthPx']:.0f} px wide, shown "
                        f"at {img['shown']:.0f} px)",
                    )
                )
        alt = img["alt"].strip()
        if not alt or "/" in alt or "\\" in alt or re.search(r"\.(png|svg|jpe?g|gif)$", alt):
            problems.append(
                Problem(page, "image", f"{name}: alt text {alt!r} is not a description")
            )
    for link in broken_links(page, seen["links"], html, anchors if anchors is not None else {}):
        problems.append(Problem(page, "link", link))
    for m in TEX_PATTERN.finditer(seen["prose"]):
        start = max(0, m.start() - 30)
        snippet = " ".join(seen["prose"][start : m.end() + 30].split())
        problems.append(Problem(page, "tex", f"unrendered TeX: ...{snippet}..."))
        break  # one is enough to say the maths did not render
    for path in machine_paths(seen["text"], roots):
        problems.append(Problem(page, "path", f"absolute path {path!r} in the text"))
    for url in seen["external"]:
        if _is_external(url):
            problems.append(Problem(page, "external", f"loads {url} from another host"))
    problems += _text_problems(page, html)
    problems += _screen_problems(driver, page, screenshots)
    shot = None
    if screenshots is not None:
        name = requested.replace("/", "__")[: -len(".html")]
        shot = _screenshot(driver, screenshots / f"{name}.png")
    if requested != page:
        problems = [Problem(requested, p.kind, p.detail) for p in problems]
    return PageResult(requested, problems, shot, int(seen["width"]))


def _text_problems(page: str, html: Path) -> list[Problem]:
    """The problems :mod:`racer_lib.book.pagecheck` reads in the page's own HTML file."""
    text = (html / page).read_text(errors="replace")
    return [Problem(page, kind, detail) for kind, detail in pagecheck.page_problems(text)]


def check_book(
    html: str | os.PathLike,
    screenshots: str | os.PathLike | None = None,
    roots: Sequence[str] | None = None,
    progress: bool = False,
) -> list[PageResult]:
    """Check every page of the built book in ``html`` (see the module docstring)."""
    from tqdm.auto import tqdm

    root = Path(html)
    listed = pages(root)
    roots = _default_roots(root) if roots is None else list(roots)
    shots = Path(screenshots) if screenshots is not None else None
    anchors: dict[Path, set[str]] = {}
    results = []
    with serve(root) as base_url, browser() as driver:
        for page in tqdm(listed, desc="pages", unit="page", disable=not progress):
            results.append(_check_page(driver, base_url, page, root, roots, shots, anchors))
    return results


def summary(results: Sequence[PageResult]) -> str:
    """A reader's account of the check: every problem, then the count per kind."""
    lines = [str(p) for r in results for p in r.problems]
    counts = {k: sum(p.kind == k for r in results for p in r.problems) for k in KINDS}
    bad = sum(bool(r.problems) for r in results)
    column = max((r.column_px for r in results), default=0)
    lines.append(
        f"{len(results)} pages checked at {WIDTH} px (text column {column} px), {bad} with problems"
        + ("" if not bad else ": " + ", ".join(f"{k} {n}" for k, n in counts.items() if n))
    )
    return "\n".join(lines)


# --- the report's first screen (issue 42) ------------------------------------------------------

#: The reproduction report's page, whose verdict must be read without scrolling.
REPORT_PAGE = "notebooks/01_reproduction_report.html"
#: How far down the report's page its counts, legend and forest plot must lie (CSS px).
FIRST_SCREEN_PX = 900
#: What the report's first screen must hold, each found by a selector of its page.
FIRST_SCREEN = {
    "the bottom line": ".racer-bottom-line",
    "the claims per status (counts and legend)": ".racer-verdict-legend",
    "the forest plot": ".racer-verdict figure img",
}
#: A problem with the report's first screen, or a page without its "cite this page" box.
SCREEN = "screen"
KINDS = (*KINDS, SCREEN)

_PLACED = """
const found = {};
for (const [name, selector] of Object.entries(arguments[0])) {
  const el = document.querySelector(selector);
  const r = el && el.getBoundingClientRect();
  found[name] = el ? [r.top + window.scrollY, r.bottom + window.scrollY] : null;
}
return {found: found, cite: !!document.querySelector('#cite-this-page')};
"""


def first_screen(placed: dict[str, list[float] | None], page: str = REPORT_PAGE) -> list[Problem]:
    """Problems with the report's first screen: each of :data:`FIRST_SCREEN` must be on the
    page and end within :data:`FIRST_SCREEN_PX` of its top (``placed``: name to ``[top,
    bottom]`` in CSS px from the page's top, or None where it is missing)."""
    problems = []
    for name, where in placed.items():
        if where is None:
            problems.append(Problem(page, SCREEN, f"{name} is not on the page"))
        elif where[1] > FIRST_SCREEN_PX:
            problems.append(
                Problem(
                    page,
                    SCREEN,
                    f"{name} ends {where[1]:.0f} px down the page, below the first "
                    f"{FIRST_SCREEN_PX} px",
                )
            )
    return problems


def _screen_problems(driver, page: str, screenshots: Path | None) -> list[Problem]:
    """The report's first screen (:func:`first_screen`, with screenshots of it and of its
    forest plot) and, on every chapter's page, its "cite this page" box."""
    seen = driver.execute_script(_PLACED, FIRST_SCREEN)
    problems = []
    if page.startswith("notebooks/") and not seen["cite"]:
        problems.append(Problem(page, SCREEN, 'no "cite this page" box'))
    if page != REPORT_PAGE:
        return problems
    if screenshots is not None:
        _screen_shots(driver, screenshots)
    return problems + first_screen(seen["found"], page)


_PANEL_RECT = """
const el = document.querySelector('.racer-verdict');
if (!el) { return null; }
const r = el.getBoundingClientRect();
return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];
"""


def _screen_shots(driver, screenshots: Path) -> None:
    """The report's first screen (a 1280 x 900 window) and its verdict panel, as PNGs in
    ``screenshots`` (``report_first_screen.png``, ``report_forest_plot.png``)."""
    screenshots.mkdir(parents=True, exist_ok=True)
    panel = driver.execute_script(_PANEL_RECT)
    shots = {"report_first_screen.png": [0, 0, WIDTH, FIRST_SCREEN_PX]}
    if panel:
        shots["report_forest_plot.png"] = [max(0, panel[0] - 8), max(0, panel[1] - 8)] + [
            panel[2] + 16,
            panel[3] + 16,
        ]
    for name, (x, y, width, height) in shots.items():
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {
                "width": WIDTH,
                "height": int(max(FIRST_SCREEN_PX, y + height)),
                "deviceScaleFactor": 1,
                "mobile": False,
            },
        )
        clip = {"x": x, "y": y, "width": width, "height": height, "scale": 1}
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "clip": clip})
        (screenshots / name).write_bytes(base64.b64decode(shot["data"]))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
