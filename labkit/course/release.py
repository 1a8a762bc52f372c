"""``labs release OUT``: the class edition, the copy of the course an instructor hands students.

An edition is the course without what gives its answers away. Each lab keeps its README, starter,
tests, hints, given modules (``_*.py``), figures, demos and benchmarks with their results (numbers,
not code); the course keeps ``labkit``, the site's sources, ``conftest.py``, ``pyproject.toml``,
LICENSE and the checks of ``labkit`` itself. It leaves out each lab's reference: ``solution.py``
(and any other implementation of the lab's API), the bug gallery and the mutation survivors' list
(each entry an edit of the solution, holding its lines), and the work of ``going-further/`` that
shows the reference's code; and the maintainers' files: CONTRIBUTING.md, CI, the checks of the
course against its references, the grader's example and hostile classes. The README is rewritten for
students where it speaks of the references (:data:`REWRITTEN`), SETUP.md loses its instructors'
sections (:data:`LEFT_OUT`), and a link to a file the edition does not hold becomes its text.

The instructor chooses which references an edition holds (``--release-solutions 02-01,02-05``: those
whose deadline has passed). A released lab's reference comes whole (solution, gallery,
going-further work), and later labs load it; until then they load the student's own starter of
that lab (:mod:`labkit.course.edition`, which also says how an edition runs). ``edition.json``,
the manifest, records what was released and which files were written: ``labs release OUT
--release-solutions 02-06`` on an edition adds one reference and writes the files again, removing
only those the last release wrote, so OUT's ``.git`` and anything else in it stay.

Where each file goes is decided in one place, :func:`part_of`, from the registry, the lab folder's
conventions and the few declarations below.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import posixpath
import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from labkit.course import edition, registry
from labkit.course.registry import ROOT, Lab

COURSE, REFERENCE, MAINTAINERS = "course", "reference", "maintainers"

# The top of the repository that an edition holds (the phases' folders as well); the rest
# (CONTRIBUTING.md, .ci/) is the maintainers'.
TOP_LEVEL = {"README.md", "SETUP.md", "LICENSE", ".gitignore", "conftest.py", "pyproject.toml", "labkit", "docs",
             "tests"}
# tests/ in an edition: the checks of labkit itself, which need no lab and tell a student that the
# course's helpers work on their machine. The others check the course against its references and
# galleries, or grade classes: the maintainers'.
COURSE_TESTS = ("tests/test_labkit.py", "tests/test_labkit_bench.py")
# going-further/ files that show no reference code (notes on launch costs, the tuning levers'
# measurements, a tuning diary): every edition holds them. Every other file of a going-further/
# folder (an alternative kernel, a sweep of the reference's variants, a write-up of their code)
# is part of its lab's reference.
FURTHER_NOTES = {
    "04-06": ("going-further/launch-overhead.md", "going-further/tuning.md", "going-further/tuning-diary.md"),
}
# Sections of the course's pages that only an instructor needs (with their subsections).
LEFT_OUT = {
    "SETUP.md": ("### A class edition for students: `labs release`", "### Grading a class: `labs grade`",
                 "### Grading: what it needs",
                 "### What the grader protects against, and what it does not"),
}
# Pages an edition rewrites for students: each "## " section of the second file (its links relative
# to itself, as everywhere) replaces the first file's section with the same heading, subsections
# included; a heading the first file lacks is inserted before the section the next one replaces.
REWRITTEN = {"README.md": "labkit/course/edition_readme.md"}


class ReleaseError(Exception):
    """The edition cannot be written: OUT is not an edition's folder, the course is not a git checkout."""


# --------------------------------------------------------------------------- where each file goes


def part_of(rel: str) -> tuple[str, str | None]:
    """Where the course's file ``rel`` goes: ``(COURSE, None)`` into every edition, ``(REFERENCE, lab id)``
    into editions that release that lab's reference, ``(MAINTAINERS, None)`` into none."""
    top = rel.split("/", 1)[0]
    if rel in REWRITTEN.values():
        return MAINTAINERS, None  # applied to its page, not copied
    if top == "tests":
        return (COURSE if rel in COURSE_TESTS else MAINTAINERS), None
    lab = registry.lab_for_path(ROOT / rel)
    if lab is not None:
        return _in_lab(lab, rel[len(lab.folder) + 1:])
    return (COURSE if top in TOP_LEVEL or top in registry.PHASES else MAINTAINERS), None


def _in_lab(lab: Lab, inner: str) -> tuple[str, str | None]:
    """Where a file of a lab folder goes (``inner``: its path in the folder), as :func:`part_of` says."""
    parts = inner.split("/")
    if inner in edition.HELD_WITH.get(lab.id, {}):
        return REFERENCE, edition.HELD_WITH[lab.id][inner]
    if parts[0] == "bugs" or inner == "survivors.toml":  # edits of the solution, each holding its lines
        return REFERENCE, lab.id
    if parts[0] == "going-further":
        return (COURSE, None) if inner in FURTHER_NOTES.get(lab.id, ()) else (REFERENCE, lab.id)
    if inner.endswith(".py") and inner != "starter.py" and inner.removesuffix(".py") in _implementations(lab.path):
        return REFERENCE, lab.id  # solution.py, or another implementation of the lab's API
    if parts[-1].startswith("test_") and inner.endswith(".py") and _maintainers_module(lab.path / inner):
        return MAINTAINERS, None  # a check of the lab's benchmark against its reference (04-02's test_bench.py)
    return COURSE, None


@functools.cache
def _implementations(lab_dir: Path) -> frozenset[str]:
    from labkit.testing.loader import available_impls

    return frozenset(available_impls(lab_dir))


def _maintainers_module(path: Path) -> bool:
    """Whether a test module is the maintainers' as a whole: its ``pytestmark`` names ``maintainer``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            return "mark.maintainer" in ast.unparse(node.value)
    return False


def course_files() -> list[str]:
    """The course's files: those git tracks, and new ones it does not ignore (what ``git add -A``
    would commit), as they are in the working tree."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise ReleaseError(f"labs release reads the course's files from git, and {ROOT} is not a git checkout "
                           f"({err})") from err
    return sorted({rel for rel in listed.decode().split("\0") if rel and (ROOT / rel).is_file()})


def plan(released: Iterable[str]) -> dict[str, list[str]]:
    """The course's files by what becomes of them: ``"course"`` and ``"released"`` (copied),
    ``"reference"`` (the references not released) and ``"maintainers"`` (left out)."""
    released = set(released)
    out: dict[str, list[str]] = {COURSE: [], "released": [], REFERENCE: [], MAINTAINERS: []}
    for rel in course_files():
        part, owner = part_of(rel)
        out["released" if part == REFERENCE and owner in released else part].append(rel)
    return out


# --------------------------------------------------------------------------- pages


_HEADING = re.compile(r"(#{1,6}) ")


def _sections(text: str) -> list[tuple[str, int, int, int]]:
    """Every section of a Markdown page: (heading line, level, first line, end line), a section
    running to the next heading of its level or above; headings inside code do not count."""
    from labkit.docs.build import outside_code

    lines = text.split("\n")
    heads = [(n, len(m.group(1))) for n, visible in outside_code(text) if (m := _HEADING.match(visible))]
    return [(lines[n].strip(), level, n, next((m for m, lv in heads[i + 1:] if lv <= level), len(lines)))
            for i, (n, level) in enumerate(heads)]


def drop_sections(text: str, headings: Iterable[str], page: str) -> str:
    """``text`` without the sections whose heading lines are ``headings`` (subsections included)."""
    found = {heading: (start, end) for heading, _, start, end in _sections(text)}
    missing = [h for h in headings if h not in found]
    if missing:
        raise ReleaseError(f"{page} has no section {missing[0]!r} to leave out of the edition: update "
                           "LEFT_OUT in labkit/course/release.py")
    lines = text.split("\n")
    for start, end in sorted((found[h] for h in headings), reverse=True):
        del lines[start:end]
    return "\n".join(lines)


def rewrite_sections(text: str, page: str, overlay: str, overlay_page: str) -> str:
    """``text`` (the page ``page``) with each ``## `` section of ``overlay`` (the page ``overlay_page``)
    in place of its namesake; a new heading goes before the section the next one replaces."""
    from labkit.docs.build import rewrite_links

    def chunks(source: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
        """(lines before the first "## " section, [(heading, lines) of each "## " section])."""
        lines = source.split("\n")
        tops = [(start, end, heading) for heading, level, start, end in _sections(source) if level == 2]
        head = lines[: tops[0][0]] if tops else lines
        return head, [(heading, lines[start:end]) for start, end, heading in tops]

    def rebase(target: str) -> str:
        if _elsewhere(target):
            return target
        path, _, fragment = target.partition("#")
        moved = posixpath.relpath(posixpath.normpath(posixpath.join(posixpath.dirname(overlay_page), path)),
                                  posixpath.dirname(page) or ".")
        return moved + (f"#{fragment}" if fragment else "")

    head, sections = chunks(text)
    _, replacements = chunks(rewrite_links(overlay, rebase))
    existing = {heading for heading, _ in sections}
    before: dict[str, list[str]] = {}
    pending: list[str] = []
    for heading, lines in replacements:
        if heading in existing:
            before[heading], pending = pending, []
        else:
            pending += _spaced(lines)
    replaced = dict(replacements)
    out = list(head)
    for heading, lines in sections:
        out += before.get(heading, []) + _spaced(replaced.get(heading, lines))
    return "\n".join(out + pending).rstrip("\n") + "\n"


def _elsewhere(target: str) -> bool:
    """Whether a link's target is not a file of the course: a URL, an anchor of the page, an absolute path."""
    return bool(re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith(("#", "/"))


def _spaced(lines: list[str]) -> list[str]:
    """A section's lines ending with one blank line."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return [*lines, ""]


def unlink_left_out(text: str, page: str, kept: set[str]) -> str:
    """``text`` (the page ``page``) with every link to a course file that the edition does not hold
    turned into its text: the site's strict build would call it dead, and a reader could not follow it."""
    from labkit.docs.build import rewrite_links

    def keep(target: str) -> str | None:
        if _elsewhere(target):
            return target
        path = target.partition("#")[0]
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
        if not (ROOT / rel).exists() or rel.startswith("../"):
            return target  # not a course file: left as it is
        if (ROOT / rel).is_dir():  # a folder: held while the edition holds a file of it
            return target if any(f.startswith(rel + "/") for f in kept) else None
        return target if rel in kept else None

    return rewrite_links(text, keep)


def page_text(rel: str, text: str, kept: set[str]) -> str:
    """A Markdown page of the course as the edition shows it."""
    if rel in REWRITTEN:
        overlay = REWRITTEN[rel]
        text = rewrite_sections(text, rel, (ROOT / overlay).read_text(encoding="utf-8"), overlay)
    if rel in LEFT_OUT:
        text = drop_sections(text, LEFT_OUT[rel], rel)
    return unlink_left_out(text, rel, kept)


# --------------------------------------------------------------------------- writing an edition


@dataclass
class Release:
    """What ``release`` did, for the command's report."""

    out: Path
    released: tuple[str, ...]
    source: str
    files: list[str]  # written, the manifest not included
    left_out: Counter  # files left out, by reason: "reference" (not released), "maintainers"
    seconds: float


def release(out: Path, add: Iterable[str] = ()) -> Release:
    """Write the class edition at ``out``, holding the references ``add`` and those ``out``'s
    manifest already lists."""
    start = time.monotonic()
    out = Path(out).resolve()
    if out == ROOT or ROOT in out.parents or out in ROOT.parents:
        raise ReleaseError(f"{out} is inside the course's repository (or holds it): write the edition elsewhere, "
                           "it is a repository of its own")
    previous = _previous(out)
    order = [lab.id for lab in registry.LABS]
    for lab_id in add:
        registry.get(lab_id)  # a ValueError naming the labs for an unknown id
    released = tuple(sorted({*(previous.released if previous else ()), *add}, key=order.index))
    parts = plan(released)
    files = parts[COURSE] + parts["released"]
    kept = set(files)

    # Every page is rewritten before OUT is touched: a page that cannot be (a section gone) changes nothing.
    pages = {rel: page_text(rel, (ROOT / rel).read_text(encoding="utf-8"), kept)
             for rel in files if rel.endswith(".md")}
    if previous is not None:  # only what the last release wrote goes; .git and the rest of OUT stay
        for rel in previous.files:
            if out in (out / rel).resolve().parents:
                (out / rel).unlink(missing_ok=True)
        _remove_empty_folders(out)
    for rel in files:
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if rel in pages:
            dest.write_text(pages[rel], encoding="utf-8")
        else:
            shutil.copyfile(ROOT / rel, dest)
        shutil.copymode(ROOT / rel, dest)
    source = _source()
    manifest = {
        "about": "A class edition of the course, written by `labs release` (labkit/course/release.py). released: "
                 "the labs whose reference solutions it holds. files: what the release wrote, replaced by the "
                 "next release.",
        "source": source,
        "released": list(released),
        "files": files,
    }
    (out / edition.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    left_out = Counter({REFERENCE: len(parts[REFERENCE]), MAINTAINERS: len(parts[MAINTAINERS])})
    return Release(out, released, source, files, left_out, time.monotonic() - start)


def _previous(out: Path) -> edition.Edition | None:
    """The edition already at ``out``, None for a new or empty folder; a ReleaseError for a folder
    that holds anything else (its files are not the release's to replace)."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise ReleaseError(f"{out} is a file, not a folder")
    previous = edition.read(out)
    if previous is None and any(p.name != ".git" for p in out.iterdir()):
        raise ReleaseError(f"{out} holds files but no {edition.MANIFEST}: it is not an edition that labs release "
                           "wrote; name a new or empty folder")
    return previous


def _remove_empty_folders(out: Path) -> None:
    for folder, _, _ in sorted(os.walk(out), key=lambda walked: -len(walked[0])):
        path = Path(folder)
        if path != out and ".git" not in path.relative_to(out).parts and not any(path.iterdir()):
            path.rmdir()


def _source() -> str:
    """The course's commit, with "+changes" when the working tree differs from it."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+changes" if dirty else "")
