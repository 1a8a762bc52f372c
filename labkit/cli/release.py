"""``labs release OUT``: write the class edition of the course (:mod:`labkit.course.release`) and say
what it holds."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from labkit.cli import common
from labkit.cli.common import UsageError, resolve_lab
from labkit.course import edition, registry
from labkit.course import release as releases


def add_parser(sub) -> None:
    """``labs release``'s arguments, on the ``labs`` command's subparsers."""
    p = sub.add_parser(
        "release", help="write the class edition: the course for students, without its reference solutions",
        description="Write at OUT the course as students get it: starters, tests, READMEs, hints, given modules, "
                    "figures, the site's sources and labkit, without the reference solutions, the bug galleries "
                    "and the maintainers' files. OUT's edition.json records the references released; run again "
                    "with --release-solutions to add some (only the files the last release wrote are replaced).",
        epilog="SETUP.md, \"A class edition for students\", says how a class works with it.",
    )
    p.add_argument("out", metavar="OUT", help="a new or empty folder, or an edition that labs release wrote")
    p.add_argument("--release-solutions", metavar="LABS", default="",
                   help="labs whose reference solutions the edition holds, comma-separated (02-01,02-05), added to "
                        "those OUT's edition.json lists")
    p.set_defaults(func=cmd_release)


def cmd_release(args) -> int:
    add = [resolve_lab(text).id for text in args.release_solutions.replace(" ", ",").split(",") if text]
    try:
        done = releases.release(Path(args.out), add)
    except releases.ReleaseError as err:
        raise UsageError(str(err)) from err
    released = ", ".join(done.released) or "none"
    waiting = [lab.id for lab in registry.LABS if lab.id not in done.released]
    console = common.console
    console.print(f"[bold]labs release:[/] the class edition is at {escape(str(done.out))}: {len(done.files)} files "
                  f"from the course at {escape(done.source)}, in {done.seconds:.1f} s", highlight=False, soft_wrap=True)
    console.print(f"  reference solutions released: {released}", highlight=False)
    console.print(f"  not released: {', '.join(waiting) or 'none'} "
                  f"({done.left_out[releases.REFERENCE]} files of their references left out)", highlight=False)
    console.print(f"  maintainers' files left out: {done.left_out[releases.MAINTAINERS]} (CONTRIBUTING.md, CI, "
                  "the checks of the course against its references, the grader's classes)", highlight=False)
    for line in edition.notes(list(registry.LABS), done.released, whose="the student's"):
        console.print(f"  [yellow]{escape(line)}[/]", highlight=False)
    console.print(f"Then, in {escape(str(done.out))}: git add -A && git commit, and push to the class's repository "
                  "(the first time: git init first).", highlight=False, soft_wrap=True)
    return 0
