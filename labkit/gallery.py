"""Checking a lab's bug gallery: does every catalogued bug fail the lab's tests?

Shared by ``labs bugs LAB`` and the maintainers' check ``tests/test_bug_gallery.py``.
A bug's docstring and ``CAUGHT_BY`` are read from its source without importing it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from labkit import runner
from labkit.bugs import gallery
from labkit.runner import LabRun, run_lab_tests


@dataclass
class Bug:
    name: str  # LAB_IMPL=bugs/<name>
    path: Path
    doc: str | None  # the module docstring
    caught_by: list[str] | None  # the CAUGHT_BY list; None when absent or not a list of strings
    problem: str = ""  # why the file could not be read

    @property
    def summary(self) -> str:
        return (self.doc or "").strip().splitlines()[0] if self.doc and self.doc.strip() else ""


@dataclass
class BugCheck:
    bug: Bug
    run: LabRun
    catchers: list[str] = field(default_factory=list)  # test functions that failed on it

    @property
    def caught(self) -> bool:
        return bool(self.catchers)

    def _skipped_here(self, test: str) -> bool:
        runs = [t for t in self.run.tests if t.function == test]
        return bool(runs) and all(t.outcome == "skipped" for t in runs)

    @property
    def declared_missed(self) -> list[str]:
        """CAUGHT_BY tests that did not fail on the bug (or do not exist). A test that only
        skipped on this machine (a GPU test on a CPU) is not held against the bug."""
        return [t for t in (self.bug.caught_by or []) if t not in self.catchers and not self._skipped_here(t)]

    @property
    def skip_reason(self) -> str:
        """Why the bug could not be checked here: every CAUGHT_BY test skipped (a GPU-only test on a
        CPU machine); "" otherwise."""
        declared = self.bug.caught_by or []
        if self.caught or not declared or not all(self._skipped_here(t) for t in declared):
            return ""
        first = next(t for t in self.run.tests if t.function == declared[0])
        return f"its CAUGHT_BY tests skip here ({first.message})"

    @property
    def ok(self) -> bool:
        return self.caught and bool(self.bug.caught_by) and not self.declared_missed and bool(self.bug.doc)


def read_bug(path: Path) -> Bug:
    name = path.stem
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError) as err:
        return Bug(name, path, None, None, problem=f"cannot read: {err}")
    caught_by = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CAUGHT_BY" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                caught_by = list(value)
    return Bug(name, path, ast.get_docstring(tree), caught_by)


def bugs_of(lab_dir: Path) -> list[Bug]:
    return [read_bug(Path(lab_dir) / "bugs" / f"{name}.py") for name in gallery(lab_dir)]


def test_functions(lab_dir: Path) -> list[str]:
    """The test functions of ``test_lab.py`` (top level and in classes), read without importing."""
    tree = ast.parse((Path(lab_dir) / "test_lab.py").read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and re.match(r"test", node.name):
            names.append(node.name)
    return names


def check_bug(lab_dir: Path, bug: Bug, timeout: float | None = 300) -> BugCheck:
    run = run_lab_tests(lab_dir, impl=f"bugs/{bug.name}", timeout=timeout)
    # A test catches the bug when it ran and failed; a failure in setup (the bug module
    # does not even import) catches nothing and is reported as an error instead.
    catchers = list(dict.fromkeys(t.function for t in run.failures if t.when == "call"))
    broken = [t for t in run.failures if t.when != "call"]
    if broken and not run.errors:
        run.errors.append(f"{broken[0].name} could not run: {broken[0].message}")
    return BugCheck(bug, run, catchers)


def check_gallery(lab_dir: Path, jobs: int = 2, on_done: Callable[[BugCheck], None] | None = None,
                  bugs: list[Bug] | None = None) -> list[BugCheck]:
    """Run the lab's tests against each bug, ``jobs`` at a time; results in gallery order."""
    bugs = bugs_of(lab_dir) if bugs is None else bugs

    def one(bug):
        check = check_bug(lab_dir, bug)
        if on_done:
            on_done(check)
        return check

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        try:
            return list(pool.map(one, bugs))
        except KeyboardInterrupt:
            runner.STOP.set()  # stop the runs in flight before the pool waits for them
            raise
