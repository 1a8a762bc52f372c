"""The hostile class (tests/fixtures/make_hostile.py), graded by ``labs grade`` as an instructor would.

Every attacker must get what it deserves (the statuses its attack may earn; no test passed for an
escape attempt, the control bug's count for an attack on the object protocol), every honest student
``ok``, every row the lab's full count; afterwards nothing of the repository or the Python environment
has changed, no process an attacker started is alive, the report still reads as written, and the
grader's own process never held more than MAX_GRADER_RSS. Graded apart: the memory hogs, under
``--memory-limit 1`` (each ``crashed`` with the reason "memory limit"); lab 04-07's skip forger, under
``--no-sandbox`` (its forged "not run" reaches the test, which must fail, not skip); two folders that
name one student (the class is refused before anyone is graded, the last report kept). A maintainer
check (``pytest -m maintainer``; it takes minutes), needs bubblewrap.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
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
from labkit.grader import grade, limits, report, sandbox

pytestmark = [pytest.mark.maintainer,
              pytest.mark.skipif(sandbox.bwrap() is None, reason=sandbox.INSTALL)]

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import make_hostile  # noqa: E402

LABS = ["02-06", "04-04", "02-04", "02-01", "02-05"]
STUDENTS = {(grade.escape(s.name), s.lab): s for s in make_hostile.CLASS_LIST}
HOGS = {(s.name, s.lab): s for s in make_hostile.MEMORY_LIST}
FORGERS = {(s.name, s.lab): s for s in make_hostile.SKIP_LIST}
# The grader's own process (not its pytest runs, not the sandboxes): 700 sparse files of 2 MB once took
# it to 1.4 GiB, read into memory before any sandbox existed. What it holds now does not grow with them.
MAX_GRADER_RSS = 256 << 20  # it peaks at some 45 MiB
# Run in place of `python -m labkit.cli`: the same command, then the grader process's own peak memory
# (VmHWM: getrusage's ru_maxrss would carry over the peak of this test process, which started it).
MEASURED = ("import re, sys\nfrom labkit.cli import main\ncode = main(sys.argv[1:])\n"
            "peak = re.search(r'VmHWM:\\s*(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
            "print(f'grader peak RSS: {peak} KiB', file=sys.stderr)\nsys.exit(code)\n")


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


def _plant_solution_key() -> None:
    """The keyring attacker's target: 02-06's solution in a key of this process's session keyring (which
    ``labs grade``, started from here, inherits), where a login keeps Kerberos tickets."""
    import ctypes

    add_key = {"x86_64": 248, "aarch64": 217}.get(os.uname().machine)
    body = (registry.get("02-06").path / "solution.py").read_bytes()
    if add_key is not None:  # else the attack finds nothing either way
        ctypes.CDLL(None, use_errno=True).syscall(ctypes.c_long(add_key), b"user", make_hostile.KEY_NAME.encode(),
                                                  body, ctypes.c_size_t(len(body)), ctypes.c_long(-3))


def _grade(folder: Path, out: Path, *flags: str, jobs: int = 2) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", MEASURED, "grade", str(folder), "--out", str(out), "--call-timeout", "10",
         "--lab-timeout", "90", "--jobs", str(jobs), *flags],
        capture_output=True, text=True, cwd=registry.ROOT, timeout=3600,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"})


def _peak(run: subprocess.CompletedProcess) -> int | None:
    """The grader process's peak resident memory, in bytes, as MEASURED printed it (None: it did not)."""
    found = re.findall(r"grader peak RSS: (\d+) KiB", run.stderr)
    return int(found[-1]) << 10 if found else None


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
    _plant_solution_key()
    repo_before, env_before = _tree_hashes(registry.ROOT), _environment_state()
    start = time.monotonic()
    # Three at a time on CI's two cores: over a third of the class's time is spent by attackers that wait,
    # not compute (the slow walk and the lying tensors until the lab's time limit, a hanging repr until
    # the call's), and an honest student's slowest lab (02-01) takes some 35 s of the lab's 90.
    run = _grade(work / "class", out, "--labs", *LABS, jobs=3)
    seconds = time.monotonic() - start
    server.shutdown()
    written = out.read_bytes() if out.exists() else b""
    time.sleep(5)  # a surviving daemon would be busy rewriting reports and killing graders by now
    control = run_lab_tests(registry.get(make_hostile.CONTROL_BUG[0]).path, impl=f"bugs/{make_hostile.CONTROL_BUG[1]}")
    return {
        "run": run, "seconds": seconds, "report": out, "written": written, "verdicts": _verdicts(written),
        "peak": _peak(run),
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


@pytest.fixture(scope="module")
def forgers(tmp_path_factory):
    """Lab 04-07's skip forger and an honest student, graded without a sandbox."""
    work = tmp_path_factory.mktemp("forgers")
    make_hostile.write(work / "class", make_hostile.SKIP_LIST)
    run = _grade(work / "class", work / "report.json", "--labs", "04-07", "--no-sandbox", "--lab-timeout", "900")
    written = (work / "report.json").read_bytes() if (work / "report.json").exists() else b""
    return {"run": run, "verdicts": _verdicts(written)}


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
    tests = (registry.get(student.lab).path / "test_lab.py").read_text()
    assert all(f"def {name}(" in tests for name in student.forfeits), f"{student.forfeits}: not tests of {student.lab}"
    deserved = {"none": 0, "all": verdict["total"], "control": control.passed - len(student.forfeits)}[student.passed]
    assert verdict["passed"] == deserved and verdict["total"] > 0, \
        f"{student.what}: deserves {deserved} passed ({student.passed}), got {verdict}"
    if student.passed == "control":  # the control bug under the grader: pytest's own count
        assert verdict["total"] == control.total, (verdict, control.passed, control.total)
    honest = graded["verdicts"][make_hostile.HONEST, student.lab]
    assert verdict["total"] == honest["total"], f"{student.what}: the lab's full count, as the honest student's"


def test_the_graders_own_memory_does_not_grow_with_what_students_hand_in(graded):
    assert graded["peak"] is not None, graded["run"].stderr[-3000:]
    print(f"the grader's peak resident memory: {graded['peak'] / 2**20:.0f} MiB")
    assert graded["peak"] < MAX_GRADER_RSS, f"{graded['peak'] / 2**20:.0f} MiB"


@pytest.mark.parametrize("key", list(FORGERS), ids=lambda key: f"{key[0]}-{key[1]}")
def test_a_child_process_cannot_turn_tests_into_skips(forgers, key):
    """The forger's rank writes "not run" for every group before the launcher's answer: the tests of
    those groups fail, and the forger's total is the honest student's."""
    student, verdict = FORGERS[key], forgers["verdicts"].get(key)
    assert forgers["run"].returncode == 0, forgers["run"].stderr[-3000:]
    assert verdict is not None and verdict["status"] in student.statuses, verdict
    honest = forgers["verdicts"]["e00-honest", "04-07"]
    assert honest["status"] == "ok" and honest["passed"] == honest["total"] > 0, honest
    assert verdict["total"] == honest["total"], f"skips left the total: {verdict} against {honest}"
    assert verdict["passed"] == (honest["total"] if student.passed == "all" else 0), verdict


def test_two_folders_that_name_one_student_are_refused_and_the_last_report_kept(tmp_path):
    make_hostile.write(tmp_path / "class", make_hostile.TWINS_LIST)
    out = tmp_path / "report.csv"
    out.write_text("last week's report\n")
    run = subprocess.run([sys.executable, "-m", "labkit.cli", "grade", str(tmp_path / "class"), "--labs", "02-06",
                          "--out", str(out)], capture_output=True, text=True, cwd=registry.ROOT, timeout=600,
                         env={**os.environ, "COLUMNS": "300"})
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert "'n00-honest'" in run.stderr and "'n00-honest\\x07'" in run.stderr, run.stderr
    assert out.read_text() == "last week's report\n"


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
