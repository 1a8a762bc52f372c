"""A class edition: the course as ``labs release`` hands it to students, read where it runs.

:mod:`labkit.course.release` writes an edition; this module is what changes inside one. An
edition's root holds ``edition.json``, its manifest: the labs whose reference solutions it holds
(released by the instructor, usually once their deadline has passed), the files the release wrote
and the course's commit they came from. Where that file is present:

- ``LAB_IMPL`` defaults to ``starter``: ``pytest`` and ``labs check`` test the student's own work;
- ``load_reference("02-01")`` is lab 02-01's ``solution.py`` once it is released, and until then the
  student's own ``starter.py`` of that lab: a lab builds on the student's last one, as in a class;
- pytest's header and ``labs check`` name the labs that build on a reference not released yet.

In the course's own repository there is no manifest, and nothing here changes anything.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from labkit.course import registry
from labkit.course.registry import Lab

# Given modules that cannot help holding an earlier lab's answers, by lab: {lab id: {file: owner}}.
# Such a module is part of its owner's reference; until that is released, the later lab cannot run
# in an edition, and says so (notes). None today: a lab that builds on an earlier one loads its
# reference (lab 99-02's engine runs lab 99-01's schedule that way).
HELD_WITH: dict[str, dict[str, str]] = {}

MANIFEST = "edition.json"

# A lab's use of an earlier lab's reference, as written in its files.
_LOAD_REFERENCE = re.compile(r"""load_reference\(\s*["'](\d{2}-\d{2})["']\s*\)""")


@dataclass(frozen=True)
class Edition:
    released: tuple[str, ...]  # the labs whose solution.py the edition holds, in study order
    files: tuple[str, ...]  # every file the release wrote, relative to the edition's root
    source: str  # the course's commit it was written from


def read(root: Path) -> Edition | None:
    """The edition whose root is ``root``, or None when ``root`` holds no manifest (the course itself)."""
    path = Path(root) / MANIFEST
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return Edition(tuple(data.get("released", ())), tuple(data.get("files", ())), str(data.get("source", "")))


@functools.cache
def current() -> Edition | None:
    """The edition this checkout is, or None for the course's own repository."""
    return read(registry.ROOT)


def default_impl() -> str:
    """What ``LAB_IMPL`` means when it is unset: the student's work in an edition, else the reference."""
    return "starter" if current() is not None else "solution"


def _released(released: Collection[str] | None) -> Collection[str] | None:
    """``released`` when given, else this checkout's released references (None outside an edition)."""
    if released is not None:
        return released
    return current().released if current() is not None else None


def reference_impl(lab_id: str, released: Collection[str] | None = None) -> str:
    """What ``load_reference(lab_id)`` loads: ``solution``, or ``starter`` in an edition that has not
    released that lab's reference. ``released``: that edition's references (default: this checkout's;
    none outside an edition)."""
    released = _released(released)
    return "solution" if released is None or lab_id in released else "starter"


def references_loaded(lab: Lab, released: Collection[str] | None = None) -> list[str]:
    """The earlier labs whose reference a run of ``lab``'s tests loads, in the order found: through
    its starter, solution, given modules (``_*.py``) or tests, or through the files those references
    load in turn (an unreleased reference is a starter, and loads what that starter loads). Never
    the lab itself. ``released`` as for :func:`reference_impl`."""
    found: list[str] = []
    todo = [lab.path / name for name in ("starter.py", "solution.py", "test_lab.py")]
    todo += sorted(lab.path.glob("_*.py"))
    while todo:
        file = todo.pop(0)
        text = file.read_text(encoding="utf-8") if file.is_file() else ""
        for lab_id in _LOAD_REFERENCE.findall(text):
            if lab_id == lab.id or lab_id in found:
                continue
            found.append(lab_id)
            other = registry.get(lab_id).path
            todo += [other / f"{reference_impl(lab_id, released)}.py", *sorted(other.glob("_*.py"))]
    return found


def waiting(lab: Lab, released: Collection[str] | None = None) -> list[str]:
    """The references ``lab`` loads that the edition has not released, in study order (``released``
    as for :func:`reference_impl`; none outside an edition)."""
    released = _released(released)
    if released is None:
        return []
    order = [entry.id for entry in registry.LABS]
    return sorted((i for i in references_loaded(lab, released) if i not in released), key=order.index)


def held_back(lab: Lab, released: Collection[str] | None = None) -> list[tuple[str, str]]:
    """``(file, lab id)`` for each given module of ``lab`` that the edition holds back with an earlier
    lab's reference not released yet, because it holds that lab's answers
    (:data:`HELD_WITH`): until then ``lab`` cannot run. ``released`` as for :func:`reference_impl`;
    none outside an edition."""
    released = _released(released)
    if released is None:
        return []
    return [(name, owner) for name, owner in HELD_WITH.get(lab.id, {}).items() if owner not in released]


def notes(labs: list[Lab], released: Collection[str] | None = None, whose: str = "your") -> list[str]:
    """One line per lab of ``labs`` that an unreleased reference changes: what it runs on instead
    (``whose`` own starter of the earlier lab), or that it cannot run yet (:func:`held_back`).
    ``released`` as for :func:`reference_impl`; no line outside an edition."""
    released = _released(released)
    if released is None:
        return []
    lines = []
    for lab in labs:
        held, ids = held_back(lab, released), waiting(lab, released)
        if held:
            name, owner = held[0]
            lines.append(f"{lab.id} cannot run before {owner}'s reference is released: its given module {name} "
                         f"holds {owner}'s answers, and comes with that reference")
        elif ids:
            one = len(ids) == 1
            lines.append(f"{lab.id} builds on {', '.join(ids)}, whose reference{' is' if one else 's are'} not "
                         f"released yet: it runs on {whose} own starter.py of {'that lab' if one else 'those labs'}")
    return lines
