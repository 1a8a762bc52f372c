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
import textwrap
from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from labkit.course import bugs, hints, registry
from labkit.course.registry import Lab
from labkit.grader.sandbox import Resources
from labkit.text import shorten

console = Console()
err_console = Console(stderr=True)


class UsageError(Exception):
    """Bad input from the command line: printed as one message, exit status 2."""


# --------------------------------------------------------------------------- helpers


def resolve_lab(text: str) -> Lab:
    """A lab from its id ("02-06", "2-6") or its folder (absolute or relative)."""
    found = re.fullmatch(r"0?(\d)-0?(\d)", text.strip())
    if found:
        lab_id = f"0{found.group(1)}-0{found.group(2)}"
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
    labs = list(registry.LABS)
    # A folder is a path to copy: it is shown whole or not at all. When the table cannot give it its
    # whole width and still keep every word of the other columns whole (a narrow terminal), each lab
    # takes two lines instead.
    table = _list_table(labs, console.width)
    if table is not None:
        console.print(table)
    else:
        console.print("[bold]The labs, in study order[/]")
        _list_compact(labs, console.width)
    console.print("Ids are phase-lab (04-01: phase 4, lab 1); study order crosses phases, README.md says why.",
                  highlight=False)
    console.print("Work in a lab's starter.py; [bold]labs check LAB --impl starter[/] runs its tests on your work.",
                  highlight=False)
    return 0


def _longest_word(texts: list[str]) -> int:
    return max(len(word) for text in texts for word in text.split())


def _list_table(labs: list[Lab], width: int) -> Table | None:
    """The labs as a table at most ``width`` columns wide, folders whole, no word cut and no row
    taller than two lines; None when that cannot be done."""
    notes = {lab.id: "" if lab.path.is_dir() else " (not in this checkout yet)" for lab in labs}
    titles = ["title"] + [lab.title + notes[lab.id] for lab in labs]
    runs_on = ["runs on"] + [lab.runs_on for lab in labs]
    fixed = [len(str(len(labs))), max(len("lab"), *(len(lab.id) for lab in labs)),
             max(len("folder"), *(len(lab.folder) for lab in labs))]
    left = width - (3 * 5 + 1) - sum(fixed)  # 5 columns: a rule and a space of padding each side
    title_min, runs_min = _longest_word(titles), _longest_word(runs_on)
    if left < title_min + runs_min:
        return None

    # Share what is left between title and "runs on" so that the rows take the fewest lines.
    def lines(text: str, w: int) -> int:
        return len(textwrap.wrap(text, w, break_long_words=False, break_on_hyphens=False))

    def height(runs_w: int) -> int:
        return sum(max(lines(t, left - runs_w), lines(r, runs_w)) for t, r in zip(titles, runs_on, strict=True))

    runs_w = min(range(runs_min, left - title_min + 1), key=lambda w: (height(w), w))
    if any(max(lines(t, left - runs_w), lines(r, runs_w)) > 2 for t, r in zip(titles, runs_on, strict=True)):
        return None  # rows of three lines and more read worse than the two-line layout
    title_w = min(left - runs_w, max(len(text) for text in titles))
    table = Table(title="The labs, in study order")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("lab", no_wrap=True)
    table.add_column("title", width=title_w)
    table.add_column("runs on", width=runs_w)
    table.add_column("folder", no_wrap=True)
    for n, lab in enumerate(labs, start=1):
        title = escape(lab.title) + (f"[dim]{notes[lab.id]}[/]" if notes[lab.id] else "")
        table.add_row(str(n), lab.id, title, escape(lab.runs_on), escape(lab.folder))
    return table


def _list_compact(labs: list[Lab], width: int) -> None:
    """Two lines per lab: number, id, title and where it runs (wrapped at words), then the folder,
    whole (indented under the title when it fits)."""
    for n, lab in enumerate(labs, start=1):
        lead = f"{n:>2}  {lab.id}  "
        about = f"{lab.title} · {lab.runs_on}" + ("" if lab.path.is_dir() else " · not in this checkout yet")
        lines = textwrap.wrap(about, width=max(20, width - len(lead)), break_long_words=False,
                              break_on_hyphens=False)
        indent = " " * len(lead)
        console.print(Text(f"{n:>2}  ") + Text(lab.id, style="bold") + Text("  " + lines[0]), soft_wrap=True)
        for line in lines[1:]:
            console.print(Text(indent + line), soft_wrap=True)
        folder_indent = indent if len(indent) + len(lab.folder) <= width else ""
        console.print(Text(folder_indent + lab.folder, style="cyan"), soft_wrap=True)


# --------------------------------------------------------------------------- labs check

# What ``labs check`` says it tested, by the name LAB_IMPL or --impl gave.
_IMPL_WORDS = {
    "solution": "the reference solutions (solution.py), not your work",
    "starter": "your work (starter.py)",
}
# Lines of a failure message that say nothing about the code under test.
_NOISE = re.compile(r"^\s*(Use -v to get (more|the full) diff|Full diff:|Omitting \d+ identical items)")


def describe_impl(impl: str) -> str:
    """What the implementation ``impl`` is, in words, for the board's title."""
    if impl in _IMPL_WORDS:
        return _IMPL_WORDS[impl]
    if impl.startswith("bugs/"):
        return f"{impl} (the reference solution with one classic mistake)"
    return f"{impl}.py of each lab"


def failure_lines(message: str, max_lines: int = 4, max_chars: int = 600) -> list[str]:
    """The lines of a failure message worth showing on the board: the first line whole, then the
    indented lines that explain it (``assert_close``'s "there: got ..., expected ...", the expected
    pattern and the actual message of a ``pytest.raises(match=...)`` that did not match, an assert's
    "At index 1 diff"), never pytest's own advice. Lines are kept whole (the board wraps them);
    only a line past ``max_chars`` (an array printed in full) is cut."""
    lines = [line.rstrip() for line in message.splitlines() if line.strip()]
    if not lines:
        return []
    kept = [lines[0].strip()]
    for line in lines[1:]:
        if not line[:1].isspace():  # pytest's "assert 3 == 4" after the test's own message
            break
        if not _NOISE.match(line):
            kept.append("  " + line.strip())
    kept = kept[:max_lines]
    return [shorten(line, max_chars) if len(line) > max_chars else line for line in kept]


def first_failure(run) -> Text:
    """The board's cell for a lab that did not pass: the first failing test's name and the useful
    lines of its message, or why nothing ran."""
    if run.failures:
        first = run.failures[0]
        lines = failure_lines(first.detail or first.message) or [first.message]
        text = Text(first.name, style="bold")
        text.append(": " + lines[0])
        for line in lines[1:]:
            text.append("\n" + line)
        return text
    return Text("\n".join(failure_lines(run.first_problem())))


def cmd_check(args) -> int:
    labs = [resolve_lab(t) for t in args.labs] if args.labs else list(registry.LABS)
    env_impl = os.environ.get("LAB_IMPL", "").strip()
    impl = args.impl or env_impl or "solution"
    source = ("from --impl" if args.impl else "from LAB_IMPL in your environment" if env_impl
              else "the default: no --impl, no LAB_IMPL")
    failing = print_board(_run_labs(labs, impl), impl, source)
    if failing:
        one = len(failing) == 1
        console.print("For the whole message and its traceback:", highlight=False)
        folder = failing[0].folder if one else "<lab folder>"
        console.print(f"  [bold]LAB_IMPL={escape(impl)} pytest -x {escape(folder)}[/]", highlight=False, soft_wrap=True)
        console.print(f"Stuck? [bold]labs hint {failing[0].id if one else 'LAB'}[/] shows the lab's next hint.",
                      highlight=False)
    return 0 if not failing else 1


def _run_labs(labs: list[Lab], impl: str) -> list[tuple[Lab, object, str]]:
    """``(lab, its LabRun or None, why it did not run)`` for each lab, with a progress bar."""
    from labkit.course.runner import run_lab_tests

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
            rows.append((lab, run, ""))
    return rows


def print_board(rows: list[tuple[Lab, object, str]], impl: str, source: str) -> list[Lab]:
    """The board of ``labs check``: tests passed per lab and the first failure; returns the labs
    that did not pass."""
    # Which implementation ran, above and below the board: a learner who forgot --impl starter sees
    # the reference solutions all green, and must not take that for their own work.
    reference = impl == "solution"
    heading = f"labs check: {escape(describe_impl(impl))} [dim]({escape(source)})[/]"
    console.print(f"[bold yellow]{heading}[/]" if reference else f"[bold]{heading}[/]", highlight=False)
    table = Table(expand=True)
    table.add_column("lab", no_wrap=True)
    table.add_column("passed", no_wrap=True)
    table.add_column("first failure", ratio=1)
    failing = []
    for lab, run, note in rows:
        if run is None:
            failing.append(lab)
            table.add_row(lab.id, "[yellow]-[/]", escape(note))
            continue
        skipped = sum(t.outcome == "skipped" for t in run.tests)
        if run.tests and skipped == len(run.tests) and not run.errors and not run.timed_out:
            # Nothing could run here (torch/triton not installed): not a failure of your work.
            table.add_row(lab.id, f"[yellow]0/0 ({skipped} skipped)[/]", Text(run.tests[0].message))
            continue
        ok = run.all_passed
        score = f"{run.passed}/{run.total}" + (f" ({skipped} skipped)" if skipped else "") if run.tests else "-"
        table.add_row(lab.id, f"[{'green' if ok else 'red'}]{score}[/]", "" if ok else first_failure(run))
        if not ok:
            failing.append(lab)
    console.print(table)
    if reference:
        console.print("[bold yellow]These are the reference solutions, not your work: add --impl starter to test "
                      "your starter.py.[/]", highlight=False)
    return failing


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


_AGREES = "caught; CAUGHT_BY agrees"


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

    rows = []  # (name, summary, the tests that failed on it, verdict as markup)
    bad = 0
    for check in checks:
        bug = check.bug
        declared = bug.caught_by or []
        unknown = [t for t in declared if t not in tests]
        if check.skip_reason:
            verdict = f"[yellow]not checkable here: {escape(check.skip_reason)}[/]"
        elif not check.caught:
            verdict = "[red]NOT CAUGHT: every test passes[/]" if not check.run.errors else \
                f"[red]not run: {escape(check.run.errors[0])}[/]"
        elif bug.problem or not bug.doc or not declared:
            verdict = "[yellow]caught; " + ("no docstring" if not bug.doc else "no CAUGHT_BY list") + "[/]"
        elif unknown:
            verdict = f"[yellow]caught; CAUGHT_BY names no test {escape(', '.join(unknown))}[/]"
        elif check.declared_missed:
            verdict = f"[yellow]caught; CAUGHT_BY {escape(', '.join(check.declared_missed))} did not fail[/]"
        else:
            skipped_here = [t for t in declared if t not in check.catchers]  # GPU tests on a CPU machine
            verdict = f"[green]{_AGREES}[/]" + (
                f" [dim]({escape(', '.join(skipped_here))} skips here)[/]" if skipped_here else "")
        bad += not check.ok and not check.skip_reason
        marked = [f"{t} ✓" if t in declared else t for t in check.catchers]
        rows.append((bug.name, bug.summary, marked, verdict))

    title = f"lab {lab.id}: the bug gallery (LAB_IMPL=bugs/<name>; ✓: a test its CAUGHT_BY lists)"
    table = _bugs_table(rows, console.width)
    if table is not None:
        table.title = title
        console.print(table)
    else:
        console.print(f"[bold]{escape(title)}[/]", highlight=False)
        _bugs_compact(rows, console.width)
    unchecked = sum(bool(c.skip_reason) for c in checks)
    console.print(f"{len(checks) - bad - unchecked} of {len(checks)} bugs caught by the tests their CAUGHT_BY names"
                  + (f"; {unchecked} only by tests that skip on this machine." if unchecked else "."))
    return 0 if bad == 0 else 1


def _bugs_table(rows: list, width: int) -> Table | None:
    """The gallery as a table at most ``width`` wide, with no bug or test name and no word of a
    summary or verdict cut; None when that cannot be done."""
    bug_min = max([len("bug")] + [len(w) for name, summary, *_ in rows for w in [name, *summary.split()]])
    bug_full = max(max(len(name), len(summary)) for name, summary, *_ in rows)
    tests_w = max([len("caught by")] + [len(t) for _, _, marked, _ in rows for t in marked])
    verdicts = [Text.from_markup(verdict).plain for *_, verdict in rows]
    verdict_min = max(len(w) for v in verdicts for w in v.split())
    left = width - (3 * 3 + 1) - tests_w  # 3 columns: a rule and a space of padding each side
    # The verdict keeps the common "caught; CAUGHT_BY agrees" on one line when it can.
    verdict_w = max(verdict_min, min(max(len(v) for v in verdicts), max(len(_AGREES), left // 3)))
    bug_w = min(bug_full, left - verdict_w)
    if bug_w < bug_min:
        return None
    table = Table()
    table.add_column("bug", width=bug_w)
    table.add_column("caught by", width=tests_w, no_wrap=True)
    table.add_column("verdict", width=verdict_w)
    for name, summary, marked, verdict in rows:
        table.add_row(f"{escape(name)}\n[dim]{escape(summary)}[/]", escape("\n".join(marked)) or "-", verdict)
    return table


def _bugs_compact(rows: list, width: int) -> None:
    """One block per bug: its name and verdict, its summary (wrapped at words), then the tests that
    caught it, one a line (a name is never broken)."""
    for name, summary, marked, verdict in rows:
        console.print(Text(name, style="bold") + Text("  ") + Text.from_markup(verdict))
        for line in textwrap.wrap(summary, width=max(20, width - 2), break_long_words=False, break_on_hyphens=False):
            console.print(Text("  " + line, style="dim"), soft_wrap=True)
        console.print("  caught by:" + ("" if marked else " -"), highlight=False)
        for test in marked:
            console.print(Text("    " + test), soft_wrap=True)


def _print_diffs(lab: Lab, gallery: list) -> int:
    """Each bug of the gallery as the diff it makes to the solution."""
    for bug in gallery:
        console.rule(f"bugs/{bug.name}.py")
        console.print(escape(bug.summary), style="bold", highlight=False)
        try:
            console.print(escape(bugs.diff(lab.path, bug)), highlight=False, soft_wrap=True)
        except (bugs.BugEditError, OSError) as err:
            console.print(f"[red]{escape(str(err))}[/]")
    return 0


# --------------------------------------------------------------------------- labs grade


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
        err_console.print(f"[bold red]warning:[/] {escape(grade.UNSANDBOXED)}")
    else:
        try:
            sandbox.check(resources)
        except sandbox.SandboxError as err:
            raise UsageError(str(err)) from None
    limits = grade.Limits(call=args.call_timeout, lab=args.lab_timeout, imports=args.import_timeout)
    ready = [lab for lab in labs if (lab.path / "test_lab.py").is_file()]
    with _progress() as progress:
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
    console.print(table)
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}")
    if out is not None:
        console.print(f"Report written to {escape(str(out))}")
    return 1 if any(w.startswith(grade.TAMPERED) for w in warnings) else 0


# --------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="labs",
        description="Paged-attention labs: list them, check your work, read hints, run the bug gallery, grade.",
        epilog="A LAB is an id from `labs list` (e.g. 02-06) or the lab's folder.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("list", help="the labs in study order: id, title, where each runs, folder")
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
                    "runs only in a bubblewrap sandbox (no network, no repository, no other submission, resource "
                    "limits), under time limits; the verdicts are decided by the tests, in a process that runs no "
                    "student code.",
        epilog="Statuses: ok, failed, timeout, crashed, missing, syntax error. Exit status 1 when the "
               "instructor's files changed during the run. Threat model: labkit/grader/README.md.",
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
    defaults = Resources()
    limits = p.add_argument_group("resource limits of each sandbox (0: no limit, except --tmp-size)")
    limits.add_argument("--memory-limit", type=float, default=defaults.memory / 2**30, metavar="GIB",
                        help=f"address space per process, GiB (private writable memory with a GPU; default "
                             f"{defaults.memory / 2**30:g})")
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
