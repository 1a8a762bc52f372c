"""Warm starts for many test runs: pytest, numpy and torch imported once, each run forked from there.

A pytest run of a lab spends most of its time, on a small machine, starting: the interpreter, pytest,
numpy and torch (which the root ``conftest.py`` imports to see whether there is a GPU). The bug
gallery's check starts hundreds of runs. A :class:`WarmPool` keeps a few servers, interpreters that
have imported those once; each run is a ``fork`` of one of them, so it begins with them imported
and is otherwise the fresh process :func:`labkit.course.runner.run_lab_tests` starts: its own
session and working folder, the environment it is given, its output into the run's log, the
results pipe's write end its only copy. Besides those, the server imports only what every run's
start imports and what does not depend on the run (pytest's own plugins, the course's helpers; Triton
only where no GPU can be seen: elsewhere it must be imported after the root ``conftest.py`` has
chosen its backend), and nothing of one run reaches the next: every run is forked from the same
untouched server.

Linux only (``fork`` after importing numpy and torch, which macOS's system libraries do not
survive; file descriptors passed over a Unix socket); elsewhere :func:`available` is False and the
runner starts a plain subprocess.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

# What every run imports anyway, before its first test (a pool for labs that use no torch: the first two).
PRELOAD = ("pytest", "numpy", "torch")
# And, in every server, what every run's start imports besides: pytest's own plugins (and what they
# import: pdb), the course's plugin, and what the root conftest.py and the labs' tests import from
# labkit. Half of an empty run's start (0.1 of 0.2 s on an idle machine). None of them reads the run's
# environment (LAB_IMPL...) or imports torch or Triton when imported.
PRELOAD_RUN = ("pdb", "labkit.course.pytest_plugin", "labkit.course.suite_record", "labkit.course.edition",
               "labkit.testing.loader", "labkit.testing.triton_env", "labkit.testing.checks", "labkit.testing.cases",
               "labkit.testing.contract", "labkit.testing.bench")
# With a CPU build of torch, where every run runs Triton through its interpreter: Triton, and the
# transformer the model labs build (whose import brings Triton in).
PRELOAD_INTERPRETED = ("triton", "triton.language", "transformers.models.llama.modeling_llama")


def available() -> bool:
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds")


class WarmPool:
    """``size`` servers, started in ``cwd`` with ``env`` (what only an interpreter's start reads, such
    as ``PYTHONPATH``, comes from here; a run's own environment replaces the rest). ``torch=False``
    (runs of labs that use no torch, :attr:`labkit.course.registry.Lab.uses_torch`): the servers do
    not import torch, Triton or transformers, seconds each on a small machine. Use as a context
    manager; :meth:`popen` starts a run on an idle server, waiting for one when all are busy."""

    def __init__(self, size: int, cwd: Path, env: dict[str, str], *, torch: bool = True):
        self.cwd = Path(cwd)
        self._idle: queue.Queue = queue.Queue()
        self._servers = [_Server(self.cwd, env, torch) for _ in range(max(1, size))]
        for server in self._servers:
            self._idle.put(server)

    def popen(self, pytest_args: list[str], env: dict[str, str], pass_fd: int, output: int) -> WarmRun:
        """A forked ``python -m pytest *pytest_args``: ``env`` is its whole environment, file descriptor
        ``pass_fd`` is handed over (``env["LABS_RESULTS_FD"]`` is set to its number there), its standard
        output and error go to ``output``."""
        server = self._idle.get()
        try:
            return server.start(pytest_args, env, pass_fd, output, lambda: self._idle.put(server))
        except BaseException:
            self._idle.put(server)
            raise

    def close(self) -> None:
        for server in self._servers:
            server.close()

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class WarmRun:
    """A forked run, as :func:`labkit.course.runner.run_lab_tests` uses a ``Popen``: ``pid`` (also its
    process group: it runs in its own session) and ``wait``."""

    def __init__(self, server: _Server, pid: int, release):
        self.pid = pid
        self.returncode: int | None = None
        self._server = server
        self._release = release

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            reply = self._server.reply(timeout)
            if reply is None:
                raise subprocess.TimeoutExpired("pytest", timeout)
            self.returncode = int(reply["returncode"])
            self._release()
        return self.returncode


class _Server:
    """One warm interpreter (``python -m labkit.course.warm``) and the socket to it."""

    def __init__(self, cwd: Path, env: dict[str, str], torch: bool):
        self._sock, theirs = socket.socketpair()
        light = [] if torch else ["--no-torch"]
        with theirs:
            self._proc = subprocess.Popen([sys.executable, "-m", "labkit.course.warm", str(theirs.fileno()), *light],
                                          cwd=cwd, env=env, stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),))
        self._pending = b""

    def start(self, pytest_args, env, pass_fd, output, release) -> WarmRun:
        request = json.dumps({"args": list(pytest_args), "env": env}).encode()
        # The length first, with the descriptors; then the request (a stream has no message boundaries).
        socket.send_fds(self._sock, [len(request).to_bytes(8, "big")], [pass_fd, output])
        self._sock.sendall(request)
        reply = self.reply(timeout=None)
        if reply is None or "pid" not in reply:
            raise RuntimeError(f"the warm test server did not start the run: {reply}")
        return WarmRun(self, int(reply["pid"]), release)

    def reply(self, timeout: float | None) -> dict | None:
        """The server's next line, or None when none came within ``timeout`` seconds."""
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self._sock], [], [], timeout)
            if not ready:
                return None
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError(f"the warm test server exited (code {self._proc.poll()})")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        self._sock.close()  # the server reads end of file and exits
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


# --------------------------------------------------------------------------- the server


def serve(sock: socket.socket, with_torch: bool = True) -> None:
    """Import what every run needs, then fork one run per request, one at a time. The run sends its
    pid when it has started; the server sends its return code (``-signal`` when killed) when it ends."""
    _import(PRELOAD if with_torch else PRELOAD[:2])
    torch = sys.modules.get("torch")
    if torch is not None and torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        # No run can see a GPU: the root conftest.py would turn Triton's interpreter on before anything
        # imports Triton (labkit.triton_env.select_backend). The server does it first, for every run.
        os.environ[_INTERPRET] = "1"
        _import(PRELOAD_INTERPRETED)
    _import([f"_pytest.{name}" for name in _pytest_plugins()] + list(PRELOAD_RUN))
    # What is imported lives as long as the process: the garbage collector of each run need not walk
    # it (pytest collects five times at its end), and pages not touched stay shared with the server.
    gc.freeze()
    while True:
        try:
            header, fds, _, _ = socket.recv_fds(sock, 8, 2)
            header += _read_exactly(sock, 8 - len(header)) if header else b""
            request = _read_exactly(sock, int.from_bytes(header, "big")) if header else b""
        except OSError:
            return
        if not request or len(fds) != 2:
            return  # the runner closed its end (or broke the protocol): nothing more to serve
        pid = os.fork()
        if pid == 0:
            _leave(_run(sock, json.loads(request), *fds))
        for fd in fds:
            os.close(fd)  # the run holds the only copies now
        _, status = os.waitpid(pid, 0)
        sock.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")


_INTERPRET = "TRITON_INTERPRET"


def _import(names) -> None:
    for name in names:
        try:
            __import__(name)
        except ImportError:  # not installed here: the runs that need it skip, or say so
            pass


def _pytest_plugins() -> tuple[str, ...]:
    """The names of pytest's built-in plugins, which every run loads (``_pytest.<name>``)."""
    try:
        from _pytest.config import default_plugins
    except ImportError:  # another pytest's layout: each run imports them itself
        return ()
    return tuple(default_plugins)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("the runner closed the socket mid-request")
        data += chunk
    return data


def _run(sock: socket.socket, request: dict, pass_fd: int, output: int) -> int:
    """In the forked child: become the fresh ``python -m pytest`` the runner would have started, run
    it, and return its exit status."""
    try:
        os.setsid()  # its own session and process group, as start_new_session=True gives
        # The pid goes to the runner once the group exists, so that a kill of the group reaches it.
        sock.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        sock.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(null)
        os.close(output)
        os.set_inheritable(pass_fd, True)
        interpret = os.environ.get(_INTERPRET)  # the server's choice, if it imported Triton
        os.environ.clear()
        os.environ.update(request["env"], LABS_RESULTS_FD=str(pass_fd))
        if interpret is not None:
            os.environ[_INTERPRET] = interpret
        if "numpy" in sys.modules:  # a fresh process seeds numpy's global generator from the OS
            sys.modules["numpy"].random.seed()
        import pytest

        sys.argv = ["pytest", *request["args"]]
        return int(pytest.console_main())
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001 - whatever happens, the child never goes back to serving
        import traceback

        traceback.print_exc()
        return 1


def _leave(code: int) -> None:
    """End the run as the interpreter's own exit would, less its teardown of every module (most of
    a second with torch imported, and nothing a run's results depend on): the threads that are not
    daemons joined, the atexit handlers run (multiprocessing ends its daemon processes there), the
    output flushed."""
    try:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])), with_torch="--no-torch" not in sys.argv[2:])
    os._exit(0)  # nothing to tear down (and Triton's bindings complain at a full teardown)
