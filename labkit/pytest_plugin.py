"""The pytest plugin behind ``labs check``, ``labs bugs`` and ``labs grade``.

Loaded with ``-p labkit.pytest_plugin`` in a pytest subprocess, it does nothing
unless asked to through the environment:

- ``LABS_RESULTS=<file>``: append one JSON line per event: ``collected`` (how
  many tests), ``test`` (one per test: outcome, a one-line message, and the
  timeouts/crashes of the submission during it), ``error`` (a collection error).
- ``LABS_SUBMISSION=<file>``: the ``lab`` fixture (root ``conftest.py``) hands
  the tests a :class:`labkit.remote.Submission` for that student's file instead
  of importing it; ``LABS_CALL_TIMEOUT``, ``LABS_IMPORT_TIMEOUT`` (seconds),
  ``LABS_DEADLINE`` (a ``time.time()``), ``LABS_TRITON=1`` configure it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def one_line(text: str, limit: int = 300) -> str:
    """The first non-empty line of ``text``, shortened to ``limit`` characters."""
    line = next((s.strip() for s in str(text).splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


class _Grader:
    """Registered as plugin ``labs_grader`` under ``labs grade``; the ``lab`` fixture asks it."""

    def __init__(self, file: Path):
        self.file = file
        self.incidents: list[dict] = []
        self._open = []
        self._import_failure = None  # (exception type, message) once the import timed out or crashed

    def lab_module(self, lab_dir: Path):
        from labkit.remote import SubmissionCrashed, SubmissionTimeout

        if self._import_failure is not None:  # pytest sets the fixture up again for each test: fail fast
            kind, message = self._import_failure
            raise kind(message)
        deadline = os.environ.get("LABS_DEADLINE")
        try:
            submission = self._start(deadline)
        except (SubmissionTimeout, SubmissionCrashed) as err:
            self._import_failure = (type(err), str(err))
            raise
        self._open.append(submission)
        return submission

    def _start(self, deadline):
        from labkit.remote import Submission

        return Submission(
            self.file,
            triton=os.environ.get("LABS_TRITON") == "1",
            call_timeout=float(os.environ.get("LABS_CALL_TIMEOUT", "10")),
            import_timeout=float(os.environ.get("LABS_IMPORT_TIMEOUT", "60")),
            deadline=float(deadline) if deadline else None,
            on_incident=lambda kind, message: self.incidents.append({"kind": kind, "message": one_line(message)}),
        )

    def pytest_unconfigure(self):
        for submission in self._open:
            submission.close()


class _Recorder:
    def __init__(self, path: Path, grader: _Grader | None):
        self._file = open(path, "a", buffering=1, encoding="utf-8")
        self._grader = grader

    def _write(self, **event) -> None:
        self._file.write(json.dumps(event) + "\n")

    def pytest_collection_finish(self, session):
        self._write(event="collected", n=len(session.items))

    def pytest_collectreport(self, report):
        if report.failed:
            self._write(event="error", nodeid=report.nodeid, message=_message(report))

    def pytest_runtest_logreport(self, report):
        # One record per test: the call, or the setup when it did not pass (an error, a skip).
        if report.when == "call" or (report.when == "setup" and not report.passed):
            incidents = []
            if self._grader is not None:
                incidents, self._grader.incidents[:] = list(self._grader.incidents), []
            self._write(
                event="test",
                nodeid=report.nodeid,
                name=report.nodeid.split("::")[-1],
                outcome=report.outcome,
                when=report.when,
                message=_message(report) if not report.passed else "",
                incidents=incidents,
            )
        elif report.when == "teardown" and report.failed:
            self._write(event="teardown-error", nodeid=report.nodeid, message=_message(report))

    def pytest_unconfigure(self):
        self._file.close()


def _message(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
        return one_line(longrepr[-1])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:  # "labkit.remote.SubmissionTimeout: ..." reads better as "SubmissionTimeout: ..."
        return one_line(crash.message.removeprefix("labkit.remote."))
    return one_line(str(longrepr).strip().splitlines()[-1] if str(longrepr).strip() else "")


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    grader = None
    if os.environ.get("LABS_SUBMISSION"):
        grader = _Grader(Path(os.environ["LABS_SUBMISSION"]))
        config.pluginmanager.register(grader, "labs_grader")
    if os.environ.get("LABS_RESULTS"):
        config.pluginmanager.register(_Recorder(Path(os.environ["LABS_RESULTS"]), grader), "labs_recorder")
