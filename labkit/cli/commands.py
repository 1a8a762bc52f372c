"""The ``labs`` command: list the labs, check your work, read hints, run the bug
gallery, grade a class.

    labs list
    labs check [LAB ...] [--impl starter]
    labs hint LAB [N]
    labs bugs LAB
    labs grade SUBMISSIONS [--labs LAB ...] [--out report.csv|.json|.md]

A LAB is an id from ``labs list`` ("02-06") or the lab's folder.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from labkit.course import bugs, hints, registry
from labkit.course.registry import Lab
from labkit.text import shorten

console = Console()
err_console = Console(stderr=True)


class UsageError(Exception):
    """Bad input from the command line: printed as one message, exit status 2."""


# --------------------------------------------------------------------------- helpers


def resolve_lab(text: str) -> Lab:
    """A lab from its id ("02-06", "2-6", "99-01") or its folder (absolute or relative)."""
    found = re.fullmatch(r"(\d{1,2})-(\d{1,2})", text.strip())
    if found:
        lab_id = f"{int(found.group(1)):02d}-{int(found.group(2)):02d}"
        if any(lab.id == lab_id for lab in registry.LABS):
            return registry.get(lab_id)
    path = Path(text)
    for candidate in (path, registry.ROOT / path):
        lab = registry.lab_for_path(candidate) if candidate.exists() else None
        if lab is not None:
            return lab
    known = ", ".join(lab.id for lab in registry.LABS)
    raise UsageError(f"no lab {text!r}; the labs are: {known} (see `labs list`)")


def require_folder(lab: Lab, *files: str) -> None:
    """UsageError unless the lab's folder (and ``files`` in it) exist in this checkout."""
    if not lab.path.is_dir():
        raise UsageError(f"lab {lab.id}'s folder {lab.folder}/ is not in this checkout yet")
    missing = [f for f in files if not (lab.path / f).exists()]
    if missing:
        raise UsageError(f"lab {lab.id} ({lab.folder}/) has no {', '.join(missing)} yet")


# --------------------------------------------------------------------------- labs list


def cmd_list(args) -> int:
    table = Table(title="The labs, in study order")
    for column in ("#", "lab", "phase", "title", "runs on", "folder"):
        table.add_column(column, overflow="fold")
    for n, lab in enumerate(registry.LABS, start=1):
        folder = lab.folder if lab.path.is_dir() else f"{lab.folder} [dim](not in this checkout yet)[/]"
        table.add_row(str(n), lab.id, registry.PHASES.get(lab.phase, lab.phase), escape(lab.title), lab.runs_on,
                      folder)
    console.print(table)
    console.print("Work in a lab's starter.py; [bold]labs check LAB --impl starter[/] runs its tests on your work.")
    return 0


# --------------------------------------------------------------------------- labs check


def cmd_check(args) -> int:
    from labkit.course.runner import run_lab_tests

    labs = [resolve_lab(t) for t in args.labs] if args.labs else list(registry.LABS)
    impl = args.impl or os.environ.get("LAB_IMPL") or "solution"
    rows = []
    with _progress() as progress:
        for lab in labs:
            if not (lab.path / "test_lab.py").is_file():
                rows.append((lab, None, "folder not in this checkout yet" if not lab.path.is_dir()
                             else "no test_lab.py yet"))
                continue
            task = progress.add_task(f"{lab.id} {impl}", total=None)

            def update(done, total, task=task):
                progress.update(task, completed=done, total=total)

            run = run_lab_tests(lab.path, impl=impl, on_progress=update)
            progress.update(task, visible=False)
            rows.append((lab, run, run.first_problem()))

    table = Table(title=f"labs check (LAB_IMPL={impl})")
    table.add_column("lab")
    table.add_column("passed", no_wrap=True)
    table.add_column("first failure", overflow="fold")
    all_ok = True
    for lab, run, problem in rows:
        if run is None:
            all_ok = False
            table.add_row(lab.id, "[yellow]-[/]", escape(problem))
            continue
        skipped = sum(t.outcome == "skipped" for t in run.tests)
        if run.tests and skipped == len(run.tests) and not run.errors and not run.timed_out:
            # Nothing could run here (torch/triton not installed): not a failure of your work.
            table.add_row(lab.id, f"[yellow]0/0 ({skipped} skipped)[/]", escape(shorten(run.tests[0].message, 200)))
            continue
        ok = run.all_passed
        all_ok &= ok
        score = f"{run.passed}/{run.total}" + (f" ({skipped} skipped)" if skipped else "") if run.tests else "-"
        table.add_row(lab.id, f"[{'green' if ok else 'red'}]{score}[/]",
                      escape(shorten(problem, 200)) if not ok else "")
    console.print(table)
    if not all_ok:
        console.print(f"Details: [bold]LAB_IMPL={impl} pytest <lab folder>[/]; stuck? [bold]labs hint LAB[/]")
    return 0 if all_ok else 1


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err_console, transient=True)


# --------------------------------------------------------------------------- labs hint


def cmd_hint(args) -> int:
    lab = resolve_lab(args.lab)
    require_folder(lab, "hints.md")
    found = hints.parse_hints((lab.path / "hints.md").read_text(encoding="utf-8"))
    if not found:
        raise UsageError(f"{lab.folder}/hints.md has no '## Hint 1' section")
    if args.reset:
        hints.forget(lab.id)
    if args.n is None:
        n = hints.next_unread(lab.id, len(found))
    else:
        n = args.n
        if not 1 <= n <= len(found):
            raise UsageError(f"lab {lab.id} has hints 1 to {len(found)}, not {n}")
    title, body = found[n - 1]
    console.rule(f"lab {lab.id}: {title} (of {len(found)})")
    console.print(Markdown(body))
    hints.remember(lab.id, n)
    if n < len(found):
        console.print(f"[dim]Still stuck? `labs hint {lab.id}` shows hint {n + 1}.[/]")
    else:
        console.print("[dim]That was the last hint; the lab's README walks through each step.[/]")
    return 0


# --------------------------------------------------------------------------- labs bugs


def cmd_bugs(args) -> int:
    lab = resolve_lab(args.lab)
    require_folder(lab, "test_lab.py", "solution.py")
    gallery = bugs.bugs_of(lab.path)
    if not gallery:
        raise UsageError(f"lab {lab.id} has no bugs/*.py yet")
    if args.diff:
        return _print_diffs(lab, gallery)
    tests = set(bugs.test_functions(lab.path))
    with _progress() as progress:
        task = progress.add_task(f"{lab.id}: running the tests on each bug", total=len(gallery))
        checks = bugs.check_gallery(lab.path, jobs=args.jobs, bugs=gallery, on_done=lambda c: progress.advance(task))

    table = Table(title=f"lab {lab.id}: the bug gallery (LAB_IMPL=bugs/<name>)")
    table.add_column("bug", overflow="fold", ratio=2)
    table.add_column("caught by (✓: listed in its CAUGHT_BY)", overflow="fold", ratio=3)
    table.add_column("verdict", overflow="fold", ratio=2)
    bad = 0
    for check in checks:
        bug = check.bug
        declared = bug.caught_by or []
        unknown = [t for t in declared if t not in tests]
        if check.skip_reason:
            verdict = f"[yellow]not checkable here: {escape(check.skip_reason)}[/]"
        elif not check.caught:
            verdict = "[red]NOT CAUGHT: every test passes[/]" if not check.run.errors else \
                f"[red]not run: {escape(shorten(check.run.errors[0], 80))}[/]"
        elif bug.problem or not bug.doc or not declared:
            verdict = "[yellow]caught; " + ("no docstring" if not bug.doc else "no CAUGHT_BY list") + "[/]"
        elif unknown:
            verdict = f"[yellow]caught; CAUGHT_BY names no test {', '.join(unknown)}[/]"
        elif check.declared_missed:
            verdict = f"[yellow]caught; CAUGHT_BY {', '.join(check.declared_missed)} did not fail[/]"
        else:
            skipped_here = [t for t in declared if t not in check.catchers]  # GPU tests on a CPU machine
            verdict = "[green]caught; CAUGHT_BY agrees[/]" + (
                f" [dim]({', '.join(skipped_here)} skips here)[/]" if skipped_here else "")
        bad += not check.ok and not check.skip_reason
        marked = [f"{t} ✓" if t in declared else t for t in check.catchers]
        table.add_row(f"{bug.name}\n[dim]{escape(shorten(bug.summary, 100))}[/]", escape("\n".join(marked)) or "-",
                      verdict)
    console.print(table)
    unchecked = sum(bool(c.skip_reason) for c in checks)
    console.print(f"{len(checks) - bad - unchecked} of {len(checks)} bugs caught by the tests their CAUGHT_BY names"
                  + (f"; {unchecked} only by tests that skip on this machine." if unchecked else "."))
    return 0 if bad == 0 else 1


def _print_diffs(lab: Lab, gallery: list) -> int:
    """Each bug of the gallery as the diff it makes to the solution."""
    for bug in gallery:
        console.rule(f"bugs/{bug.name}.py: {escape(bug.summary)}")
        try:
            console.print(escape(bugs.diff(lab.path, bug)), highlight=False, soft_wrap=True)
        except (bugs.BugEditError, OSError) as err:
            console.print(f"[red]{escape(str(err))}[/]")
    return 0


# --------------------------------------------------------------------------- labs grade


def cmd_grade(args) -> int:
    from labkit.grader import grade

    out = Path(args.out) if args.out else None
    if os.name != "posix":
        raise UsageError("labs grade needs Linux or macOS (its worker processes use POSIX pipes and process "
                         "groups); on Windows, run it in WSL2")
    labs = [resolve_lab(t) for t in args.labs] if args.labs else list(registry.LABS)
    try:
        grade.check_report_path(out)
        if out is not None and out.exists() and out.is_dir():
            raise grade.GradeError(f"--out {out} is a folder; name a file such as report.csv")
        names = grade.students(Path(args.submissions))
        for name, value in (("--call-timeout", args.call_timeout), ("--lab-timeout", args.lab_timeout),
                            ("--import-timeout", args.import_timeout)):
            if not value > 0:
                raise grade.GradeError(f"{name} must be a positive number of seconds")
    except grade.GradeError as err:
        raise UsageError(str(err)) from None
    limits = grade.Limits(call=args.call_timeout, lab=args.lab_timeout, imports=args.import_timeout)
    ready = [lab for lab in labs if (lab.path / "test_lab.py").is_file()]
    with _progress() as progress:
        task = progress.add_task("grading", total=len(names) * len(ready))
        verdicts, warnings = grade.grade(Path(args.submissions), labs, limits, jobs=args.jobs,
                                         on_verdict=lambda v: progress.advance(task))
    colors = {"ok": "green", "failed": "red", "timeout": "magenta", "crashed": "magenta", "missing": "yellow",
              "syntax error": "yellow"}
    table = Table(title=f"labs grade {args.submissions}")
    for column in ("student", "lab", "passed", "status", "first failure"):
        table.add_column(column, overflow="fold")
    for v in verdicts:
        table.add_row(escape(v.student), v.lab, f"{v.passed}/{v.total}", f"[{colors[v.status]}]{v.status}[/]",
                      escape(shorten(v.first_failure, 160)))
    console.print(table)
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}")
    if out is not None:
        grade.write_report(verdicts, out, warnings)
        console.print(f"Report written to {out}")
    return 1 if any(w.startswith(grade.TAMPERED) for w in warnings) else 0


# --------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="labs",
        description="Paged-attention labs: list them, check your work, read hints, run the bug gallery, grade.",
        epilog="A LAB is an id from `labs list` (e.g. 02-06) or the lab's folder.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("list", help="every lab with its phase, title, CPU/GPU and folder")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("check", help="run the labs' tests and show a board (exit 0 only when all pass)")
    p.add_argument("labs", nargs="*", metavar="LAB", help="labs to check (default: all)")
    p.add_argument("--impl", metavar="NAME",
                   help="the implementation to test: solution (default, or $LAB_IMPL), starter (your work), "
                        "bugs/<name>, or another module of the lab folder")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("hint", help="the lab's hints, one at a time")
    p.add_argument("lab", metavar="LAB")
    p.add_argument("n", nargs="?", type=int, metavar="N", help="which hint (default: the next one you have not seen)")
    p.add_argument("--reset", action="store_true", help="forget which hints of this lab you have seen")
    p.set_defaults(func=cmd_hint)

    p = sub.add_parser("bugs", help="run the lab's tests against each bug of its gallery")
    p.add_argument("lab", metavar="LAB")
    p.add_argument("--jobs", type=int, default=2, help="test runs at a time (default 2)")
    p.add_argument("--diff", action="store_true", help="print each bug as the diff it makes to the solution")
    p.set_defaults(func=cmd_bugs)

    p = sub.add_parser(
        "grade", help="grade a class: every student's starter.py against the instructor's tests",
        description="Run each lab's test_lab.py from this repository on every student's starter.py. Student code "
                    "runs only in worker processes, under time limits; the verdicts are decided by the tests.",
        epilog="Statuses: ok, failed, timeout, crashed, missing, syntax error. Exit status 1 when the "
               "instructor's files changed during the run. Not an OS sandbox: see SETUP.md.",
    )
    p.add_argument("submissions", metavar="SUBMISSIONS",
                   help="a folder with one folder per student, mirroring the repository's paths "
                        "(SUBMISSIONS/<student>/<lab folder>/starter.py)")
    p.add_argument("--labs", nargs="+", metavar="LAB", help="labs to grade (default: all)")
    p.add_argument("--out", metavar="REPORT", help="write the report: report.csv, report.json or report.md")
    p.add_argument("--call-timeout", type=float, default=10.0, metavar="S",
                   help="seconds one call into a submission may take (default 10)")
    p.add_argument("--lab-timeout", type=float, default=120.0, metavar="S",
                   help="seconds for one student's whole lab (default 120)")
    p.add_argument("--import-timeout", type=float, default=60.0, metavar="S",
                   help="seconds importing a submission may take (default 60)")
    p.add_argument("--jobs", type=int, default=2, help="student-lab pairs graded at a time (default 2)")
    p.set_defaults(func=cmd_grade)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as err:
        err_console.print(f"[red]labs {args.command}:[/] {escape(str(err))}")
        return 2
    except OSError as err:  # a report that cannot be written, an unreadable file
        err_console.print(f"[red]labs {args.command}:[/] {escape(str(err))}")
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
