"""Small text helpers shared by the labs command, the grader's reports and the benchmarks."""

from __future__ import annotations

import re

# Control characters other than tab and newline: a student's message must not reach a terminal or a
# report with escape sequences in it.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """``text`` without control characters (terminal escapes, NUL, bell...)."""
    return _CONTROL.sub("", str(text))


def one_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of ``text``, cleaned, cut at ``limit`` characters on a word boundary."""
    line = next((s.strip() for s in clean(text).splitlines() if s.strip()), "")
    return shorten(line, limit)


def shorten(text: str, limit: int) -> str:
    """``text`` with its white space folded, cut at ``limit`` characters (at a word boundary when one
    is near) and marked with an ellipsis."""
    text = " ".join(clean(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def markdown_escape(text: str) -> str:
    """``text`` as literal Markdown: HTML's ``& < >`` as entities, every other character Markdown
    may read as markup backslash-escaped, control characters removed, on one line."""
    text = " ".join(clean(text).split())
    if re.fullmatch(r"-?\d+(\.\d+)?", text):  # a number reads as itself
        return text
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~\"'=:])", r"\\\1", text)


def markdown_table(headers: list[str], rows: list[list], *, literal: bool = False) -> str:
    """A Markdown table; cells are printed with ``str`` (format floats first), pipes escaped.

    ``literal=True`` for text that comes from someone else (a student's error message): each cell
    is shown as written, never as Markdown or HTML (:func:`markdown_escape`)."""

    def cell(value) -> str:
        if literal:
            return markdown_escape(str(value))
        return clean(str(value)).replace("\n", " ").replace("|", "\\|")

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
