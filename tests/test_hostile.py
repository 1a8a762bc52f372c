"""The hostile class (tests/fixtures/make_hostile.py), graded by ``labs grade`` as an instructor would.

Every attacker must get what it deserves (the statuses its attack may earn; no test passed for an
escape attempt, the control bug's count for an attack on the object protocol), every honest student
``ok``; afterwards nothing of the repository or the Python environment has changed, no process an
attacker started is alive, and the report still reads as written. The memory hogs are graded apart,
under ``--memory-limit 1``: each is ``crashed`` with the reason "memory limit". A maintainer check
(``pytest -m maintainer``; it takes minutes), needs bubblewrap.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import site
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from labkit.course import registry
from labkit.course.runner import run_lab_tests
from labkit.grader import limits, report, sandbox

pytestmark = [pytest.mark.maintainer,
              pytest.mark.skipif(sandbox.bwrap() is None, reason=sandbox.INSTALL)]

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import make_hostile  # noqa: E402

LABS = ["02-06", "04-04", "02-04", "02-01", "02-05"]
STUDENTS = {(s.name, s.lab): s for s in make_hostile.CLASS_LIST}
HOGS = {(s.name, s.lab): s for s in make_hostile.MEMORY_LIST}


def _tree_hashes(root: Path) -> dict[str, str]:
    """Content hashes of every file under ``root``, bytecode caches included (not git's files, not the
    linters' caches, which a maintainer's editor may refresh meanwhile)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts[:1]
            and not {".ruff_cache", ".pytest_cache"} & set(p.parts)}


def _environment_state() -> dict[str, tuple]:
    """(size, mtime) of every file of the Python environment's site-packages and prefix's lib."""
    state = {}
    for folder in {*site.getsitepackages(), site.getusersitepackages()}:
        for top, _, files in os.walk(folder):
            for name in files:
                path = os.path.join(top, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                state[path] = (st.st_size, st.st_mtime_ns)
    return state


def _marked_processes() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if make_hostile.MARKER.encode() in cmdline and pid != str(os.getpid()):
            found.append(f"{pid}: {cmdline[:200]!r}")
    return found


def _serve_solution() -> http.server.HTTPServer | None:
    """The network attacker's target: 02-06's solution, on the host's loopback."""
    body = (registry.get("02-06").path / "solution.py").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    for port in make_hostile.SERVED_PORTS:
        try:
            server = http.server.HTTPServer(("127.0.0.1", port), Handler)
        except OSError:
            continue
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server
    return None


def _grade(folder: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "labkit.cli", "grade", str(folder), "--out", str(out), "--call-timeout", "10",
         "--lab-timeout", "150", "--jobs", "2", *flags],
        capture_output=True, text=True, cwd=registry.ROOT, timeout=3600,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"})


def _verdicts(written: bytes) -> dict:
    return {(r["student"], r["lab"]): r for r in json.loads(written)["results"]} if written else {}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    work = tmp_path_factory.mktemp("hostile")
    make_hostile.write(work / "class")
    out = work / "report.json"
    server = _serve_solution()
    with socket.create_connection(server.server_address, timeout=5):
        pass  # the server is up: an attacker that reaches the host's loopback would get the solution
    repo_before, env_before = _tree_hashes(registry.ROOT), _environment_state()
    start = time.monotonic()
    run = _grade(work / "class", out, "--labs", *LABS)
    seconds = time.monotonic() - start
    server.shutdown()
    written = out.read_bytes() if out.exists() else b""
    time.sleep(5)  # a surviving daemon would be busy rewriting reports and killing graders by now
    control = run_lab_tests(registry.get(make_hostile.CONTROL_BUG[0]).path, impl=f"bugs/{make_hostile.CONTROL_BUG[1]}")
    return {
        "run": run, "seconds": seconds, "report": out, "written": written, "verdicts": _verdicts(written),
        "warnings": json.loads(written)["warnings"] if written else [],
        "header": json.loads(written)["header"] if written else {},
        "repo_changed": _changed(repo_before, _tree_hashes(registry.ROOT)),
        "env_changed": _changed(env_before, _environment_state()),
        "alive": _marked_processes(), "control": control,
    }


@pytest.fixture(scope="module")
def hogs(tmp_path_factory):
    """The memory hogs and an honest student, graded under --memory-limit 1 (GiB)."""
    place, why = limits.find()
    if place is None:
        pytest.skip(f"no cgroup can be made on this machine: {why}")
    work = tmp_path_factory.mktemp("hogs")
    make_hostile.write(work / "class", make_hostile.MEMORY_LIST)
    start = time.monotonic()
    run = _grade(work / "class", work / "report.json", "--labs", "02-06", "--memory-limit", "1")
    written = (work / "report.json").read_bytes() if (work / "report.json").exists() else b""
    return {"run": run, "seconds": time.monotonic() - start, "verdicts": _verdicts(written)}


def _changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def test_the_class_is_graded_and_reported(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert graded["written"], "no report"
    assert graded["warnings"] == []
    assert graded["header"]["waves"] == "02-06 04-04 02-04 02-01 | 02-05", graded["header"]
    print(f"graded the hostile class in {graded['seconds']:.0f} s")


@pytest.mark.parametrize("key", list(STUDENTS), ids=lambda key: f"{key[0]}-{key[1]}")
def test_every_student_gets_what_they_deserve(graded, key):
    student, verdict = STUDENTS[key], graded["verdicts"].get(key)
    assert verdict is not None, f"{key} is not in the report"
    assert verdict["status"] in student.statuses, verdict
    control = graded["control"]
    deserved = {"none": 0, "all": verdict["total"], "control": control.passed}[student.passed]
    assert verdict["passed"] == deserved and verdict["total"] > 0, \
        f"{student.what}: deserves {deserved} passed ({student.passed}), got {verdict}"
    if student.passed == "control":  # the control bug under the grader: pytest's own count
        assert verdict["total"] == control.total, (verdict, control.passed, control.total)


@pytest.mark.parametrize("key", list(HOGS), ids=lambda key: f"{key[0]}-{key[1]}")
def test_memory_is_capped_for_the_whole_sandbox(hogs, key):
    student, verdict = HOGS[key], hogs["verdicts"].get(key)
    assert hogs["run"].returncode == 0, hogs["run"].stderr[-3000:]
    assert verdict is not None, f"{key} is not in the report"
    assert verdict["status"] in student.statuses, verdict
    if student.passed == "all":
        assert verdict["passed"] == verdict["total"] > 0, verdict
    else:
        assert verdict["passed"] == 0 and "memory limit" in verdict["first_failure"], verdict


def test_nothing_of_the_repository_or_the_environment_changed(graded):
    assert graded["repo_changed"] == [], "files of the repository changed while the hostile class was graded"
    assert graded["env_changed"] == [], "files of the Python environment changed"


def test_no_process_an_attacker_started_is_alive(graded):
    assert graded["alive"] == []


def test_the_report_is_intact(graded):
    assert graded["report"].read_bytes() == graded["written"], "the report changed after labs grade exited"
    rows = [report.Verdict(**r) for r in graded["verdicts"].values()]
    text = graded["written"].decode()
    assert "\x1b" not in text and "\x07" not in text
    markdown = report.render(report.Report(rows), ".md")
    assert "<script>" not in markdown and "<img" not in markdown and "[ok](http" not in markdown
    injected = graded["verdicts"][("a16-report-injector", "04-04")]
    assert "HYPERLINK" in injected["first_failure"], "the injector's message is in the report, as data"
