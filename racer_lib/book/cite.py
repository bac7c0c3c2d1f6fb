"""How to cite: BibTeX for the paper and for this companion, from ``CITATION.cff``.

The book's "How to cite" page includes what :func:`citation_page` writes at each build: the
paper's entry (``preferred-citation``), the companion's entry (the software: title, version,
release date, licence, the repository's address when ``repository-code`` gives one, and the
commit this build was made from), and the links the file gives. Every page ends with the
"cite this page" box of :func:`cite_box`: the companion and the paper in one line each, the
commit and profile that built the page, and the page's own address.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from racer_lib.errors import InputError
from racer_lib.records.sources import YAML_BUILD_ERRORS


def _read_cff(path: str | os.PathLike) -> dict[str, Any]:
    """``CITATION.cff`` as a mapping (an :class:`InputError` naming the file if it is not one)."""
    path = Path(path)
    try:
        cff = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, *YAML_BUILD_ERRORS) as exc:  # UnicodeDecodeError too
        problem = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"{path}: cannot read the citation file: {problem}") from None
    if not isinstance(cff, dict) or "title" not in cff:
        raise InputError(f"{path}: not a citation file (no mapping with a `title`)")
    return cff


def _author(person: dict[str, Any]) -> str:
    if "family-names" in person:
        given = person.get("given-names", "")
        return f"{person['family-names']}, {given}".rstrip(", ")
    return "{" + str(person.get("name", "")) + "}"  # an organisation: kept as one name


def _key(authors: list[dict[str, Any]], year: Any, title: str) -> str:
    first = authors[0] if authors else {}
    name = first.get("family-names") or first.get("name") or "anon"
    word = next((w for w in re.findall(r"[A-Za-z]+", title) if len(w) > 3), "work")
    return re.sub(r"[^a-z0-9]", "", f"{name}{year}{word}".lower())


def _entry(kind: str, key: str, fields: dict[str, Any]) -> str:
    lines = [f"@{kind}{{{key},"]
    for name, value in fields.items():
        if value not in (None, ""):
            lines.append(f"  {name} = {{{value}}},")
    lines.append("}")
    return "\n".join(lines)


def _paper_bibtex(cff: dict[str, Any]) -> str:
    """The paper's BibTeX entry (``preferred-citation``)."""
    ref = cff.get("preferred-citation")
    if not isinstance(ref, dict):
        raise InputError("CITATION.cff has no preferred-citation (the paper)")
    authors = ref.get("authors", [])
    kind = "inproceedings" if ref.get("type") == "conference-paper" else "article"
    fields = {
        "title": ref.get("title"),
        "author": " and ".join(_author(a) for a in authors),
        "booktitle" if kind == "inproceedings" else "journal": ref.get("collection-title")
        or ref.get("journal"),
        "year": ref.get("year"),
        "url": ref.get("url"),
        "doi": ref.get("doi"),
    }
    return _entry(kind, _key(authors, ref.get("year"), str(ref.get("title", ""))), fields)


def _software_bibtex(cff: dict[str, Any], commit: str = "") -> str:
    """This companion's BibTeX entry (``@software``), with the build's commit when known."""
    authors = cff.get("authors", [])
    year = str(cff.get("date-released", ""))[:4]
    note = f"version {cff.get('version', '')}".strip()
    if commit:
        note += f", commit {commit}"
    fields = {
        "title": cff.get("title"),
        "author": " and ".join(_author(a) for a in authors),
        "year": year,
        "version": cff.get("version"),
        "url": cff.get("repository-code") or cff.get("url"),
        "license": cff.get("license"),
        "note": note,
    }
    return _entry("software", _key(authors, year, str(cff.get("title", ""))), fields)


def build_commit(root: str | os.PathLike) -> str:
    """The commit the checkout at ``root`` is at (``+`` when it has uncommitted changes), or
    ``""`` outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True
        )
        if head.returncode != 0:
            return ""
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
        )
        return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")
    except OSError:
        return ""


def citation_page(cff_path: str | os.PathLike, commit: str = "") -> str:
    """The MyST text of the citation part of the "How to cite" page."""
    cff = _read_cff(cff_path)
    ref = cff.get("preferred-citation", {})
    links = []
    if ref.get("url") or ref.get("doi"):
        links.append(f"the paper: <{ref.get('url') or 'https://doi.org/' + ref['doi']}>")
    if cff.get("repository-code") or cff.get("url"):
        links.append(f"this companion's repository: <{cff.get('repository-code') or cff['url']}>")
    where = (
        "Links: " + "; ".join(links) + "."
        if links
        else "`CITATION.cff` gives no web address for the paper or the repository yet; cite "
        "them by the entries below."
    )
    built = f" This book was built from commit `{commit}`." if commit else ""
    message = " ".join(str(cff.get("message", "")).split())
    return (
        f"{message}{built}\n\n{where}\n\n"
        "**The paper**\n\n```bibtex\n" + _paper_bibtex(cff) + "\n```\n\n"
        "**This companion** (code and rebuilt results)\n\n```bibtex\n"
        + _software_bibtex(cff, commit)
        + "\n```\n"
    )


#: Stand-ins in :func:`cite_box`'s HTML that ``book/_ext/racer_book.py`` fills in per page:
#: the page's address in the book and the link to the "How to cite" page.
PAGE_TOKEN, CITE_TOKEN = "@RACER_PAGE@", "@RACER_CITE@"


def _names(authors: list[dict[str, Any]]) -> str:
    return ", ".join(
        " ".join(str(a.get(k, "")) for k in ("given-names", "family-names")).strip()
        or str(a.get("name", ""))
        for a in authors
    )


def cite_box(cff_path: str | os.PathLike, commit: str = "", profile: str = "") -> str:
    """The "cite this page" box (HTML) of every page: this companion (authors, title, version,
    the ``commit`` and ``profile`` that built the book, the page's address) and the paper it
    reproduces, from ``CITATION.cff``; :data:`PAGE_TOKEN` and :data:`CITE_TOKEN` stand for the
    page's address and the link to the "How to cite" page."""
    cff = _read_cff(cff_path)
    ref = cff.get("preferred-citation", {}) or {}
    built = ", ".join(
        part
        for part in (
            f"version {cff['version']}" if cff.get("version") else "",
            f"commit <code>{html.escape(commit)}</code>" if commit else "",
            f"profile <code>{html.escape(profile)}</code>" if profile else "",
        )
        if part
    )
    year = str(cff.get("date-released", ""))[:4]
    companion = (
        f"{html.escape(_names(cff.get('authors', [])))} ({year}). "
        f"<i>{html.escape(str(cff['title']))}</i>, {built}, page <code>{PAGE_TOKEN}</code>."
    )
    paper = (
        f"{html.escape(_names(ref.get('authors', [])))} ({ref.get('year', '')}). "
        f"{html.escape(str(ref.get('title', '')))}. "
        f"<i>{html.escape(str(ref.get('collection-title') or ref.get('journal') or ''))}</i>."
    )
    return (
        '<aside class="racer-cite" id="cite-this-page"><p><b>Cite this page</b> (one claim of '
        "the report: add its row's permalink, <code>#claim-…</code>): "
        f"{companion}</p><p>It reproduces: {paper}</p><p>BibTeX for both: "
        f'<a href="{CITE_TOKEN}">How to cite</a>.</p></aside>'
    )
