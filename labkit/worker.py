"""The worker process of ``labs grade``: imports one student's file and runs calls on it.

Started by :class:`labkit.remote.Submission` as
``python -m labkit.worker <read fd> <write fd> <file> <numpy|triton>`` in a
scratch directory. It answers ``("ready", names)`` or ``("error", ...)`` after
the import, then one reply per request: ``("ok", result, in_place_updates)``
or ``("error", "exception", builtin_base, qualname, message)``.

Nothing decided here is trusted: the grade is decided by the instructor's tests
in the process that started this one.
"""

from __future__ import annotations

import builtins
import importlib.util
import inspect
import os
import sys
import threading
import time
from pathlib import Path


def _die_with_parent() -> None:
    """Exit when the process that started us is gone, even if the student's code loops."""
    parent = os.getppid()
    try:  # Linux: the kernel does it, whatever the student's code is doing
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass

    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watch, daemon=True).start()


def _error(exc: BaseException, kind: str = "exception") -> tuple:
    """An exception as plain data: the nearest built-in base class, the real name, the message."""
    base = next(
        (c.__name__ for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c
         and issubclass(c, Exception)),
        None,
    )
    if base is None:  # SystemExit, KeyboardInterrupt, pytest outcomes: not an ordinary error
        kind = "fatal" if kind == "exception" else kind
        base = "BaseException"
    try:
        message = str(exc)
    except BaseException:
        message = "<unprintable>"
    return ("error", kind, base, type(exc).__qualname__, message[:2000])


def _describe(module) -> dict:
    from labkit.remote import encode

    names = {}
    for name, value in vars(module).items():
        if name.startswith("_") or inspect.ismodule(value):
            continue
        if type(value).__module__.startswith("triton"):
            names[name] = ("kernel", None)
        elif inspect.isclass(value):
            names[name] = ("class", None)
        elif callable(value):
            names[name] = ("function", None)
        else:
            try:
                names[name] = ("value", encode(value))
            except TypeError:
                names[name] = ("other", None)
    return names


def _import(file: Path):
    spec = importlib.util.spec_from_file_location("submission", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    sys.path.insert(0, str(file.parent))  # the student's own helper modules
    spec.loader.exec_module(module)
    return module


def _run(module, request):
    from labkit.remote import ProtocolError, decode

    if type(request) is not tuple or not request:
        raise ProtocolError("bad request")
    if request[0] == "call":
        _, name, args, kwargs = request
        fn = getattr(module, name)
        args, kwargs = decode(args), decode(kwargs)
        return args, kwargs, lambda: fn(*args, **kwargs)
    if request[0] == "launch":
        _, name, grid, args, kwargs = request
        kernel = getattr(module, name)
        grid, args, kwargs = decode(grid), decode(args), decode(kwargs)
        return args, kwargs, lambda: kernel[grid](*args, **kwargs)
    raise ProtocolError(f"unknown request {request[0]!r}")


def _changed(leaves, before) -> list:
    from labkit.remote import encode

    updates = []
    for i, (leaf, old) in enumerate(zip(leaves, before, strict=True)):
        new = encode(leaf)
        if new != old:
            updates.append((i, new))
    return updates


def main(argv: list[str]) -> int:
    read_fd, write_fd, file, backend = int(argv[0]), int(argv[1]), Path(argv[2]), argv[3]
    _die_with_parent()
    from labkit.remote import array_leaves, encode, recv, send

    try:
        if backend == "triton":
            from labkit import triton_env

            triton_env.select_backend()
        module = _import(file)
        send(write_fd, ("ready", _describe(module)))
    except BaseException as exc:
        send(write_fd, _error(exc, kind="import"))
        return 1

    while True:
        try:
            request = recv(read_fd)
        except EOFError:
            return 0
        try:
            args, kwargs, call = _run(module, request)
            leaves = array_leaves((args, kwargs))
            before = [encode(leaf) for leaf in leaves]
            result = call()
            reply = ("ok", encode(result), _changed(leaves, before))
        except BaseException as exc:
            reply = _error(exc)
        send(write_fd, reply)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
