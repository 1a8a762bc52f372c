"""What the site holds, in reading order, from the course registry.

The navigation is never written by hand. The course is read in study order (``registry.LABS``,
which crosses phases), and everything else takes its place around the labs:

- a phase's overview comes right before the first of its labs in study order, and opens a section
  of the navigation that runs until the next phase's overview;
- a chapter (``<phase>/tutorials/*.md``) comes right before the first lab whose README links to
  it (the lab that uses it), or after the phase's last lab when no lab links to it;
- a phase's cheatsheet and exercises come after the last of its labs in study order, and sit in
  their own phase's section of the navigation (lab 02-04 sits in Phase 4's, Phase 2's cheatsheet in
  Phase 2's: Next, after lab 02-04, opens it there);
- a lab is a section: its README, then its hints, results and going-further pages as sub-pages.
  The footer's Next skips the sub-pages (``reading_links``), so reading on never opens a hint by
  accident, and stops at the course's last page: the maintainers' pages are not on its way.

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
LAB_PAGES = (("hints.md", "Lab {id} hints"), ("results.md", "Lab {id} results"))
# Top-level folders the site never publishes: the maintainers' tests and their fixtures (a page's
# link to one of their files shows as plain text).
UNPUBLISHED = ("tests",)
# The files a lab's header links to, shown as code pages.
LAB_SOURCES = ("starter.py", "test_lab.py", "lab.py", "bench.py", "figures.py")


def given_modules(lab: Lab) -> list[str]:
    """A lab's given modules (``_*.py``: code the lab hands the learner to call or read, and its tests'
    helpers), by file name; each gets a code page, and the header links to those a learner calls
    (not the tests' ``*_checks.py`` and ``*_child.py``)."""
    return sorted(p.name for p in lab.path.glob("_*.py") if p.name != "__init__.py")


def called_modules(lab: Lab) -> list[str]:
    """The given modules a learner calls or reads (``given_modules`` without the tests' helpers)."""
    return [name for name in given_modules(lab) if not name.endswith(("checks.py", "_child.py"))]
# The terms each lab teaches, for search (a lab page's search tags, docs/mkdocs.yml weighs them): a
# term found on many pages lists first the lab that teaches it, not a later one that uses it.
SEARCH_TERMS = {
    "02-01": ("block pool", "free queue", "prefix cache", "block hash"),
    "02-02": ("fragmentation",),
    "02-03": ("KV memory budget", "gpu_memory_utilization"),
    "02-05": ("prefix cache", "KV cache manager", "eviction"),
    "02-06": ("slot mapping", "block table", "KV scatter"),
    "04-01": ("online softmax",),
    "04-03": ("causal prefill", "chunked prefill"),
    "04-04": ("flash-decoding", "merge of partial softmax"),
    "04-06": ("memory roofline", "split-KV"),
    "04-02": ("attention backend", "backend selector"),
    "04-07": ("context parallel", "decode context parallel"),
    "99-01": ("continuous batching", "engine step", "preemption"),
    "99-02": ("persistent batch", "CUDA graph"),
    "99-03": ("fused RMSNorm", "merged GEMM", "rotary embedding"),
}
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
    pages += [Entry(None, path, sub=True) for path in further_pages(lab)]
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


def further_pages(lab: Lab) -> list[str]:
    """A lab's ``going-further/`` pages (work past the lab's tests): the folder's README first."""
    folder = lab.path / "going-further"
    found = sorted(folder.glob("*.md"), key=lambda p: (p.name != "README.md", p.name))
    return [p.relative_to(ROOT).as_posix() for p in found]


def _course_sequence() -> list[tuple[str, Entry]]:
    """The course in reading order, each entry with the title of the sidebar section it belongs to.

    A lab sits in the section open when study order reaches it (lab 02-04, after lab 04-01, in
    Phase 4's); a phase's overview, chapters, cheatsheet and exercises sit in their own phase's
    section, wherever reading order puts them."""
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

    sequence: list[tuple[str, Entry]] = []
    opened: list[str] = []
    for lab in registry.LABS:
        title = registry.PHASES[lab.phase]
        if title not in opened:
            opened.append(title)
            sequence.append((title, Entry(None, f"{lab.phase}/README.md")))
        section = opened[-1]
        sequence += [(registry.PHASES[lab.phase], Entry(None, chapter)) for chapter in used_by.get(lab.id, [])]
        sequence.append((section, lab_entry(lab)))
        if last_of_phase[lab.phase] is lab:
            sequence += [(title, Entry(None, f"{lab.phase}/{name}")) for name in PHASE_SUMMARIES
                         if (ROOT / lab.phase / name).is_file()]
            sequence += [(title, Entry(None, chapter)) for chapter in unused.get(lab.phase, [])]
    for phase, title in registry.PHASES.items():  # a phase without labs yet: its pages at the end
        if phase not in last_of_phase:
            sequence += [(title, Entry(None, f"{phase}/{file}")) for file in ("README.md", *PHASE_SUMMARIES)
                         if (ROOT / phase / file).is_file()]
            sequence += [(title, Entry(None, chapter)) for chapter in chapters(phase)]
    return sequence


def course() -> tuple[Entry, ...]:
    """The course's sidebar: one section per phase, in the order the phases open, each holding its
    entries in reading order."""
    sections: dict[str, list[Entry]] = {}
    for title, entry in _course_sequence():
        sections.setdefault(title, []).append(entry)
    return tuple(Entry(title, children=tuple(pages)) for title, pages in sections.items())


def contributing() -> tuple[Entry, ...]:
    """The maintainers' pages that exist (a class edition, ``labs release``, has no CONTRIBUTING.md)."""
    return tuple(entry for entry in (Entry(None, "CONTRIBUTING.md"), Entry("How this site is built", "docs/README.md"))
                 if (ROOT / entry.path).is_file())


def nav() -> tuple[Entry, ...]:
    """The whole navigation: home, setup, the course, contributing."""
    maintainers = contributing()
    return (
        Entry("Home", "README.md"),
        Entry("Setup", "SETUP.md"),
        Entry("Course", children=course()),
        *([Entry("Contributing", children=maintainers)] if maintainers else []),
    )


def _flatten(roots) -> list[Entry]:
    out = []
    for entry in roots:
        if entry.path:
            out.append(entry)
        out += _flatten(entry.children)
    return out


def entries(roots: tuple[Entry, ...] | None = None) -> list[Entry]:
    """Every page entry of the navigation, in the sidebar's order (sub-pages after their lab)."""
    return _flatten(nav() if roots is None else roots)


def pages() -> list[str]:
    """Every page of the navigation."""
    return [entry.path for entry in entries()]


def reading_entries() -> list[Entry]:
    """The course's pages in reading order: home, setup, then the course as study order reads it (a
    phase's cheatsheet after the last of its labs, wherever the sidebar lists it); each lab's
    sub-pages after it. Not the maintainers' pages."""
    return [Entry("Home", "README.md"), Entry("Setup", "SETUP.md"),
            *_flatten(entry for _, entry in _course_sequence())]


def reading_order() -> list[str]:
    """The pages that Next walks through: the course in reading order, without the labs' sub-pages.
    It ends with the course's last page: the maintainers' pages are not on the way."""
    return [entry.path for entry in reading_entries() if not entry.sub]


def reading_links() -> dict[str, tuple[str | None, str | None]]:
    """Each page's (previous, next) page. A sub-page goes back to its lab, and on to what follows it;
    the maintainers' pages lead only to one another."""
    order = reading_order()
    links = {path: (order[i - 1] if i else None, order[i + 1] if i + 1 < len(order) else None)
             for i, path in enumerate(order)}
    for entry in reading_entries():
        if entry.sub:
            lab = registry.lab_for_path(ROOT / entry.path)
            lab_page = f"{lab.folder}/README.md"
            links[entry.path] = (lab_page, links[lab_page][1])
    maintainers = [entry.path for entry in contributing()]
    for i, path in enumerate(maintainers):
        links[path] = (maintainers[i - 1] if i else None, maintainers[i + 1] if i + 1 < len(maintainers) else None)
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
    the course, each lab's results and going-further pages after it; the hints are not among them
    (the build gathers them at the end, ``hint_pages``), nor are the maintainers' pages."""
    return [entry.path for entry in reading_entries() if not entry.path.endswith("/hints.md")]


def hint_pages() -> list[str]:
    """Every lab's hints page, in study order: the appendix of the course on one page."""
    return [entry.path for entry in reading_entries() if entry.path.endswith("/hints.md")]


def site_url(path: str) -> str:
    """The built page of a Markdown file, from the site's root (a README becomes its folder's index)."""
    folder, _, name = path.rpartition("/")
    page = "index.html" if name == "README.md" else name.removesuffix(".md") + ".html"
    return f"{folder}/{page}" if folder else page


def lab_readmes() -> dict[str, Lab]:
    """Each lab's README path, to the lab."""
    return {f"{lab.folder}/README.md": lab for lab in registry.LABS}
