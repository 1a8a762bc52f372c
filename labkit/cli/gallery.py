"""``labs bugs``: run a lab's tests against each classic mistake of its bug gallery."""

from __future__ import annotations

import textwrap

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from labkit.cli import common
from labkit.cli.common import UsageError, progress_bar, require_folder, resolve_lab
from labkit.course import bugs, edition
from labkit.course.registry import Lab

_AGREES = "caught; CAUGHT_BY agrees"


def cmd_bugs(args) -> int:
    lab = resolve_lab(args.lab)
    if edition.current() is not None and not (lab.path / "solution.py").is_file():
        raise UsageError(f"lab {lab.id}'s bug gallery is a set of edits of its reference solution, which this class "
                         "edition does not hold yet: both come once your instructor releases them")
    require_folder(lab, "test_lab.py", "solution.py")
    gallery = bugs.bugs_of(lab.path)
    if not gallery:
        raise UsageError(f"lab {lab.id} has no bugs/*.py yet")
    if args.diff:
        return _print_diffs(lab, gallery)
    tests = set(bugs.test_functions(lab.path))
    with progress_bar() as progress:
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
    table = _bugs_table(rows, common.console.width)
    if table is not None:
        table.title = title
        common.console.print(table)
    else:
        common.console.print(f"[bold]{escape(title)}[/]", highlight=False)
        _bugs_compact(rows, common.console.width)
    unchecked = sum(bool(c.skip_reason) for c in checks)
    caught = len(checks) - bad - unchecked
    common.console.print(f"{caught} of {len(checks)} bugs caught by the tests their CAUGHT_BY names"
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
        common.console.print(Text(name, style="bold") + Text("  ") + Text.from_markup(verdict))
        for line in textwrap.wrap(summary, width=max(20, width - 2), break_long_words=False, break_on_hyphens=False):
            common.console.print(Text("  " + line, style="dim"), soft_wrap=True)
        common.console.print("  caught by:" + ("" if marked else " -"), highlight=False)
        for test in marked:
            common.console.print(Text("    " + test), soft_wrap=True)


def _print_diffs(lab: Lab, gallery: list) -> int:
    """Each bug of the gallery as the diff it makes to the solution."""
    for bug in gallery:
        common.console.rule(f"bugs/{bug.name}.py")
        common.console.print(escape(bug.summary), style="bold", highlight=False)
        try:
            common.console.print(escape(bugs.diff(lab.path, bug)), highlight=False, soft_wrap=True)
        except (bugs.BugEditError, OSError) as err:
            common.console.print(f"[red]{escape(str(err))}[/]")
    return 0


