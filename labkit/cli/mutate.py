"""``labs mutate``: run a lab's tests against the mutants of its solution, and check its survivors list.

For the course's maintainers: the machinery is :mod:`labkit.course.mutate`; CONTRIBUTING.md
("Mutation testing") says how to read the output and keep the list.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter

from rich.markup import escape

from labkit.cli import common
from labkit.cli.common import UsageError, progress_bar, require_folder, resolve_lab
from labkit.course import mutants, mutate, survivors
from labkit.testing import triton_env
from labkit.text import one_line

_STYLE = {mutate.KILLED: "green", mutate.TIMEOUT: "green", mutate.SURVIVED: "yellow", mutate.ERROR: "red"}


def add_parser(sub) -> None:
    p = sub.add_parser("mutate", help="maintainers: run the lab's tests against mutants of its solution")
    p.add_argument("lab", metavar="LAB")
    p.add_argument("--sample", type=int, metavar="N", help="run N mutants drawn with --seed instead of all")
    p.add_argument("--seed", type=int, default=0, help="the seed of --sample (default 0)")
    p.add_argument("--jobs", type=int, default=2, help="test runs at a time (default 2)")
    p.add_argument("--timeout", type=float, metavar="S",
                   help="a mutant's time limit in seconds (default: 4 times the solution's run, plus 10, at least 20)")
    p.add_argument("--list", action="store_true", help="list the mutants, with their diffs, and run nothing")
    p.add_argument("--record", action="store_true",
                   help="append each new survivor to the lab's survivors.toml, its why left for you to write")
    p.set_defaults(func=cmd_mutate)


def cmd_mutate(args) -> int:
    lab = resolve_lab(args.lab)
    require_folder(lab, "test_lab.py", "solution.py")
    if args.sample is not None and args.sample < 1:
        raise UsageError("--sample must be at least 1")
    try:
        listed = survivors.read(lab.path)
    except survivors.SurvivorsError as err:
        raise UsageError(str(err)) from None
    generated = mutants.lab_mutants(lab.path)
    chosen = mutate.sample(generated, args.sample, args.seed)
    files = Counter(m.source for m in generated)
    common.console.print(f"[bold]lab {lab.id}[/]: {len(generated)} mutants ("
                         + ", ".join(f"{escape(f)} {n}" for f, n in files.items()) + ")"
                         + (f"; running {len(chosen)} drawn with seed {args.seed}" if len(chosen) < len(generated)
                            else ""), highlight=False)
    if args.list:
        for m in chosen:
            common.console.rule(f"{m.where}  {m.operator}")
            common.console.print(escape(m.diff()), highlight=False, soft_wrap=True)
        return 0

    start = time.monotonic()
    with (mutate.warm_pool(args.jobs, [lab]) or contextlib.nullcontext()) as pool:
        base = mutate.baseline(lab.path, pool)
        if not base.all_passed:
            raise UsageError(f"the solution's own tests do not pass ({base.first_problem()}): "
                             f"nothing can be learned from mutants until they do")
        timeout = args.timeout or mutate.time_limit(base.seconds)
        common.console.print(f"The solution's tests pass in {base.seconds:.1f} s; each mutant runs them until the "
                             f"first that fails, for at most {timeout:.0f} s.", highlight=False)
        with progress_bar() as progress:
            task = progress.add_task(f"{lab.id}: running the tests on each mutant", total=len(chosen))
            verdicts = mutate.run_mutants(lab.path, chosen, timeout, args.jobs, pool=pool,
                                          on_done=lambda v: progress.advance(task))
    took = time.monotonic() - start
    comparison = mutate.compare(verdicts, generated, listed or [], triton_env.cuda_available())
    _print_verdicts(verdicts, comparison)
    _print_survivors(comparison)
    _print_stale(comparison)
    if args.record and comparison.new:
        written = survivors.append(lab.path, lab.id, [survivors.entry(*v.mutant.key) for v in comparison.new])
        common.console.print(f"Appended {len(comparison.new)} entries to {written.relative_to(lab.path.parent)}: "
                             "write each one's why, or write the test that kills it and delete the entry.")
    _print_summary(lab, verdicts, comparison, listed, took)
    errors = [v for v in verdicts if v.status == mutate.ERROR]
    return 0 if comparison.ok and not errors else 1


def _print_verdicts(verdicts: list[mutate.Verdict], comparison: mutate.Comparison) -> None:
    """One line per mutant: its verdict, where, the operator, and what killed it (or why it is listed)."""
    new = {id(v) for v in comparison.new}
    width = max(len(v.mutant.where) for v in verdicts) if verdicts else 0
    ops = max(len(v.mutant.operator) for v in verdicts) if verdicts else 0
    for v in verdicts:
        status = "NEW SURVIVOR" if id(v) in new else v.status
        style = "red" if id(v) in new else _STYLE[v.status]
        detail = v.detail if v.status != mutate.SURVIVED else "" if id(v) in new else "listed"
        line = f"{status:<12}  {v.mutant.where:<{width}}  {v.mutant.operator:<{ops}}  {one_line(detail, 120)}"
        common.console.print(f"[{style}]{escape(line[:12])}[/]{escape(line[12:])}", highlight=False, soft_wrap=True)


def _print_survivors(comparison: mutate.Comparison) -> None:
    if comparison.new:
        common.console.rule("[red]new survivors: for each, a test that kills it, or an entry of survivors.toml "
                            "saying why no valid input tells it from the solution[/]")
        for v in comparison.new:
            common.console.print(f"[bold]{escape(v.mutant.where)}[/]  {escape(v.mutant.operator)}", highlight=False)
            common.console.print(escape(v.mutant.diff()), highlight=False, soft_wrap=True)
    if comparison.listed:
        common.console.rule("survivors listed in survivors.toml")
        for v, entry in comparison.listed:
            common.console.print(f"[bold]{escape(v.mutant.where)}[/]  {escape(v.mutant.operator)}: "
                                 f"[dim]{escape(entry.why)}[/]", highlight=False)
            common.console.print(escape(v.mutant.diff()), highlight=False, soft_wrap=True)


def _print_stale(comparison: mutate.Comparison) -> None:
    if not comparison.stale:
        return
    common.console.rule("[red]stale entries of survivors.toml[/]")
    for entry, why in comparison.stale:
        first = next((line.strip() for line in entry.old.splitlines() if line.strip()), "")
        common.console.print(f"[bold]{escape(entry.source)}[/]: {escape(first)!s} -> "
                             f"{escape(entry.new.strip().splitlines()[0] if entry.new.strip() else '')}\n"
                             f"  {escape(why)}", highlight=False, soft_wrap=True)


def _print_summary(lab, verdicts, comparison, listed, took: float) -> None:
    count = Counter(v.status for v in verdicts)
    killed = count[mutate.KILLED] + count[mutate.TIMEOUT]
    parts = [f"{killed} killed" + (f" ({count[mutate.TIMEOUT]} at the time limit)" if count[mutate.TIMEOUT] else ""),
             f"{count[mutate.SURVIVED]} survived ({len(comparison.listed)} listed, {len(comparison.new)} new)"]
    if count[mutate.ERROR]:
        parts.append(f"[red]{count[mutate.ERROR]} could not run[/]")
    if comparison.stale:
        parts.append(f"[red]{len(comparison.stale)} stale entries[/]")
    common.console.print(f"lab {lab.id}: {len(verdicts)} mutants run: " + ", ".join(parts)
                         + f"; {mutate.elapsed(took)}.", highlight=False)
    if listed is None:
        common.console.print(f"[dim]{lab.folder}/survivors.toml does not exist: the lab is not under mutation "
                             "testing yet (--record starts it).[/]", highlight=False)
