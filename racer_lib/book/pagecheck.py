"""What a built page's own HTML says that a reader should never meet (``make book-check``).

Read from the page's file, not the browser, so that each check is a plain function of the text:

``numbering``  a table or figure number missing from a page's run (``Table 7.3`` then
               ``Table 7.5``: a table numbered and never shown), a numbered caption with no
               table or image under it, or the prose naming a number of the page that no
               caption carries;
``repr``       the repr of a Python object in a cell's output (``PosixPath(``, ``<Figure``,
               ``<matplotlib...``, ``... object at 0x...``): a value a cell echoed by mistake;
``stderr``     a cell's standard error on the page;
``warning``    a Python warning in a cell's output (``TqdmWarning: ...``);
``download``   a ``Downloading data from`` line: the page shows its plumbing.

:func:`page_problems` returns ``(kind, detail)`` pairs; :mod:`racer_lib.book.bookcheck` adds
them to the page's problems.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["KINDS", "numbering_problems", "output_problems", "page_problems"]

KINDS = ("numbering", "repr", "stderr", "warning", "download")

#: Reprs of Python objects that a cell echoed instead of showing.
REPR_PATTERN = re.compile(
    r"\b(?:Posix|Windows|Pure)?Path\(['\"]|<Figure\b|<matplotlib\.|<Axes\b|<IPython\.|"
    r"\bobject at 0x[0-9a-f]+"
)
#: A Python warning as ``warnings`` prints it (``...: TqdmWarning: text``).
WARNING_PATTERN = re.compile(r"\b[A-Z][A-Za-z]*Warning\b:")
DOWNLOAD_PATTERN = re.compile(r"Downloading data from")
#: A reference in the prose to a numbered table or figure of the book (``Table 7.4``).
_REFERENCE = re.compile(r"\b(Table|Figure|Fig\.)\s+(\d+)\.(\d+)\b")
_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "wbr",
}
_SKIP = {"script", "style"}


class _Page(HTMLParser):
    """One pass over a page: its cell outputs (kind, text), its numbered blocks (kind, number,
    whether the table or image is there) and its prose outside code and outputs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._stack: list[tuple[str, str]] = []  # (tag, role) per open element
        self.outputs: list[list[str]] = []  # [kind, text]
        self.numbered: list[list] = []  # [kind, number, has its table or image]
        self.prose: list[str] = []

    def _open(self, role: str) -> bool:
        return any(r == role for _, r in self._stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        role = ""
        if "output" in classes and not self._open("output"):
            role = "output"
            self.outputs.append([classes[1] if len(classes) > 1 else "output", ""])
        elif "racer-table" in classes or "racer-figure" in classes:
            role = "block"
            self.numbered.append(["Table" if "racer-table" in classes else "Figure", "", False])
        elif "racer-number" in classes and self._open("block"):
            role = "number"
        elif tag in _SKIP or tag in ("pre", "code"):
            role = "code"
        if tag in ("table", "img") and self._open("block"):
            self.numbered[-1][2] = True
        if tag not in _VOID:
            self._stack.append((tag, role))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                del self._stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if self._open("output"):
            self.outputs[-1][1] += data
        if self._open("number"):
            self.numbered[-1][1] += data
        elif not self._open("code") and not self._open("output"):
            self.prose.append(data)


def _parse(text: str) -> _Page:
    parser = _Page()
    parser.feed(text)
    parser.close()
    return parser


def _first_line(text: str, at: int = 0) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return " ".join(text[start : end if end >= 0 else None].split())[:160]


def output_problems(text: str) -> list[tuple[str, str]]:
    """The ``repr``, ``stderr``, ``warning`` and ``download`` problems of a page's HTML."""
    found = []
    for kind, out in _parse(text).outputs:
        if kind == "stderr" and out.strip():
            found.append(("stderr", f"standard error on the page: {_first_line(out.strip())!r}"))
        for name, pattern in (
            ("repr", REPR_PATTERN),
            ("warning", WARNING_PATTERN),
            ("download", DOWNLOAD_PATTERN),
        ):
            m = pattern.search(out)
            if m:
                found.append((name, f"in a cell's output: {_first_line(out, m.start())!r}"))
    return found


def _number(label: str) -> tuple[str, int, int] | None:
    m = re.match(r"\s*(Table|Figure)\s+(\d+)\.(\d+)\.?\s*$", label)
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def numbering_problems(text: str) -> list[tuple[str, str]]:
    """Numbers of a page's tables and figures that skip, lack their table or image, or are
    named in the prose without a caption carrying them."""
    page = _parse(text)
    found = []
    seen: dict[str, list[tuple[int, int]]] = {"Table": [], "Figure": []}
    for kind, label, present in page.numbered:
        number = _number(label)
        if number is None:
            continue
        seen[kind].append(number[1:])
        if not present:
            what = "table" if kind == "Table" else "image"
            found.append(("numbering", f"{kind} {number[1]}.{number[2]} has no {what}"))
    for kind, numbers in seen.items():
        expected = [(c, k + 1) for k, (c, _) in enumerate(numbers)]
        if numbers != expected:
            shown = ", ".join(f"{c}.{k}" for c, k in numbers)
            found.append(("numbering", f"{kind.lower()} numbers skip or repeat: {shown}"))
    chapters = {c for numbers in seen.values() for c, _ in numbers}
    prose = " ".join(page.prose)
    for m in _REFERENCE.finditer(prose):
        kind = "Table" if m.group(1) == "Table" else "Figure"
        number = (int(m.group(2)), int(m.group(3)))
        if number[0] in chapters and number not in seen[kind]:
            found.append(("numbering", f"the text names {m.group(0)}, which the page lacks"))
    return found


def page_problems(text: str) -> list[tuple[str, str]]:
    """Every problem of this module's kinds on one page's HTML (see the module docstring)."""
    return numbering_problems(text) + output_problems(text)
