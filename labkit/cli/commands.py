"""The ``labs`` command: list the labs, check your work, read hints, run the bug
gallery, grade a class.

    labs list
    labs check [LAB ...] [--impl starter]
    labs hint LAB [N]
    labs bugs LAB
    labs mutate LAB [--sample N --seed S] [--jobs J]      (maintainers)
    labs grade SUBMISSIONS [--labs LAB ...] [--out report.csv|.json|.md] [--shard K/N]
    labs grade merge REPORT.json ... --out REPORT
    labs release OUT [--release-solutions LAB,LAB]

A LAB is an id from ``labs list`` ("02-06") or the lab's folder.
"""

from __future__ import annotations

import argparse
import textwrap

from rich.markdown import Markdown
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from labkit.cli import common, grade, mutate, release
from labkit.cli.check import cmd_check
from labkit.cli.common import UsageError, require_folder, resolve_lab
from labkit.cli.gallery import cmd_bugs
from labkit.course import hints, registry
from labkit.course.registry import Lab

# --------------------------------------------------------------------------- labs list


def cmd_list(args) -> int:
    labs = list(registry.LABS)
    # A folder is a path to copy: it is shown whole or not at all. When the table cannot give it its
    # whole width and still keep every word of the other columns whole (a narrow terminal), each lab
    # takes two lines instead.
    table = _list_table(labs, common.console.width)
    if table is not None:
        common.console.print(table)
    else:
        common.console.print("[bold]The labs, in study order[/]")
        _list_compact(labs, common.console.width)
    common.console.print("Ids are phase-lab (04-01: phase 4, lab 1); study order crosses phases, README.md says why.",
                         highlight=False)
    common.console.print("Work in a lab's starter.py; [bold]labs check LAB --impl starter[/] runs its tests on "
                         "your work.", highlight=False)
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
        common.console.print(Text(f"{n:>2}  ") + Text(lab.id, style="bold") + Text("  " + lines[0]), soft_wrap=True)
        for line in lines[1:]:
            common.console.print(Text(indent + line), soft_wrap=True)
        folder_indent = indent if len(indent) + len(lab.folder) <= width else ""
        common.console.print(Text(folder_indent + lab.folder, style="cyan"), soft_wrap=True)


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
    common.console.rule(f"lab {lab.id}: {title} (of {len(found)})")
    common.console.print(Markdown(body))
    hints.remember(lab.id, n)
    if n < len(found):
        common.console.print(f"[dim]Still stuck? `labs hint {lab.id}` shows hint {n + 1}.[/]")
    else:
        common.console.print("[dim]That was the last hint; the lab's README walks through each step.[/]")
    return 0


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
    p.add_argument("--jobs", type=int, default=2, help="labs tested at a time (default 2)")
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

    mutate.add_parser(sub)
    grade.add_parser(sub)
    release.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as err:
        common.err_console.print(f"[red]labs {args.command}:[/] {escape(str(err))}")
        return 2
    except OSError as err:  # a report that cannot be written, an unreadable file
        common.err_console.print(f"[red]labs {args.command}:[/] {escape(str(err))}")
        return 2
    except KeyboardInterrupt:
        common.err_console.print("interrupted")
        return 130
