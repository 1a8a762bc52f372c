"""A stand-in for ``labkit.testing.child`` until that module is in this checkout (same names, same use).

A test that needs processes of its own runs a real script of the lab folder as a child; the child
loads the implementation under test, computes, and sends back one numpy array, data only. The test
computes its own expectation and compares. Here: the test runs ``_ranks.py``, which starts the ranks.

    lab = child.implementation()    # in the child: the implementation under test (LAB_IMPL)
    child.send(array)               # in the child: one array, as .npy bytes on the real stdout
    array = child.run(script, *args, timeout=...)   # in the test

What the child prints goes to stderr. ``run`` raises NotImplementedError when the child's last line
names one (a starter), ``ChildFailed`` for any other failure, and skips on ``SKIP_STATUS``.
``labkit.testing.child`` adds what ``labs grade`` needs (the child runs in the student's sandbox);
``_ranks.py`` and ``test_lab.py`` use it as soon as it exists.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

SKIP_STATUS = 77  # the child's exit status for "cannot run here"
_channel: int | None = None  # in the child: the original stdout, kept for send()


class ChildFailed(AssertionError):
    """The child crashed, timed out, or sent no array: the test fails with this message."""


def run(script, *args, timeout: float = 300.0, env: dict | None = None):
    """Run ``script`` with ``args`` in a fresh interpreter; the numpy array it sent."""
    import numpy as np

    script = Path(script).resolve()
    root = str(script.parents[3])  # the repository: labkit imports in the child as it does here
    full_env = {**os.environ, **{str(k): str(v) for k, v in (env or {}).items()}}
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    try:
        done = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True,
                              timeout=timeout, env=full_env, stdin=subprocess.DEVNULL)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:  # subprocess.run has killed the child
        code, out, err = None, b"", expired.stderr or b""
    text = err.decode("utf-8", "replace").strip()
    last = text.splitlines()[-1] if text else ""
    if code == SKIP_STATUS:
        import pytest

        pytest.skip(last)
    if "NotImplementedError" in last:
        raise NotImplementedError(last)
    if code != 0:
        what = f"timed out after {timeout:.0f} s" if code is None else f"exited with status {code}"
        raise ChildFailed(f"the child process {script.name} {what}:\n{text[-3000:]}")
    try:
        return np.load(io.BytesIO(out), allow_pickle=False)
    except Exception as err:  # not an .npy: whatever the child printed is no answer
        raise ChildFailed(f"the child process {script.name} sent no array ({type(err).__name__}: {err})") from None


def implementation():
    """In the child: the implementation under test (``LAB_IMPL`` of the script's lab folder)."""
    _claim_stdout()
    from labkit.testing.loader import lab_dir_of, load_impl

    return load_impl(lab_dir_of(sys.argv[0]))


def send(array) -> None:
    """In the child: send ``array`` to the test, as ``.npy`` bytes on the original stdout."""
    import numpy as np

    _claim_stdout()
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    view = memoryview(buf.getvalue())
    while view:
        view = view[os.write(_channel, view):]


def skip(reason: str) -> None:
    """In the child: this check cannot run here."""
    print(reason, file=sys.stderr)
    sys.exit(SKIP_STATUS)


def _claim_stdout() -> None:
    """Keep the real stdout for send(); point file descriptor 1 (print) at stderr."""
    global _channel
    if _channel is None:
        sys.stdout.flush()
        _channel = os.dup(1)
        os.dup2(2, 1)
