"""The hostile class (tests/fixtures/hostile), graded by ``labs grade`` as an instructor would.

Every attacker must get what it deserves (no test passed; the status its attack earns), every
honest student ``ok``; afterwards nothing of the repository or the Python environment has
changed, no process an attacker started is alive, and the report still reads as written. A
maintainer check (``pytest -m maintainer``; it takes minutes), needs bubblewrap.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import site
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from labkit.course import registry
from labkit.grader import report, sandbox

pytestmark = [pytest.mark.maintainer,
              pytest.mark.skipif(sandbox.bwrap() is None, reason=sandbox.INSTALL)]

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"
sys.path.insert(0, str(HOSTILE.parent))
import make_hostile  # noqa: E402

LABS = ["02-06", "04-04", "02-04"]
# (student, lab) -> the statuses its attack may earn; every attacker must pass no test at all.
EXPECTED = {
    ("a00-honest", "02-06"): {"ok"},
    ("a00-honest", "04-04"): {"ok"},
    ("a01-daemon", "02-06"): {"failed", "crashed"},  # it kills its own worker (a labkit process)
    ("a02-copy-relative", "02-06"): {"failed"},
    ("a03-copy-walk", "04-04"): {"failed"},
    ("a04-copy-sysmodules", "02-06"): {"failed"},
    ("a05-copy-registry", "04-04"): {"failed"},
    ("a06-copy-classmate", "02-06"): {"failed"},
    ("a07-reference-helpers", "02-06"): {"failed"},
    ("a08-forge-results", "04-04"): {"failed"},
    ("a09-persist", "04-04"): {"failed"},
    ("a10-pipe-bomb", "02-06"): {"crashed"},
    ("a11-decode-bomb", "04-04"): {"crashed"},
    ("a12-ready-forger", "04-04"): {"failed", "crashed"},
    ("a13-in-place", "02-06"): {"failed"},
    ("a14-bomber", "04-04"): {"failed", "crashed"},
    ("a15-network", "02-06"): {"failed"},
    ("a16-report-injector", "04-04"): {"failed"},
    ("a17-triton-snoop", "02-04"): {"failed"},
    ("zz-honest", "02-06"): {"ok"},
    ("zz-honest", "04-04"): {"ok"},
}


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


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    stale = make_hostile.stale_files()
    assert not stale, f"out of date (run python tests/fixtures/make_hostile.py): {stale}"
    work = tmp_path_factory.mktemp("hostile")
    shutil.copytree(HOSTILE, work / "class", ignore=shutil.ignore_patterns("README.md", "ruff.toml", "__pycache__"))
    out = work / "report.json"
    server = _serve_solution()
    with socket.create_connection(server.server_address, timeout=5):
        pass  # the server is up: an attacker that reaches the host's loopback would get the solution
    repo_before, env_before = _tree_hashes(registry.ROOT), _environment_state()
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "labkit.cli", "grade", str(work / "class"), "--labs", *LABS, "--out", str(out),
         "--call-timeout", "10", "--lab-timeout", "150", "--jobs", "2"],
        capture_output=True, text=True, cwd=registry.ROOT, timeout=3600,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"})
    seconds = time.monotonic() - start
    server.shutdown()
    written = out.read_bytes() if out.exists() else b""
    time.sleep(5)  # a surviving daemon would be busy rewriting reports and killing graders by now
    return {
        "run": run, "seconds": seconds, "report": out, "written": written,
        "verdicts": {(r["student"], r["lab"]): r for r in json.loads(written)["results"]} if written else {},
        "warnings": json.loads(written)["warnings"] if written else [],
        "repo_changed": _changed(repo_before, _tree_hashes(registry.ROOT)),
        "env_changed": _changed(env_before, _environment_state()),
        "alive": _marked_processes(),
    }


def _changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def test_the_class_is_graded_and_reported(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert graded["written"], "no report"
    assert graded["warnings"] == []
    print(f"graded the hostile class in {graded['seconds']:.0f} s")


@pytest.mark.parametrize("key", list(EXPECTED), ids=lambda key: f"{key[0]}-{key[1]}")
def test_every_student_gets_what_they_deserve(graded, key):
    verdict = graded["verdicts"].get(key)
    assert verdict is not None, f"{key} is not in the report"
    assert verdict["status"] in EXPECTED[key], verdict
    if EXPECTED[key] == {"ok"}:
        assert verdict["passed"] == verdict["total"] > 0, verdict
    else:
        assert verdict["passed"] == 0, f"the attack earned passes: {verdict}"


def test_nothing_of_the_repository_or_the_environment_changed(graded):
    assert graded["repo_changed"] == [], "files of the repository changed while the hostile class was graded"
    assert graded["env_changed"] == [], "files of the Python environment changed"


def test_no_process_an_attacker_started_is_alive(graded):
    assert graded["alive"] == []


def test_the_report_is_intact(graded):
    assert graded["report"].read_bytes() == graded["written"], "the report changed after labs grade exited"
    rows = list(graded["verdicts"].values())
    text = graded["written"].decode()
    assert "\x1b" not in text and "\x07" not in text
    markdown = report.render(rows, ".md")
    assert "<script>" not in markdown and "<img" not in markdown and "[ok](http" not in markdown
    injected = graded["verdicts"][("a16-report-injector", "04-04")]
    assert "HYPERLINK" in injected["first_failure"], "the injector's message is in the report, as data"
