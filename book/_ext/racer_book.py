"""Sphinx settings of the RACER companion's book that Jupyter Book's _config.yml cannot express.

- **Maths offline**: MathJax is served from the book itself (the PyPI package
  ``sphinx-mathjax-offline`` ships MathJax 3 and copies it to ``_static/mathjax``), so a reader
  without network sees rendered equations, not TeX.
- **No thebe**: the book is static (no launch buttons), yet Jupyter Book always loads
  ``sphinx_thebe``, whose configuration script lands twice on every page (a console error).
  Its scripts and stylesheet are dropped from every page.
- **A quiet console**: the theme's colour mode defaults to ``light`` (an empty mode is logged
  as an error by the theme's script).
- **A favicon** at the root as well (the redirecting ``index.html`` has no icon link).
- **Cite this page**: every page ends with the box ``racer book build`` writes into the staged
  book (``_cite_box.html``, :func:`racer_lib.book.cite.cite_box`), with the page's address and
  the link to the "How to cite" page filled in.
- **The book's stylesheet and script** (``_static/racer.css``, ``_static/racer.js``): a wider
  text column, compact tables, click-to-enlarge figures.
"""

from __future__ import annotations

THEBE_FILES = ("sphinx-thebe.js", "sphinx-thebe.css")


def _config_inited(app, config) -> None:
    config.html_context = {"default_mode": "light", **(config.html_context or {})}
    if "_static" not in config.html_static_path:
        config.html_static_path = [*config.html_static_path, "_static"]


def _not_thebe(asset) -> bool:
    name = getattr(asset, "filename", None) or ""
    body = (getattr(asset, "attributes", None) or {}).get("body", "")
    return not (any(name.endswith(f) for f in THEBE_FILES) or "THEBE_JS_URL" in body)


#: The box's file in the staged book and its stand-ins (racer_lib.book.cite).
CITE_BOX, PAGE_TOKEN, CITE_TOKEN = "_cite_box.html", "@RACER_PAGE@", "@RACER_CITE@"


def _cite_box(app) -> str:
    from pathlib import Path

    if not hasattr(app, "_racer_cite_box"):
        path = Path(app.srcdir) / CITE_BOX
        app._racer_cite_box = path.read_text(encoding="utf-8") if path.is_file() else ""
    return app._racer_cite_box


def _page_context(app, pagename, templatename, context, doctree) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if _not_thebe(asset)]
    box = _cite_box(app)
    if box and doctree is not None and "body" in context:
        cite = context["pathto"]("cite") if "cite" in app.env.found_docs else "#"
        context["body"] += box.replace(PAGE_TOKEN, f"{pagename}.html").replace(CITE_TOKEN, cite)


def _favicon_at_root(app, exc) -> None:
    """Browsers ask for /favicon.ico on pages without an icon link (the redirecting
    index.html): serve the book's icon there too."""
    import shutil
    from pathlib import Path

    icon = Path(app.srcdir) / "_static" / "favicon.ico"
    if exc is None and icon.is_file() and app.builder.format == "html":
        shutil.copyfile(icon, Path(app.outdir) / "favicon.ico")


def setup(app):
    app.setup_extension("sphinx-mathjax-offline")
    app.connect("config-inited", _config_inited)
    app.connect("html-page-context", _page_context, priority=900)
    app.add_css_file("racer.css")
    app.add_js_file("racer.js")
    app.connect("build-finished", _favicon_at_root)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
