"""Each lab's suite as a plain ``pytest`` ran it on the reference solution, kept for the checks that
need that run again.

``pytest`` (the README's test command) runs every lab's whole suite on its reference. Two of the
maintainers' checks need that run once more: mutation testing (every test passes on the reference,
and the suite's time sets the mutants' time limit) and the grader's agreement check (pytest's count
for each reference, which the grader's must equal). Rather than run each suite again, a ``pytest``
run keeps, in pytest's cache (``.pytest_cache/v/labs/suite/<lab id>``), every lab whose collected
tests all ran on the reference: each test's outcome and whether it is marked ``ungraded``, and the
suite's time, under a fingerprint of what decided them (every file of labkit and of the phases'
folders, the root ``conftest.py`` and ``pyproject.toml``, the versions of Python and of the packages
the tests import, ``TRITON_INTERPRET``). :func:`recorded` hands a record back only while its
fingerprint still holds; a check that gets None runs the suite itself.

Nothing is kept by a run of another implementation (``LAB_IMPL``), by a run that deselected or
stopped before some of a lab's tests, or without pytest's cache (``-p no:cacheprovider``, which
every run that ``labs`` starts passes). A maintainers' check in a lab's test file is not part of
its suite here, as it is not in a lab's run (``-m maintainer`` names it).
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import sys
from importlib import metadata
from pathlib import Path

import pytest

from labkit.course import pytest_plugin, registry
from labkit.course.runner import LabRun, TestResult
from labkit.testing import loader

KEY = "labs/suite/"
PACKAGES = ("pytest", "numpy", "torch", "triton", "transformers")
_SKIPPED_FOLDERS = {"__pycache__", ".pytest_cache", ".ruff_cache", "bench-logs"}


@functools.cache
def fingerprint() -> str:
    """A hash of every file a lab's run can read from the repository, and of the run's surroundings."""
    digest = hashlib.sha256()
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} absent")
    # Where Triton runs, as far as the run has decided (a run of Python-only labs never imports torch to find
    # out: conftest.py); a check that decided otherwise runs the suite itself.
    where = os.environ.get("TRITON_INTERPRET", "")
    digest.update(f"{sys.version} {platform.machine()} {' '.join(versions)} TRITON_INTERPRET={where}".encode())
    root = registry.ROOT
    files = [root / "conftest.py", root / "pyproject.toml"]
    for top in [root / "labkit", *sorted(root.glob("phase-*"))]:
        files += sorted(p for p in top.rglob("*") if p.is_file() and not _SKIPPED_FOLDERS & set(p.parts))
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"absent")
    return digest.hexdigest()


def recorded(cache, lab: registry.Lab, *, graded_only: bool = False) -> LabRun | None:
    """The kept run of ``lab``'s suite on its reference, from ``cache`` (pytest's: ``config.cache``,
    None where it is off), as :func:`labkit.course.runner.run_lab_tests` would return it
    (``graded_only``: without the tests marked ``ungraded``, as ``-m "not ungraded"`` would); None
    when none is kept or what decided it has changed since."""
    record = cache.get(KEY + lab.id, None) if cache is not None else None
    if not isinstance(record, dict) or record.get("fingerprint") != fingerprint():
        return None
    tests = [TestResult(nodeid, nodeid.split("::")[-1], outcome, message, when=when)
             for nodeid, outcome, when, message, ungraded in record["tests"] if not (graded_only and ungraded)]
    failed = any(t.outcome == "failed" for t in tests)
    return LabRun(tests=tests, collected=len(tests), returncode=1 if failed else 0, seconds=record["seconds"])


def _maintainers(item) -> bool:
    """A maintainers' check in a lab's test file: not part of the suite that a lab's run runs (the root
    conftest.py leaves it out unless ``-m`` names it), kept or not."""
    return item.get_closest_marker("maintainer") is not None


@functools.cache
def _lab_of(path: str) -> str | None:
    lab = registry.lab_for_path(Path(path))
    return lab.id if lab is not None else None


class _Keeper:
    """Follows one ``pytest`` session's tests lab by lab, and keeps the labs that ran whole."""

    def __init__(self):
        self.items: dict[str, set[str]] = {}  # lab id -> its collected tests' node ids
        self.broken: set[str] = set()  # labs with a test deselected or a collection error
        self.tests: dict[str, dict[str, list]] = {}  # lab id -> node id -> [outcome, when, message, ungraded]
        self.seconds: dict[str, float] = {}
        self.ungraded: set[str] = set()

    @staticmethod
    def _lab(path) -> str | None:
        return _lab_of(str(path)) if path is not None else None

    def pytest_deselected(self, items):
        self.broken.update(filter(None, (self._lab(item.path) for item in items if not _maintainers(item))))

    def pytest_collectreport(self, report):
        if report.failed:
            self.broken.add(self._lab(report.fspath))

    def pytest_collection_finish(self, session):
        for item in session.items:
            lab = self._lab(item.path)
            if lab is not None and not _maintainers(item):
                self.items.setdefault(lab, set()).add(item.nodeid)
                if item.get_closest_marker("ungraded"):
                    self.ungraded.add(item.nodeid)

    def pytest_runtest_logreport(self, report):
        lab = self._lab(report.fspath)
        if lab is None or report.nodeid not in self.items.get(lab, ()):
            return
        self.seconds[lab] = self.seconds.get(lab, 0.0) + report.duration
        tests = self.tests.setdefault(lab, {})
        if report.when == "call" or (report.when == "setup" and not report.passed):  # as the runs' recorder does
            message = pytest_plugin.message(report) if not report.passed else ""
            tests[report.nodeid] = [report.outcome, report.when, message, report.nodeid in self.ungraded]
        elif report.when == "teardown" and report.failed and report.nodeid in tests:
            tests[report.nodeid][0] = "failed"

    def pytest_sessionfinish(self, session, exitstatus):
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            return
        for lab, nodeids in self.items.items():
            ran = self.tests.get(lab, {})
            if lab in self.broken or set(ran) != nodeids:
                continue
            session.config.cache.set(KEY + lab, {
                "fingerprint": fingerprint(), "seconds": round(self.seconds.get(lab, 0.0), 3),
                "tests": [[nodeid, *ran[nodeid]] for nodeid in sorted(nodeids)],
            })


@pytest.hookimpl(trylast=True)  # after pytest's cache is set up
def pytest_configure(config):
    if getattr(config, "cache", None) is not None and loader.impl_name() == "solution":
        config.pluginmanager.register(_Keeper(), "labs_suite_record")
