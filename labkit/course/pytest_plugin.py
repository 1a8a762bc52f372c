"""The pytest plugin behind ``labs check``, ``labs bugs`` and ``labs grade``: a record of each test.

Loaded with ``-p labkit.course.pytest_plugin`` in a pytest subprocess, it does nothing unless
``LABS_RESULTS_FD`` names the write end of the runner's results pipe (a file descriptor; a
handle on Windows). It keeps that end from every process pytest starts, and writes one JSON
line per event: ``collected`` (how many tests), ``test`` (one per test: outcome, a one-line
message, and, under ``labs grade``, the timeouts/crashes of the submission during it),
``error`` (a collection error). ``LABS_NAMED_TESTS`` (the bug gallery's quick check) runs only the
test functions it names, each until its first failing case.
"""

from __future__ import annotations

import json
import os

import pytest

from labkit.text import clean, one_line


def _open_results(token: str):
    """The results pipe's write end, marked not inheritable: no process pytest starts (a worker, a
    test's child) gets it."""
    if os.name == "nt":
        import msvcrt

        fd = msvcrt.open_osfhandle(int(token), os.O_WRONLY)
    else:
        fd = int(token)
    os.set_inheritable(fd, False)
    return open(fd, "w", buffering=1, encoding="utf-8")


class _Recorder:
    def __init__(self, file, config):
        self._file = file
        self._config = config

    def _write(self, **event) -> None:
        self._file.write(json.dumps(event) + "\n")

    def _incidents(self) -> list[dict]:
        """The grader's timeouts and crashes since the last test (none outside ``labs grade``)."""
        grader = self._config.pluginmanager.get_plugin("labs_grader")
        return grader.take_incidents() if grader is not None else []

    def pytest_collection_finish(self, session):
        self._write(event="collected", n=len(session.items))

    def pytest_collectreport(self, report):
        if report.failed:
            self._write(event="error", nodeid=report.nodeid, message=message(report))

    def pytest_runtest_logreport(self, report):
        # One record per test: the call, or the setup when it did not pass (an error, a skip).
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self._write(
                event="test",
                nodeid=report.nodeid,
                name=report.nodeid.split("::")[-1],
                outcome=report.outcome,
                when=report.when,
                message=message(report) if not report.passed else "",
                detail=_detail(report) if report.failed else "",
                incidents=self._incidents(),
            )
        elif report.when == "teardown" and report.failed:
            self._write(event="teardown-error", nodeid=report.nodeid, message=message(report))

    def pytest_unconfigure(self):
        self._file.close()


def message(report) -> str:
    """One line: why a test failed or skipped (what a run's record says; a kept suite says the same)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
        return one_line(longrepr[-1])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:  # "labkit.grader.standin.SubmissionTimeout: ..." reads better as "SubmissionTimeout: ..."
        return one_line(crash.message.removeprefix("labkit.grader.standin."))
    return one_line(str(longrepr).strip().splitlines()[-1] if str(longrepr).strip() else "")


def _detail(report, limit: int = 2000) -> str:
    """The failure's whole message, lines kept (``labs check`` picks its most useful lines), cleaned of
    control characters and capped at ``limit`` characters."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message.removeprefix("labkit.grader.standin.") if crash is not None else str(report.longrepr)
    return clean(text)[:limit]


class _NamedTests:
    """The bug gallery's quick check (``LABS_NAMED_TESTS=test_a,test_b``): only these test functions
    run, and each only until one of its cases fails; its other cases skip. One failing case is all
    it takes for a test to catch a bug (:func:`labkit.course.bugs.check_bug`)."""

    def __init__(self, names: str):
        self._names = {name.strip() for name in names.split(",") if name.strip()}
        self._failed: set[str] = set()

    def pytest_collection_modifyitems(self, config, items):
        dropped = [item for item in items if _function(item.nodeid) not in self._names]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if _function(item.nodeid) in self._names]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if _function(item.nodeid) in self._failed:
            pytest.skip("another case of this test already failed")

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.failed:
            self._failed.add(_function(report.nodeid))


def _function(nodeid: str) -> str:
    """The test function of a node id, without class or parameters, as the runner names it."""
    return nodeid.split("::")[-1].split("[", 1)[0]


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    token = os.environ.pop("LABS_RESULTS_FD", None)
    if token:
        config.pluginmanager.register(_Recorder(_open_results(token), config), "labs_recorder")
    named = os.environ.pop("LABS_NAMED_TESTS", None)
    if named:
        config.pluginmanager.register(_NamedTests(named), "labs_named_tests")
