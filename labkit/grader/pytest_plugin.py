"""The grader's pytest plugin: the ``lab`` fixture becomes a stand-in for a student's file.

Loaded with ``-p labkit.grader.pytest_plugin`` by ``labs grade``. With
``LABS_SUBMISSION=<file>`` set, the root ``conftest.py``'s ``lab`` fixture hands the tests a
:class:`labkit.grader.standin.Submission` for that student's file instead of importing it;
``LABS_CALL_TIMEOUT``, ``LABS_IMPORT_TIMEOUT`` (seconds), ``LABS_DEADLINE`` (a ``time.time()``),
``LABS_TRITON=1`` configure it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labkit.text import one_line


class _Grader:
    """Registered as plugin ``labs_grader``; the ``lab`` fixture asks it for the module under test."""

    def __init__(self, file: Path):
        self.file = file
        self.incidents: list[dict] = []
        self._open = []
        self._import_failure = None  # (exception type, message) once the import timed out or crashed

    def take_incidents(self) -> list[dict]:
        taken, self.incidents = self.incidents, []
        return taken

    def lab_module(self, lab_dir: Path):
        from labkit.grader.standin import SubmissionCrashed, SubmissionTimeout

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
        from labkit.grader.standin import Submission

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


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if os.environ.get("LABS_SUBMISSION"):
        config.pluginmanager.register(_Grader(Path(os.environ["LABS_SUBMISSION"])), "labs_grader")
