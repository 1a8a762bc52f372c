"""Run one lab's tests in a pytest subprocess and read back what happened, test by test.

``labs check``, ``labs bugs``, ``labs grade`` and the bug-gallery check all go
through :func:`run_lab_tests`: a fresh process per run, so that an implementation
cannot leak into the next one (a new interpreter, or for the bug gallery a fork of a
warm one: :mod:`labkit.course.warm`). Results come back through
:mod:`labkit.course.pytest_plugin`, which writes them into a pipe whose write end only
that pytest process holds (its number is in ``LABS_RESULTS_FD``; the plugin keeps it
from every process pytest starts). No file name is handed out, so nothing else can
replace or append to the results.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from labkit.course.registry import ROOT
from labkit.course.warm import WarmPool

# Set on Ctrl-C: every run still going (in other threads) is stopped.
STOP = threading.Event()


def run_in_parallel(fn: Callable, items: Iterable, jobs: int = 2) -> list:
    """``[fn(item) for item in items]``, ``jobs`` at a time, in order. Ctrl-C stops every test
    run in flight (they run in their own sessions, where the terminal's signal does not reach)."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        try:
            return list(pool.map(fn, items))
        except KeyboardInterrupt:
            STOP.set()
            raise


@dataclass
class TestResult:
    nodeid: str
    name: str  # the test function's name, with its parameters: "test_x[8-3]"
    outcome: str  # "passed", "failed", "skipped"
    message: str = ""  # one line: why it failed or skipped
    incidents: list[dict] = field(default_factory=list)  # submission timeouts/crashes during it
    when: str = "call"  # "setup" when it never ran: a fixture failed (e.g. the implementation did not import)
    detail: str = ""  # the failure's whole message, lines kept (capped): what ``labs check`` shows

    @property
    def function(self) -> str:
        """The test function's name without parameters: "test_x"."""
        return self.name.split("[", 1)[0]


@dataclass
class LabRun:
    tests: list[TestResult] = field(default_factory=list)
    collected: int | None = None
    errors: list[str] = field(default_factory=list)  # collection errors, usage errors
    returncode: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    output: str = ""  # the tail of pytest's own output

    @property
    def passed(self) -> int:
        return sum(t.outcome == "passed" for t in self.tests)

    @property
    def total(self) -> int:
        """Tests that ran (skipped ones do not count)."""
        return sum(t.outcome != "skipped" for t in self.tests)

    @property
    def failures(self) -> list[TestResult]:
        return [t for t in self.tests if t.outcome == "failed"]

    @property
    def all_passed(self) -> bool:
        return not self.errors and not self.timed_out and self.total > 0 and self.passed == self.total

    def first_problem(self) -> str:
        """One line: the first failure, or why nothing ran."""
        if self.failures:
            first = self.failures[0]
            return f"{first.name}: {first.message}"
        if self.errors:
            return self.errors[0]
        if self.timed_out:
            return "the test run was stopped at its time limit"
        if self.total == 0:
            return "no test ran" + (f" ({self.output_line()})" if self.output_line() else "")
        return ""

    def output_line(self) -> str:
        lines = [s.strip() for s in self.output.splitlines() if s.strip() and not set(s.strip()) <= set("=-_ ")]
        errors = [s for s in lines if s.startswith(("E ", "ERROR", "error"))]
        return (errors or lines or [""])[-1][:300]


def clean_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LABS_", "LAB_IMPL"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    # The labs need no third-party pytest plugin; not loading them (hypothesis...) saves seconds per run.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.update(extra or {})
    return env


def run_lab_tests(
    lab_dir: Path,
    *,
    impl: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    on_progress: Callable[[int, int | None], None] | None = None,
    pytest_args: tuple[str, ...] = (),
    cwd: Path = ROOT,
    warm: WarmPool | None = None,
) -> LabRun:
    """Run ``pytest <lab_dir>`` with ``LAB_IMPL=impl`` in a subprocess.

    ``timeout`` (seconds from the run's start: a warm one's fork, not its wait for a server) kills the
    run; what finished by then is kept; ``seconds`` of the result is timed from there too.
    ``on_progress(done, total)`` is called as tests finish.
    ``warm``: fork the run from a server of that pool (:mod:`labkit.course.warm`) instead of starting
    an interpreter, when the pool runs in ``cwd``.
    """
    extra = dict(env or {})
    if impl is not None:
        extra["LAB_IMPL"] = impl
    run = LabRun()
    read_fd, write_fd, token, inherit = _results_pipe()
    extra["LABS_RESULTS_FD"] = token
    events = _PipeReader(read_fd)
    with tempfile.TemporaryDirectory(prefix="labs-run-") as tmp:
        args = [str(lab_dir), "-p", "labkit.course.pytest_plugin",
                "-p", "no:cacheprovider", "-q", "--no-header", "-rN", "--tb=line", *pytest_args]
        with open(Path(tmp) / "output.log", "wb") as log:
            try:
                proc = None
                if warm is not None and warm.cwd == Path(cwd):
                    try:
                        proc = warm.popen(args, clean_env(extra), write_fd, log.fileno())
                    except (OSError, RuntimeError):  # a warm server that died: this run starts cold
                        proc = None
                if proc is None:
                    proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd, env=clean_env(extra),
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, **inherit)
            finally:
                os.close(write_fd)  # pytest holds the only write end now: end of file when it exits
            start = time.monotonic()  # not before: a warm run may have waited for its server to start
            try:
                while True:
                    try:
                        run.returncode = proc.wait(timeout=0.1)
                    except subprocess.TimeoutExpired:
                        pass
                    _parse_events(events.lines(), run)
                    if on_progress:
                        on_progress(len(run.tests), run.collected)
                    if run.returncode is not None:
                        break
                    if STOP.is_set() or timeout is not None and time.monotonic() - start > timeout:
                        run.timed_out = True
                        _kill(proc)
                        run.returncode = proc.wait()
                        break
            except KeyboardInterrupt:  # pytest runs in its own session: Ctrl-C does not reach it
                _kill(proc)
                raise
            finally:
                _parse_events(events.lines(final=True), run)
        with open(Path(tmp) / "output.log", "rb") as log:  # its tail only: a test may print what a student sent
            log.seek(max(0, log.seek(0, os.SEEK_END) - 16_000))
            run.output = log.read().decode(errors="replace")[-4000:]
    run.seconds = time.monotonic() - start
    if run.returncode not in (0, 1, 5) and not run.timed_out and not run.errors:
        run.errors.append(run.output_line() or f"pytest exited with code {run.returncode}")
    return run


def _kill(proc) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)  # pytest and anything it started
        else:  # Windows
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _results_pipe():
    """A pipe for the results: (read end, write end, what the child is told, Popen arguments that
    hand the write end to that child alone)."""
    read_fd, write_fd = os.pipe()
    if os.name == "nt":  # a handle, inherited through the handle list only
        import msvcrt

        handle = msvcrt.get_osfhandle(write_fd)
        os.set_handle_inheritable(handle, True)
        info = subprocess.STARTUPINFO(lpAttributeList={"handle_list": [handle]})
        return read_fd, write_fd, str(handle), {"startupinfo": info, "close_fds": True}
    return read_fd, write_fd, str(write_fd), {"pass_fds": (write_fd,)}


class _PipeReader:
    """Reads the results pipe in a thread (so pytest never blocks on a full pipe); hands out whole lines."""

    def __init__(self, fd: int):
        self._chunks: queue.Queue = queue.Queue()
        self._pending = b""
        self._thread = threading.Thread(target=self._read, args=(fd,), daemon=True)
        self._thread.start()

    def _read(self, fd: int) -> None:
        with open(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                self._chunks.put(chunk)

    def lines(self, final: bool = False) -> list[bytes]:
        """The complete lines read so far; ``final``: wait (a little) for the end of the pipe first."""
        if final:
            self._thread.join(timeout=10)
        while not self._chunks.empty():
            self._pending += self._chunks.get()
        end = self._pending.rfind(b"\n") + 1
        done, self._pending = self._pending[:end], self._pending[end:]
        return done.splitlines()


def _parse_events(lines: list[bytes], run: LabRun) -> None:
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("event")
        if kind == "collected":
            run.collected = int(event.get("n", 0))
        elif kind == "error":
            run.errors.append(f"{event.get('nodeid') or 'collection'}: {event.get('message', '')}")
        elif kind == "test":
            run.tests.append(TestResult(event["nodeid"], event["name"], event["outcome"], event.get("message", ""),
                                        event.get("incidents", []), event.get("when", "call"),
                                        event.get("detail", "")))
        elif kind == "teardown-error":
            for t in run.tests:
                if t.nodeid == event.get("nodeid") and t.outcome == "passed":
                    t.outcome, t.message = "failed", f"teardown: {event.get('message', '')}"
