"""``labs grade``: check the command line, check the sandbox, grade the class, print the verdicts."""

from __future__ import annotations

import os
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from labkit.cli import common
from labkit.cli.common import UsageError, progress_bar, resolve_lab
from labkit.course import registry
from labkit.grader.sandbox import Resources
from labkit.text import shorten


def cmd_grade(args) -> int:
    from labkit.grader import grade, sandbox

    out = Path(args.out) if args.out else None
    if os.name != "posix":
        raise UsageError("labs grade needs Linux (its sandbox is bubblewrap); on Windows, run it in WSL2; "
                         "on macOS, in a Linux VM or container (SETUP.md)")
    labs = [resolve_lab(t) for t in args.labs] if args.labs else list(registry.LABS)
    try:
        grade.check_report_path(out)
        if out is not None and out.exists() and out.is_dir():
            raise grade.GradeError(f"--out {out} is a folder; name a file such as report.csv")
        names = grade.students(Path(args.submissions))
        for name, value in (("--call-timeout", args.call_timeout), ("--lab-timeout", args.lab_timeout),
                            ("--import-timeout", args.import_timeout), ("--tmp-size", args.tmp_size)):
            if not value > 0:
                raise grade.GradeError(f"{name} must be a positive number")
        for name, value in (("--memory-limit", args.memory_limit), ("--process-limit", args.process_limit),
                            ("--cpu-limit", args.cpu_limit),
                            ("--open-files-limit", args.open_files_limit)):
            if value < 0:
                raise grade.GradeError(f"{name} must be 0 (no limit) or more")
    except grade.GradeError as err:
        raise UsageError(str(err)) from None
    resources = Resources(memory=int(args.memory_limit * 2**30), processes=args.process_limit,
                                  tmp_size=int(args.tmp_size * 2**20),
                                  cpu_seconds=args.cpu_limit, open_files=args.open_files_limit)
    if args.no_sandbox:
        common.err_console.print(f"[bold red]warning:[/] {escape(grade.UNSANDBOXED)}")
    else:
        try:
            sandbox.check(resources)
        except sandbox.SandboxError as err:
            raise UsageError(str(err)) from None
    limits = grade.Limits(call=args.call_timeout, lab=args.lab_timeout, imports=args.import_timeout)
    ready = [lab for lab in labs if (lab.path / "test_lab.py").is_file()]
    with progress_bar() as progress:
        task = progress.add_task("grading", total=len(names) * len(ready))
        verdicts, warnings = grade.grade(Path(args.submissions), labs, limits, jobs=args.jobs,
                                         on_verdict=lambda v: progress.advance(task), resources=resources,
                                         sandbox=not args.no_sandbox, out=out)
    colors = {"ok": "green", "failed": "red", "timeout": "magenta", "crashed": "magenta", "missing": "yellow",
              "syntax error": "yellow"}
    table = Table(title=f"labs grade {escape(str(args.submissions))}")
    for column in ("student", "lab", "passed", "status", "first failure"):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        table.add_row(escape(v.student), v.lab, f"{v.passed}/{v.total}", f"[{colors[v.status]}]{v.status}[/]",
                      escape(shorten(v.first_failure, 160)))
    common.console.print(table)
    for warning in warnings:
        common.err_console.print(f"[yellow]warning:[/] {escape(warning)}")
    if out is not None:
        common.console.print(f"Report written to {escape(str(out))}")
    return 1 if any(w.startswith(grade.TAMPERED) for w in warnings) else 0


