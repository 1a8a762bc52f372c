"""What the site holds, in reading order, from the course registry.

The navigation is never written by hand. The course is read in study order (``registry.LABS``,
which crosses phases), and everything else takes its place around the labs:

- a phase's overview comes right before the first of its labs in study order, and opens a section
  of the navigation that runs until the next phase's overview;
- a chapter (``<phase>/tutorials/*.md``) comes right before the first lab whose README links to
  it (the lab that uses it), or after the phase's last lab when no lab links to it;
- a phase's cheatsheet and exercises come after the last of its labs in study order;
- a lab is a section: its README, then its hints and results as sub-pages. The footer's Next skips
  the sub-pages (``reading_links``), so reading on never opens a hint by accident.

A page is named by its path in the repository; the build copies it from there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labkit.course import registry
from labkit.course.registry import ROOT, Lab

# Per phase, after its last lab in study order, when the file exists.
PHASE_SUMMARIES = ("CHEATSHEET.md", "EXERCISES.md")
# Per lab, after the README when the file exists: sub-pages that Next skips.
LAB_PAGES = (("hints.md", "{id} hints"), ("results.md", "{id} results on a GPU"))
# Top-level folders the site never publishes: the maintainers' tests and their fixtures (a page's
# link to one of their files shows as plain text).
UNPUBLISHED = ("tests",)
# The files a lab's header links to, shown as code pages.
LAB_SOURCES = ("starter.py", "test_lab.py", "lab.py", "bench.py", "figures.py")
# The whole course on one page, for print (written by the build; not in the navigation).
PRINT_PAGE = "print.md"


@dataclass(frozen=True)
class Entry:
    """One line of the navigation: a page (``path``), or a section of ``children``."""

    title: str | None  # None: the page's own first heading
    path: str | None = None  # a Markdown file, relative to the repository root
    children: tuple[Entry, ...] = ()
    sub: bool = False  # a lab's hints or results: in the navigation, skipped by Next


def lab_title(lab: Lab) -> str:
    return f"{lab.id} {lab.title}"


def page_title(path: str) -> str:
    """A page's first ``# `` heading (the title MkDocs gives it), or its file name."""
    for line in (ROOT / path).read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.rsplit("/", 1)[-1]


def lab_entry(lab: Lab) -> Entry:
    """A lab's section: its README first (the section's own page), then hints and results."""
    pages = [Entry(None, f"{lab.folder}/README.md")]
    pages += [Entry(title.format(id=lab.id), f"{lab.folder}/{name}", sub=True)
              for name, title in LAB_PAGES if (lab.path / name).is_file()]
    return Entry(lab_title(lab), children=tuple(pages))


def chapters(phase: str) -> list[str]:
    """A phase's chapters, by file name."""
    return [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / phase).glob("tutorials/*.md"))]


def first_user(chapter: str) -> Lab | None:
    """The first lab in study order whose README links to ``chapter``."""
    for lab in registry.LABS:
        readme = lab.path / "README.md"
        for target in re.findall(r"\]\(\s*<?([^)\s>#]+)", readme.read_text(encoding="utf-8")):
            if (readme.parent / target).resolve() == (ROOT / chapter).resolve():
                return lab
    return None


def course() -> tuple[Entry, ...]:
    """The course in reading order: one section per phase overview, labs in study order."""
    last_of_phase = {lab.phase: lab for lab in registry.LABS}
    used_by: dict[str, list[str]] = {}
    unused: dict[str, list[str]] = {}
    for phase in registry.PHASES:
        for chapter in chapters(phase):
            user = first_user(chapter)
            if user:
                used_by.setdefault(user.id, []).append(chapter)
            else:
                unused.setdefault(phase, []).append(chapter)

    sections: list[tuple[str, list[Entry]]] = []
    for lab in registry.LABS:
        if not any(title == registry.PHASES[lab.phase] for title, _ in sections):
            sections.append((registry.PHASES[lab.phase], [Entry(None, f"{lab.phase}/README.md")]))
        pages = sections[-1][1]
        pages += [Entry(None, chapter) for chapter in used_by.get(lab.id, [])]
        pages.append(lab_entry(lab))
        if last_of_phase[lab.phase] is lab:
            pages += [Entry(None, f"{lab.phase}/{name}") for name in PHASE_SUMMARIES
                      if (ROOT / lab.phase / name).is_file()]
            pages += [Entry(None, chapter) for chapter in unused.get(lab.phase, [])]
    for phase, name in registry.PHASES.items():  # a phase without labs yet: its pages at the end
        if phase not in last_of_phase:
            pages = [Entry(None, f"{phase}/{file}") for file in ("README.md", *PHASE_SUMMARIES)
                     if (ROOT / phase / file).is_file()]
            sections.append((name, pages + [Entry(None, chapter) for chapter in chapters(phase)]))
    return tuple(Entry(title, children=tuple(pages)) for title, pages in sections)


def nav() -> tuple[Entry, ...]:
    """The whole navigation: home, setup, the course in reading order, contributing (the pages of it
    that exist: a class edition, ``labs release``, has no CONTRIBUTING.md)."""
    contributing = tuple(entry for entry in (Entry(None, "CONTRIBUTING.md"),
                                             Entry("How this site is built", "docs/README.md"))
                         if (ROOT / entry.path).is_file())
    return (
        Entry("Home", "README.md"),
        Entry("Setup", "SETUP.md"),
        Entry("Course", children=course()),
        *([Entry("Contributing", children=contributing)] if contributing else []),
    )


def entries(roots: tuple[Entry, ...] | None = None) -> list[Entry]:
    """Every page entry of the navigation, in reading order (sub-pages after their lab)."""
    out = []
    for entry in nav() if roots is None else roots:
        if entry.path:
            out.append(entry)
        out += entries(entry.children)
    return out


def pages() -> list[str]:
    """Every page of the navigation, in reading order."""
    return [entry.path for entry in entries()]


def reading_order() -> list[str]:
    """The pages that Next walks through: the navigation without the labs' sub-pages."""
    return [entry.path for entry in entries() if not entry.sub]


def reading_links() -> dict[str, tuple[str | None, str | None]]:
    """Each page's (previous, next) page. A sub-page goes back to its lab, and on to what follows it."""
    order = reading_order()
    links = {path: (order[i - 1] if i else None, order[i + 1] if i + 1 < len(order) else None)
             for i, path in enumerate(order)}
    for entry in entries():
        if entry.sub:
            lab_page = entry.path.rsplit("/", 1)[0] + "/README.md"
            links[entry.path] = (lab_page, links[lab_page][1])
    return links


def next_lab(lab: Lab) -> tuple[Lab | None, list[str]]:
    """The lab after ``lab`` in study order, and the pages Next visits on the way to it."""
    labs = list(registry.LABS)
    following = labs[labs.index(lab) + 1] if lab is not labs[-1] else None
    order = reading_order()
    start = order.index(f"{lab.folder}/README.md") + 1
    end = order.index(f"{following.folder}/README.md") if following else len(order)
    between = [path for path in order[start:end] if path.split("/")[0] in registry.PHASES]
    return following, between


def print_pages() -> list[str]:
    """The pages of the whole course on one page (``PRINT_PAGE``), in reading order: home, setup and
    the course, each lab's hints and results after it; not the maintainers' pages."""
    return [entry.path for entry in entries(tuple(e for e in nav() if e.title != "Contributing"))]


def site_url(path: str) -> str:
    """The built page of a Markdown file, from the site's root (a README becomes its folder's index)."""
    folder, _, name = path.rpartition("/")
    page = "index.html" if name == "README.md" else name.removesuffix(".md") + ".html"
    return f"{folder}/{page}" if folder else page


def lab_readmes() -> dict[str, Lab]:
    """Each lab's README path, to the lab."""
    return {f"{lab.folder}/README.md": lab for lab in registry.LABS}
