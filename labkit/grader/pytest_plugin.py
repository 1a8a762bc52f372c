"""The trusted pytest process under ``labs grade`` (``-p labkit.grader.pytest_plugin``, configured by
``LABS_GRADING``): it fills :mod:`labkit.testing.seam`, so the ``lab`` fixture is a stand-in for the
student's file (the names of the API the lab's lab.toml declares) and a test's child script runs in the
student's sandbox."""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

from labkit.text import one_line


class _Grader:
    """Registered as plugin ``labs_grader``; the ``lab`` fixture asks it for the module under test."""

    def __init__(self, settings: dict):
        self.settings = settings
        self.file = Path(settings["file"])
        self.incidents: list[dict] = []
        self._open = []
        self._box = None
        self._import_failure = None  # (exception type, message) once the import timed out or crashed

    def take_incidents(self) -> list[dict]:
        taken, self.incidents = self.incidents, []
        return taken

    def _incident(self, kind: str, message: str) -> None:
        self.incidents.append({"kind": kind, "message": one_line(message)})

    def sandbox(self):
        """The student's sandbox, shared by the workers and the child scripts of this run."""
        if self._box is None:
            from labkit.grader.limits import Place, Resources
            from labkit.grader.sandbox import Sandbox
            from labkit.testing import triton_env

            s = self.settings
            gpu = bool(s.get("triton")) and s.get("sandbox", True) and triton_env.cuda_available()
            self._box = Sandbox(self.file.parent, Resources(**s.get("resources", {})), gpu=gpu,
                                enabled=s.get("sandbox", True), hide=tuple(s.get("hide", ())),
                                references=s.get("references", {}), given=tuple(s.get("given", ())),
                                cgroups=Place(s["cgroups"]["version"], tuple(s["cgroups"]["folders"]))
                                if s.get("cgroups") else None)
        return self._box

    def lab_module(self, lab_dir: Path):
        from labkit.grader.standin import Submission, SubmissionCrashed, SubmissionTimeout

        if self._import_failure is not None:  # pytest sets the fixture up again for each test: fail fast
            kind, message = self._import_failure
            raise kind(message)
        s = self.settings
        try:
            submission = Submission(self.file, s["api"], self.sandbox(), triton=bool(s.get("triton")),
                                    call_timeout=float(s["call"]), import_timeout=float(s["imports"]),
                                    deadline=float(s["deadline"]), on_incident=self._incident,
                                    patches=tuple(s.get("patches", ())))
        except (SubmissionTimeout, SubmissionCrashed) as err:
            self._import_failure = (type(err), str(err))
            raise
        self._open.append(submission)
        return submission

    def run_child(self, script: Path, args: list[str], env: dict, timeout: float):
        """labkit.testing.child's runner under grading: the script runs in the student's sandbox."""
        box = self.sandbox()
        left = min(timeout, float(self.settings["deadline"]) - time.time())
        if left <= 0:
            self._incident("timeout", f"{script.name}: the lab's time limit was reached")
            return None, b"", b"the lab's time limit was reached"
        from labkit.grader.sandbox import memory_limit

        code, out, err, killed = box.run(["script", box.add_script(script), *args], timeout=left, env=env)
        if code is None:
            self._incident("timeout", f"{script.name} did not finish within {left:.0f} s")
        elif killed:  # never read from err, which the child writes
            self._incident("crashed", f"{script.name}: {memory_limit(box.resources)}")
        return code, out, err

    def pytest_collection_modifyitems(self, config, items):
        """Tests marked ``ungraded`` check the course's own given code, or subclass the submission's
        class (which would run its code on this side): they say nothing of a submission that the
        grader can check safely, so they are left out of every student's total alike."""
        ungraded = [item for item in items if item.get_closest_marker("ungraded")]
        if ungraded:
            config.hook.pytest_deselected(items=ungraded)
            items[:] = [item for item in items if not item.get_closest_marker("ungraded")]

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        """A skip in a test's body counts only where the machine decided it (``seam.skip_here``): any
        other may rest on what the submission sent (a child's "not run"), so it counts as not passed."""
        report = yield
        if report.when == "call" and report.skipped:
            from labkit.testing import seam

            if call.excinfo is None or not call.excinfo.errisinstance(seam._machine_skip()):
                reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
                report.outcome = "failed"
                if hasattr(report, "wasxfail"):
                    del report.wasxfail
                report.longrepr = (f"skipped in the test's body ({one_line(reason, 200)}): under labs grade a skip "
                                   "counts only where the machine decided it, so this test counts as not passed")
        return report

    def pytest_unconfigure(self):
        for submission in self._open:
            submission.close()
        if self._box is not None:
            self._box.close()


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    settings = os.environ.get("LABS_GRADING")
    if settings:
        # This process holds the tests' expected answers and decodes what a submission sends: should it
        # crash, it dumps no core (where the host's core_pattern would take its memory, or into the
        # working folder), whatever core limit the grader was started with.
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        grader = _Grader(json.loads(settings))
        for procs in grader.settings.get("trusted_cgroup", []):  # bounds what this process may hold
            Path(procs).write_text(str(os.getpid()))
        config.pluginmanager.register(grader, "labs_grader")
        from labkit.testing import seam

        seam.grader = grader
