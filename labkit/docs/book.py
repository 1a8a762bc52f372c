"""What the site holds, in reading order, from the course registry.

The navigation is never written by hand: the labs come from ``registry.LABS`` (study order,
which crosses phases), the phases from ``registry.PHASES``. A page is named by its path in the
repository; the build copies it from there.
"""

from __future__ import annotations

from dataclasses import dataclass

from labkit.course import registry
from labkit.course.registry import ROOT, Lab

# Per phase, in this order when the file exists. Tutorials follow them, sorted by file name.
PHASE_PAGES = (("README.md", "Overview"), ("CHEATSHEET.md", "Cheatsheet"), ("EXERCISES.md", "Exercises"))
# Per lab, after the README when the file exists.
LAB_PAGES = (("hints.md", "Hints"), ("results.md", "Results on a GPU"))
# Top-level folders the site never publishes: the maintainers' tests and their fixtures (a page's
# link to one of their files shows as plain text).
UNPUBLISHED = ("tests",)
# The files a lab's header links to, shown as code pages.
LAB_SOURCES = ("starter.py", "test_lab.py", "lab.py", "bench.py", "figures.py")


@dataclass(frozen=True)
class Entry:
    """One line of the navigation: a page (``path``), or a section of ``children``."""

    title: str | None  # None: the page's own first heading
    path: str | None = None  # a Markdown file, relative to the repository root
    children: tuple[Entry, ...] = ()


def lab_title(lab: Lab) -> str:
    return f"{lab.id} {lab.title}"


def lab_entry(lab: Lab) -> Entry:
    """A lab's section: its README first (the section's own page), then hints and results."""
    pages = [Entry(None, f"{lab.folder}/README.md")]
    pages += [Entry(title, f"{lab.folder}/{name}") for name, title in LAB_PAGES if (lab.path / name).is_file()]
    return Entry(lab_title(lab), children=tuple(pages))


def phase_entry(phase: str, name: str) -> Entry:
    """A phase's section: its README, cheatsheet and exercises, then its tutorials."""
    folder = ROOT / phase
    pages = [Entry(title, f"{phase}/{file}") for file, title in PHASE_PAGES if (folder / file).is_file()]
    pages += [Entry(None, p.relative_to(ROOT).as_posix()) for p in sorted(folder.glob("tutorials/*.md"))]
    return Entry(name, children=tuple(pages))


def nav() -> tuple[Entry, ...]:
    """The whole navigation: home, setup, the labs in study order, the phases, contributing."""
    return (
        Entry("Home", "README.md"),
        Entry("Setup", "SETUP.md"),
        Entry("Labs in study order", children=tuple(lab_entry(lab) for lab in registry.LABS)),
        Entry("Phases", children=tuple(phase_entry(phase, name) for phase, name in registry.PHASES.items())),
        Entry("Contributing", children=(
            Entry(None, "CONTRIBUTING.md"),
            Entry("How this site is built", "docs/README.md"),
        )),
    )


def pages(entries: tuple[Entry, ...] | None = None) -> list[str]:
    """Every page of the navigation, in reading order."""
    out = []
    for entry in nav() if entries is None else entries:
        if entry.path:
            out.append(entry.path)
        out += pages(entry.children)
    return out


def lab_readmes() -> dict[str, Lab]:
    """Each lab's README path, to the lab."""
    return {f"{lab.folder}/README.md": lab for lab in registry.LABS}
