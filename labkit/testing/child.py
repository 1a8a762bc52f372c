"""A test's own child process that runs the implementation under test and sends back data only.

Some checks need a process of their own (labs 02-04, 04-03 and 04-06 reserve a 4 GiB cache that
must not live in the test process, nor cross the grader's pipe). The child is a real file of the
lab folder, with a private name so that ``LAB_IMPL`` never lists it (``_big_cache_child.py``)::

    from labkit.testing import child

    lab = child.implementation()       # the implementation under test
    out = lab.paged_decode(...)
    child.send(out.numpy())            # one numpy array: data, never a verdict

and the test runs it, then computes its own expectation and compares::

    out = child.run(Path(__file__).with_name("_big_cache_child.py"))
    inputs = child.script_module(Path(__file__).with_name("_big_cache_child.py")).inputs(torch)

The labs' checks of a KV cache of more than 2**31 elements (02-04, 04-03, 04-06) share
:func:`kv_cache_past_2_31`: the child builds the big cache where the kernels run and places
the blocks that its ``inputs()`` drew in the top blocks; the test rebuilds the same small blocks
with ``inputs()`` and computes the float64 expectation from them. Nothing here computes an answer.

Normally the child is a plain subprocess and ``LAB_IMPL`` is passed on; under ``labs grade`` the
same script runs inside the student's sandbox, with the student's file as the implementation
(:mod:`labkit.testing.seam`). The array comes back through the child's stdout as ``.npy`` bytes,
read with ``allow_pickle=False``; what the child prints goes to stderr.

At import only the standard library is needed: this file is staged into the grading sandbox.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from labkit.testing import seam

SKIP_STATUS = 77  # the child's exit status for "cannot run here" (honoured outside labs grade only)
_channel: int | None = None  # in the child: the original stdout, kept for send()


class ChildFailed(AssertionError):
    """The child crashed, timed out, or sent no array: the test fails with this message."""


# --------------------------------------------------------------------------- the test's side


def run(script: Path | str, *args, timeout: float = 300.0, env: dict | None = None, failed: str = ""):
    """Run ``script`` (a file of the lab folder) with ``args``; the numpy array it sent.

    NotImplementedError when the implementation raised it (a starter); pytest's skip when the
    child exited with SKIP_STATUS outside ``labs grade`` (under it, student code ran in that
    process, so a skip is not believed); ChildFailed for anything else that is not an array, its
    message ``failed`` (what the test says went wrong, and what to look at) and then the child's."""
    import numpy as np

    script = Path(script).resolve()
    extra = {str(k): str(v) for k, v in (env or {}).items()}
    graded = seam.grader is not None
    runner = seam.grader.run_child if graded else _run_plain
    code, out, err = runner(script, [str(a) for a in args], extra, timeout)
    text = err.decode("utf-8", "replace").strip()
    last = text.splitlines()[-1] if text else ""
    if code == SKIP_STATUS and not graded:
        import pytest

        pytest.skip(last)
    if "NotImplementedError" in last:  # the child's traceback ends "NotImplementedError: <its message>"
        raise NotImplementedError(last.split("NotImplementedError: ", 1)[-1])
    lead = f"{failed}\n" if failed else ""  # the test's account first, then the child's
    if code != 0:
        what = "timed out" if code is None else f"exited with status {code}"
        raise ChildFailed(f"{lead}the child process {script.name} {what}:\n{text[-2000:]}")
    try:
        return np.load(io.BytesIO(out), allow_pickle=False)
    except Exception as err:  # not an .npy: whatever the child printed is no answer
        raise ChildFailed(f"{lead}the child process {script.name} sent no array "
                          f"({type(err).__name__}: {err})") from None


def script_module(script: Path | str):
    """In the test: the child script loaded as a module (its constants and ``inputs()``), not run."""
    import importlib.util

    script = Path(script).resolve()
    name = f"_child_{script.parent.name}_{script.stem}".replace("-", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses of the script look their module up
    spec.loader.exec_module(module)
    return module


def _run_plain(script: Path, args: list[str], env: dict, timeout: float):
    from labkit.testing.loader import impl_name

    root = str(Path(__file__).resolve().parents[2])
    full_env = {**os.environ, "LAB_IMPL": impl_name(), **env}
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    try:
        done = subprocess.run([sys.executable, str(script), *args], capture_output=True, timeout=timeout,
                              env=full_env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as err:
        return None, b"", err.stderr or b""
    return done.returncode, done.stdout, done.stderr


# --------------------------------------------------------------------------- the child's side


def implementation():
    """In the child: the implementation under test (``LAB_IMPL`` of the script's lab folder, or
    under ``labs grade`` the student's file). From here on, prints go to stderr."""
    _claim_stdout()
    if seam.grader is not None:  # in the grading sandbox
        return seam.grader.lab_module(None)
    from labkit.testing.loader import lab_dir_of, load_impl

    return load_impl(lab_dir_of(sys.argv[0]))


def send(array) -> None:
    """In the child: send ``array`` (a numpy array) to the test, as ``.npy`` bytes."""
    import numpy as np

    _claim_stdout()
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    view = memoryview(buf.getvalue())
    while view:
        view = view[os.write(_channel, view) :]


def skip(reason: str) -> None:
    """In the child: this check cannot run here (exit with SKIP_STATUS, the reason on stderr)."""
    print(reason, file=sys.stderr)
    sys.exit(SKIP_STATUS)


def kv_cache_past_2_31(torch, k_blocks, v_blocks, block_tables, *, device: str, poison: float):
    """In the child: the blocks ``k_blocks``, ``v_blocks`` ``[n, block_size, num_kv_heads, head_dim]``
    (CPU tensors) placed in the top blocks of a key cache and a value cache of more than 2**31
    elements each, on ``device``. Returns ``(k_cache, v_cache, block_tables)``, the tables (entries
    0..n-1, indices into the given blocks) rewritten to the big caches' block ids.

    Block ids start at ``ceil(2**31 / elements per block)``: every id in use times the block stride
    is at least 2**31, so an offset computed in int32 wraps around (to another block, or far outside
    the cache). The ids are shuffled. K and V are two views of one reservation, ``n`` blocks apart:
    their values differ, yet the process reserves one tensor of 2**31 elements (4 GiB of float16),
    not two (the grading sandbox allows 8 GiB of address space on the CPU). On a GPU the whole reservation is first
    filled with ``poison``, so a read of any slot not in use is loud; on the CPU only the blocks in
    use are written, so the operating system commits just their pages (the rest reads as zeros).
    When the memory cannot be reserved, the child exits through :func:`skip`.
    """
    n, block_size, num_kv_heads, head_dim = k_blocks.shape
    first = -(-(2**31) // (block_size * num_kv_heads * head_dim))
    num_blocks = first + n  # each cache's blocks: 0 .. num_blocks - 1, the used ones at the top
    ids = first + torch.randperm(n, generator=torch.Generator().manual_seed(2**31 - 1))
    shape = (num_blocks + n, block_size, num_kv_heads, head_dim)
    try:
        if device == "cpu":
            storage = torch.empty(shape, dtype=k_blocks.dtype)
        else:
            storage = torch.full(shape, poison, dtype=k_blocks.dtype, device=device)
    except (RuntimeError, MemoryError) as err:  # torch.cuda.OutOfMemoryError is a RuntimeError
        skip(f"cannot reserve a cache of more than 2**31 elements on {device}: {err}")
    k_cache, v_cache = storage[:num_blocks], storage[n:]  # v_cache block b is storage block b + n
    k_cache[ids.to(device)] = k_blocks.to(device)
    v_cache[ids.to(device)] = v_blocks.to(device)
    big_tables = ids.to(block_tables.dtype)[block_tables.long()]
    return k_cache, v_cache, big_tables.to(device)


def _claim_stdout() -> None:
    """Keep the real stdout for send(); point file descriptor 1 (print) at stderr."""
    global _channel
    if _channel is None:
        sys.stdout.flush()
        _channel = os.dup(1)
        os.dup2(2, 1)
