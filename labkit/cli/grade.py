"""``labs grade``: check the command line, check the sandbox, grade the class, print the verdicts;
``labs grade merge``: join the reports of a class graded in shards."""

from __future__ import annotations

import os
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from labkit.cli import common
from labkit.cli.common import UsageError, progress_bar, resolve_lab
from labkit.course import registry
from labkit.grader.limits import Resources
from labkit.text import shorten


def add_parser(sub) -> None:
    """``labs grade``'s arguments, on the ``labs`` command's subparsers."""
    p = sub.add_parser(
        "grade", help="grade a class: every student's starter.py against the instructor's tests",
        description="Run each lab's test_lab.py from this repository on every student's starter.py. Student code "
                    "runs only in a bubblewrap sandbox (no network, no repository, no other submission, resource "
                    "limits), under time limits; the verdicts are decided by the tests, in a process that runs no "
                    "student code. `labs grade merge SHARD.json... --out REPORT` joins the reports of shards.",
        epilog="Statuses: ok, failed, timeout, crashed, missing, syntax error. Exit status 1 when the "
               "instructor's files changed during the run. Threat model: labkit/grader/README.md.",
    )
    p.add_argument("submissions", nargs="+", metavar="SUBMISSIONS",
                   help="a folder with one folder per student, mirroring the repository's paths "
                        "(SUBMISSIONS/<student>/<lab folder>/starter.py; a folder whose name starts with '.' or '_' "
                        "is no student's); or: merge REPORT.json... (shards' reports)")
    p.add_argument("--labs", nargs="+", metavar="LAB", help="labs to grade (default: all)")
    p.add_argument("--out", metavar="REPORT", help="write the report: report.csv, report.json or report.md")
    p.add_argument("--shard", metavar="K/N",
                   help="grade only shard K of N (students split by a hash of their name); merge the N reports "
                        "with `labs grade merge`")
    p.add_argument("--call-timeout", type=float, default=10.0, metavar="S",
                   help="seconds one call into a submission may take (default 10)")
    p.add_argument("--lab-timeout", type=float, default=120.0, metavar="S",
                   help="seconds for one student's whole lab (default 120)")
    p.add_argument("--import-timeout", type=float, default=60.0, metavar="S",
                   help="seconds importing a submission may take (default 60)")
    p.add_argument("--jobs", type=int, default=2, help="student-lab pairs graded at a time (default 2)")
    defaults = Resources()
    limits = p.add_argument_group("resource limits of each sandbox (0: no limit, except --tmp-size)")
    limits.add_argument("--memory-limit", type=float, default=defaults.memory / 2**30, metavar="GIB",
                        help=f"memory of the whole sandbox (RAM and swap, its /tmp included, where cgroups can be "
                             f"made), and address space per process, GiB (default {defaults.memory / 2**30:g})")
    limits.add_argument("--process-limit", type=int, default=defaults.processes, metavar="N",
                        help=f"processes and threads (default {defaults.processes})")
    limits.add_argument("--tmp-size", type=float, default=defaults.tmp_size / 2**20, metavar="MIB",
                        help=f"size of the sandbox's /tmp and largest file, MiB (default {defaults.tmp_size >> 20})")
    limits.add_argument("--cpu-limit", type=int, default=defaults.cpu_seconds, metavar="S",
                        help=f"CPU seconds per process (default {defaults.cpu_seconds})")
    limits.add_argument("--open-files-limit", type=int, default=defaults.open_files, metavar="N",
                        help=f"open files per process (default {defaults.open_files})")
    p.add_argument("--no-sandbox", action="store_true",
                   help="grade without bubblewrap (macOS, or no user namespaces): student code then runs as you, "
                        "sees this repository and the network; a warning goes into the report")
    p.set_defaults(func=cmd_grade)


def cmd_grade(args) -> int:
    from labkit.grader import grade, report, sandbox, schedule

    out = Path(args.out) if args.out else None
    if args.submissions[0] == "merge":
        return _merge(args.submissions[1:], out)
    if len(args.submissions) != 1:
        raise UsageError("give one SUBMISSIONS folder (or: labs grade merge REPORT.json... --out REPORT)")
    submissions = Path(args.submissions[0])
    if os.name != "posix":
        raise UsageError("labs grade needs Linux (its sandbox is bubblewrap); on Windows, run it in WSL2; "
                         "on macOS, in a Linux VM or container (SETUP.md)")
    labs = [resolve_lab(t) for t in args.labs] if args.labs else list(registry.LABS)
    try:
        report.check_path(out)
        if out is not None and out.exists() and out.is_dir():
            raise grade.GradeError(f"--out {out} is a folder; name a file such as report.csv")
        shard = schedule.parse_shard(args.shard) if args.shard else None
        names = [s for s in grade.students(submissions) if schedule.in_shard(s.folder, shard)]
        for name, value in (("--call-timeout", args.call_timeout), ("--lab-timeout", args.lab_timeout),
                            ("--import-timeout", args.import_timeout), ("--tmp-size", args.tmp_size)):
            if not value > 0:
                raise grade.GradeError(f"{name} must be a positive number")
        for name, value in (("--memory-limit", args.memory_limit), ("--process-limit", args.process_limit),
                            ("--cpu-limit", args.cpu_limit),
                            ("--open-files-limit", args.open_files_limit)):
            if value < 0:
                raise grade.GradeError(f"{name} must be 0 (no limit) or more")
    except (grade.GradeError, ValueError) as err:
        raise UsageError(str(err)) from None
    resources = Resources(memory=int(args.memory_limit * 2**30), processes=args.process_limit,
                          tmp_size=int(args.tmp_size * 2**20), cpu_seconds=args.cpu_limit,
                          open_files=args.open_files_limit)
    if args.no_sandbox:
        common.err_console.print(f"[bold red]warning:[/] {escape(grade.UNSANDBOXED)}")
    else:
        try:
            sandbox.leave_session_keyring()  # grade() does too; here, a failure is a usage error
            sandbox.check(resources)
        except sandbox.SandboxError as err:
            raise UsageError(str(err)) from None
    limits = grade.Limits(call=args.call_timeout, lab=args.lab_timeout, imports=args.import_timeout)
    ready = [lab for lab in labs if (lab.path / "test_lab.py").is_file()]
    with progress_bar() as progress:
        task = progress.add_task("grading", total=len(names) * len(ready))
        waiting = lambda: common.err_console.print("waiting for another labs grade on this machine to finish")  # noqa: E731
        result = grade.grade(submissions, labs, limits, jobs=args.jobs, on_verdict=lambda v: progress.advance(task),
                             resources=resources, sandbox=not args.no_sandbox, out=out, shard=shard, on_wait=waiting)
    _print(result, f"labs grade {grade.escape(submissions)}" + (f" --shard {args.shard}" if shard else ""), out)
    return 1 if any(w.startswith(grade.TAMPERED) for w in result.warnings) else 0


def _merge(paths: list[str], out: Path | None) -> int:
    from labkit.grader import report

    if not paths or out is None:
        raise UsageError("labs grade merge REPORT.json... --out REPORT: name the shards' reports and the report to "
                         "write")
    try:
        report.check_path(out)
        merged = report.merge([report.read(Path(p)) for p in paths])
        report.write(merged, out)
    except report.ReportError as err:
        raise UsageError(str(err)) from None
    _print(merged, f"labs grade merge ({len(paths)} shards)", out)
    return 0


def _print(result, title: str, out: Path | None) -> None:
    colors = {"ok": "green", "failed": "red", "timeout": "magenta", "crashed": "magenta", "missing": "yellow",
              "syntax error": "yellow", "refused": "yellow"}
    for key, value in result.header.items():
        common.err_console.print(f"{escape(key)}: {escape(value)}", highlight=False)
    table = Table(title=escape(title))
    for column in ("student", "lab", "passed", "status", "first failure"):
        table.add_column(column, overflow="fold")
    for v in result.verdicts:
        table.add_row(escape(v.student), escape(v.lab), f"{v.passed}/{v.total}",
                      f"[{colors.get(v.status, 'red')}]{escape(v.status)}[/]",
                      escape(shorten(v.first_failure, 160)))
    common.console.print(table)
    for warning in result.warnings:
        common.err_console.print(f"[yellow]warning:[/] {escape(warning)}")
    if out is not None:
        common.console.print(f"Report written to {escape(str(out))}")
