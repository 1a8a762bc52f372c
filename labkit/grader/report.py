"""The grading report as CSV, JSON or Markdown.

Every string in a verdict may come from a student (a folder name, an exception message), so
each is shown as data, never as markup: control characters are removed everywhere
(:func:`labkit.text.clean`); in Markdown each cell is escaped (:func:`labkit.text.markdown_table`
with ``literal=True``); in CSV HTML's ``& < >`` become entities and a cell that a spreadsheet
would run as a formula (``=``, ``+``, ``-``, ``@`` first) gets a leading apostrophe.
"""

from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path

from labkit.text import clean, markdown_escape, markdown_table

SUFFIXES = (".csv", ".json", ".md")
COLUMNS = ["student", "lab", "passed", "total", "status", "first_failure", "seconds"]


class ReportError(ValueError):
    """A report name this module cannot write."""


def check_path(out: Path | None) -> None:
    if out is not None and out.suffix.lower() not in SUFFIXES:
        raise ReportError(f"--out {out}: the report must end in {', '.join(SUFFIXES)}")


def _csv_cell(value):
    if not isinstance(value, str):
        return value
    text = html.escape(" ".join(clean(value).split()), quote=False)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def render(rows: list[dict], suffix: str, warnings: list[str] = ()) -> str:
    """``rows`` (one dict per verdict, keys COLUMNS) and ``warnings`` in the format ``suffix`` names."""
    suffix = suffix.lower()
    if suffix == ".json":
        cleaned = [{k: clean(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
        return json.dumps({"results": cleaned, "warnings": [clean(w) for w in warnings]}, indent=2) + "\n"
    if suffix == ".csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_cell(row[k]) for k in COLUMNS})
        for warning in warnings:  # a row of its own, so that a spreadsheet shows it too
            writer.writerow({"student": "(warning)", "first_failure": _csv_cell(warning)})
        return buf.getvalue()
    if suffix == ".md":
        table = markdown_table(COLUMNS, [[row[k] for k in COLUMNS] for row in rows], literal=True)
        return table + "\n" + "".join(f"\n> warning: {markdown_escape(w)}\n" for w in warnings)
    raise ReportError(f"unknown report format {suffix!r}")


def write(rows: list[dict], out: Path, warnings: list[str] = ()) -> None:
    check_path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(rows, out.suffix, warnings), encoding="utf-8")
