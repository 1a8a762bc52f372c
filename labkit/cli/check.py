"""``labs check``: run labs' tests and show a board of what passes, with the first failure of each."""

from __future__ import annotations

import os
import re

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from labkit.cli import common
from labkit.cli.common import progress_bar, resolve_lab
from labkit.course import edition, registry
from labkit.course.registry import Lab
from labkit.testing.loader import default_impl
from labkit.text import shorten

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
    only a line past ``max_chars`` (an array printed in full) is cut.

    A bare ``assert`` shows pytest's introspection: its first ``where`` lines are kept, with a
    function's repr shortened to its name (``where 65536 = block_bytes(8, 8)``); the lines that only
    say which object a name was read from (``where f = <module ...>.f``, anything still holding an
    address) are internals of the code under test and left out. An assert with a message of its own
    shows that message first, and pytest's rewritten ``assert`` under it not at all."""
    lines = [line.rstrip() for line in message.splitlines() if line.strip()]
    own = next((i for i, line in enumerate(lines) if line.startswith("AssertionError: ")), None)
    if own:  # the assert's own message, wherever pytest put it
        lines = lines[own:]
    if not lines:
        return []
    kept = [lines[0].strip()]
    for line in lines[1:]:
        if not line[:1].isspace():  # pytest's "assert 3 == 4" after the test's own message
            break
        if _NOISE.match(line):
            continue
        if _INTROSPECTION.match(line):
            line = _introspection_line(line)
            if line is None:
                continue
        kept.append("  " + line.strip())
    kept = kept[:max_lines]
    return [shorten(line, max_chars) if len(line) > max_chars else line for line in kept]


# pytest's explanation of a bare assert: " +  where 3 = len(xs)", nested ones indented further.
_INTROSPECTION = re.compile(r"^(\s*)\+(\s+)(where|and)\b")
# A function's or method's repr: "<function block_bytes at 0x7f..>", "<bound method Pool.free of <...>>".
_CALLABLE_REPR = re.compile(r"<(?:function|built-in function|bound method|method) ([\w.]+)"
                            r"(?: at 0x[0-9a-fA-F]+| of [^<>]*(?:<[^<>]*>)?[^<>]*)>")
# What is left of an object's repr: an address, a module.
_INTERNALS = re.compile(r" at 0x[0-9a-fA-F]+|<module |<class ")


def _introspection_line(line: str) -> str | None:
    """One line of pytest's introspection of a bare assert as the board shows it, or None to leave it out:
    nested explanations (which object a name came from) and anything still naming an address."""
    match = _INTROSPECTION.match(line)
    if len(match.group(2)) > 2:  # " +    where": explains a name inside the line above
        return None
    line = _CALLABLE_REPR.sub(r"\1", line[match.end(2):])  # "where 3 = len(xs)", without pytest's "+"
    return None if _INTERNALS.search(line) else line


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
    impl = args.impl or env_impl or default_impl()
    where = "this class edition's default" if edition.current() is not None else "the default"
    source = ("from --impl" if args.impl else "from LAB_IMPL in your environment" if env_impl
              else f"{where}: no --impl, no LAB_IMPL")
    failing = print_board(_run_labs(labs, impl, getattr(args, "jobs", 2)), impl, source)
    for line in edition.notes(labs):  # a class edition: labs that run on an earlier lab's starter
        common.console.print(f"[yellow]{escape(line)}[/]", highlight=False)
    if failing:
        one = len(failing) == 1
        common.console.print("For the whole message and its traceback:", highlight=False)
        folder = failing[0].folder if one else "<lab folder>"
        common.console.print(f"  [bold]LAB_IMPL={escape(impl)} pytest -x {escape(folder)}[/]", highlight=False,
                             soft_wrap=True)
        common.console.print(f"Stuck? [bold]labs hint {failing[0].id if one else 'LAB'}[/] shows the lab's next hint.",
                             highlight=False)
    return 0 if not failing else 1


def _run_labs(labs: list[Lab], impl: str, jobs: int = 2) -> list[tuple[Lab, object, str]]:
    """``(lab, its LabRun or None, why it did not run)`` for each lab, ``jobs`` labs at a time, with a
    progress bar per lab."""
    from labkit.course.runner import run_in_parallel, run_lab_tests

    with progress_bar() as progress:

        def one(lab: Lab) -> tuple[Lab, object, str]:
            if not (lab.path / "test_lab.py").is_file():
                return (lab, None, "folder not in this checkout yet" if not lab.path.is_dir() else "no test_lab.py yet")
            task = progress.add_task(f"{lab.id} {impl}", total=None)

            def update(done, total):
                progress.update(task, completed=done, total=total)

            run = run_lab_tests(lab.path, impl=impl, on_progress=update)
            progress.update(task, visible=False)
            return (lab, run, "")

        return run_in_parallel(one, labs, jobs)


def print_board(rows: list[tuple[Lab, object, str]], impl: str, source: str) -> list[Lab]:
    """The board of ``labs check``: tests passed per lab and the first failure; returns the labs
    that did not pass."""
    # Which implementation ran, above and below the board: a learner who forgot --impl starter sees
    # the reference solutions all green, and must not take that for their own work.
    reference = impl == "solution"
    heading = f"labs check: {escape(describe_impl(impl))} [dim]({escape(source)})[/]"
    common.console.print(f"[bold yellow]{heading}[/]" if reference else f"[bold]{heading}[/]", highlight=False)
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
    common.console.print(table)
    if reference:
        common.console.print("[bold yellow]These are the reference solutions, not your work: add --impl starter "
                             "to test your starter.py.[/]", highlight=False)
    return failing
