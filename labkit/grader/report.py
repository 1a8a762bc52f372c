"""The grading report (header, verdicts, warnings) as CSV, JSON or Markdown, every string shown as
data and escaped, never refused, and written whole or not at all; the merge of a sharded class's
reports."""

from __future__ import annotations

import collections
import contextlib
import csv
import html
import io
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from labkit.grader.submissions import escape
from labkit.text import markdown_escape, markdown_table

SUFFIXES = (".csv", ".json", ".md")
UNGRADED = ("missing", "syntax error", "refused")  # verdicts given without running a test: 0 of the lab's count
COLUMNS = ["student", "lab", "passed", "total", "status", "first_failure", "seconds"]
TEXT_COLUMNS = ("student", "lab", "status", "first_failure")


class ReportError(ValueError):
    """A report name this module cannot write, or reports that cannot be merged."""


@dataclass
class Verdict:
    student: str
    lab: str  # the lab id, "02-06"
    passed: int
    total: int
    status: str
    first_failure: str
    seconds: float


@dataclass
class Report:
    verdicts: list[Verdict]
    warnings: list[str] = field(default_factory=list)
    header: dict[str, str] = field(default_factory=dict)  # how the class was graded, one line each


def check_path(out: Path | None) -> None:
    if out is not None and out.suffix.lower() not in SUFFIXES:
        raise ReportError(f"--out {out}: the report must end in {', '.join(SUFFIXES)}")


def _csv_cell(value):
    if not isinstance(value, str):
        return value
    text = html.escape(" ".join(escape(value).split()), quote=False)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def render(report: Report, suffix: str) -> str:
    """``report`` in the format ``suffix`` names (".csv", ".json", ".md")."""
    rows = [{k: escape(v) if isinstance(v, str) else v for k, v in asdict(v).items()} for v in report.verdicts]
    warnings = [escape(w) for w in report.warnings]
    header = {escape(k): escape(v) for k, v in report.header.items()}
    suffix = suffix.lower()
    if suffix == ".json":
        return json.dumps({"header": header, "results": rows, "warnings": warnings}, indent=2) + "\n"
    if suffix == ".csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for key, value in header.items():  # rows of their own, so that a spreadsheet shows them too
            writer.writerow({"student": "(header)", "lab": key, "first_failure": _csv_cell(value)})
        for row in rows:
            writer.writerow({k: _csv_cell(row[k]) for k in COLUMNS})
        for warning in warnings:
            writer.writerow({"student": "(warning)", "first_failure": _csv_cell(warning)})
        return buf.getvalue()
    if suffix == ".md":
        lines = "".join(f"- {markdown_escape(k)}: {markdown_escape(v)}\n" for k, v in header.items())
        table = markdown_table(COLUMNS, [[row[k] for k in COLUMNS] for row in rows], literal=True)
        return lines + ("\n" if lines else "") + table + "\n" + \
            "".join(f"\n> warning: {markdown_escape(w)}\n" for w in warnings)
    raise ReportError(f"unknown report format {suffix!r}")


def write(report: Report, out: Path) -> None:
    """``report`` into ``out``, whole or not at all: written to a temporary file in the same folder,
    then renamed over ``out``, so that a failure leaves the report that was there before."""
    check_path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = render(report, out.suffix).encode("utf-8", "backslashreplace")  # render escaped it all: a last net
    try:
        mode = os.stat(out).st_mode & 0o777
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        mode = 0o666 & ~mask
    fd, partial = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(partial, mode)
        os.replace(partial, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def read(path: Path) -> Report:
    """A report written as JSON (the format that keeps everything)."""
    if path.suffix.lower() != ".json":
        raise ReportError(f"{path}: only JSON reports can be merged (write each shard's with --out NAME.json)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        verdicts = [Verdict(**{k: escape(row[k]) if k in TEXT_COLUMNS else row[k] for k in COLUMNS})
                    for row in data["results"]]
        return Report(verdicts, [escape(w) for w in data["warnings"]],
                      {escape(k): escape(v) for k, v in data["header"].items()})
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ReportError(f"{path}: not a report of labs grade ({type(err).__name__}: {err})") from None


def merge(reports: list[Report]) -> Report:
    """The report of the whole class, from the reports of its shards (one each, graded with the same
    instructor files, labs and limits): verdicts in student order, then the labs' order, as one
    machine writes them; a missing, unparsable or refused submission scores 0 of its lab's tests, as
    counted in every shard. A (student, lab) in two rows is refused: no row may replace another."""
    if not reports:
        raise ReportError("no reports to merge")
    shards = sorted(r.header.get("shard", "") for r in reports)
    n = shards[0].split("/")[-1] if shards[0] else ""
    if not n.isdigit() or shards != [f"{k}/{n}" for k in range(1, int(n) + 1)]:
        raise ReportError(f"the reports are shards {', '.join(s or '(none)' for s in shards)}: merge needs "
                          "each shard K/N of one grading, once")
    common = {k: v for k, v in reports[0].header.items() if k != "shard"}
    for r in reports[1:]:
        differ = sorted(k for k in common.keys() | r.header.keys() - {"shard"} if r.header.get(k) != common.get(k))
        if differ:
            raise ReportError(f"shard {r.header['shard']} was graded differently ({', '.join(differ)} differ): "
                              "grade every shard with the same checkout and options")
    labs = common.get("labs", "").split()
    rows = collections.Counter((v.student, v.lab) for r in reports for v in r.verdicts)
    twice = sorted(key for key, n in rows.items() if n > 1)
    if twice:
        student, lab = twice[0]
        raise ReportError(f"student {escape(student)!r}, lab {escape(lab)}: in more than one row of the shards' "
                          "reports; each student is graded once, and no row may stand in for another")
    verdicts = sorted((v for r in reports for v in r.verdicts),
                      key=lambda v: (v.student, labs.index(v.lab) if v.lab in labs else len(labs), v.lab))
    fill_totals(verdicts)
    warnings = list(dict.fromkeys(w for r in reports for w in r.warnings))
    return Report(verdicts, warnings, common)


def fill_totals(verdicts: list[Verdict]) -> None:
    """A missing, unparsable or refused submission scores 0 of its lab's tests, as counted in the runs that
    did happen."""
    counts: dict[str, int] = {}
    for v in verdicts:
        if v.status not in UNGRADED:
            counts[v.lab] = max(counts.get(v.lab, 0), v.total)
    for v in verdicts:
        if v.status in UNGRADED:
            v.total = counts.get(v.lab, 0)
