"""The worker process of ``labs grade``: imports one student's file and runs calls on it.

Started by :class:`labkit.grader.standin.Submission` as
``python -m labkit.grader.worker <read fd> <write fd> <file> <numpy|triton>`` in a
scratch directory. It answers ``("ready", names)`` or ``("error", ...)`` after
the import, then one reply per request (``call`` a function, ``launch`` a
Triton kernel, ``setglobal``/``delglobal`` for a test's monkeypatching):
``("ok", result, in_place_updates)`` or
``("error", "exception", builtin_base, qualname, message)``. A global replaced
by a test's function becomes a stub that sends ``("callback", ...)`` and serves
requests until the trusted side answers ``cbret``/``cberr``.

Nothing decided here is trusted: the grade is decided by the instructor's tests
in the process that started this one.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
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
    from labkit.grader.standin import encode

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


class _Session:
    """Answers the trusted side's requests for one imported module."""

    def __init__(self, module, read_fd: int, write_fd: int):
        self.module, self.read_fd, self.write_fd = module, read_fd, write_fd
        self.originals = dict(vars(module))  # calls go to these, whatever a test patched in since

    def decode(self, data):
        from labkit.grader.standin import decode

        return decode(data, hooks={"cb": self._callback_stub, "fn": self._original, "dc": self._record})

    def _original(self, name):
        return self.originals[name]

    def _record(self, name, fields):
        cls = self.originals[name]  # the submission's dataclass, rebuilt from its fields
        return cls(**{k: self.decode(v) for k, v in fields})

    def _callback_stub(self, index):
        """A function that runs the trusted side's callback ``index`` (a test's recording wrapper)."""
        from labkit.grader.standin import encode, send

        def callback(*args, **kwargs):
            send(self.write_fd, ("callback", index, encode(args), encode(kwargs)))
            reply = self.serve(until_callback_returns=True)
            if reply[0] == "cbret":
                return self.decode(reply[1])
            cls = getattr(builtins, str(reply[1]), None)
            cls = cls if isinstance(cls, type) and issubclass(cls, Exception) else RuntimeError
            raise cls(str(reply[2]))

        return callback

    def handle(self, request) -> tuple:
        from labkit.grader.standin import ProtocolError, array_leaves, encode

        try:
            if type(request) is not tuple or len(request) < 2:
                raise ProtocolError("bad request")
            request, patches = request[:-1], self.decode(request[-1])
            kind = request[0]
            if kind == "call":
                _, name, args, kwargs = request
                fn, args, kwargs = self.originals[name], self.decode(args), self.decode(kwargs)
                call = lambda: fn(*args, **kwargs)
            elif kind == "launch":
                _, name, grid, args, kwargs = request
                kernel, grid, args, kwargs = self.originals[name], self.decode(grid), self.decode(args), \
                    self.decode(kwargs)
                call = lambda: kernel[grid](*args, **kwargs)
            elif kind == "setglobal":
                _, name, args, _kwargs = request
                (value,) = self.decode(args)
                args, kwargs = (), {}
                call = lambda: setattr(self.module, name, value)
            elif kind == "delglobal":
                _, name, _args, _kwargs = request
                args, kwargs = (), {}
                call = lambda: delattr(self.module, name)
            else:
                raise ProtocolError(f"unknown request {kind!r}")
            leaves = array_leaves((args, kwargs))
            before = [encode(leaf) for leaf in leaves]
            with _patched(patches):
                result = call()
            aliases = {id(leaf): i for i, leaf in enumerate(leaves)}  # a result that is an argument stays one
            return ("ok", encode(result, arguments=aliases), _changed(leaves, before))
        except BaseException as exc:
            return _error(exc)

    def serve(self, until_callback_returns: bool = False):
        """Answer requests; inside a callback, until its result comes back."""
        from labkit.grader.standin import ProtocolError, recv, send

        while True:
            try:
                request = recv(self.read_fd)
            except EOFError:
                os._exit(0)
            if type(request) is tuple and request and request[0] in ("cbret", "cberr"):
                if until_callback_returns:
                    return request
                raise ProtocolError("a callback result outside a callback")
            send(self.write_fd, self.handle(request))


@contextlib.contextmanager
def _patched(patches: dict):
    """Replace watched module functions ("numpy:exp") by the test's wrappers for one call."""
    from labkit.grader.standin import WATCHED_MODULES

    saved = []
    try:
        for key, value in patches.items():
            module_name, attr = str(key).split(":", 1)
            if module_name in WATCHED_MODULES:
                module = importlib.import_module(module_name)
                saved.append((module, attr, getattr(module, attr)))
                setattr(module, attr, value)
        yield
    finally:
        for module, attr, original in reversed(saved):
            setattr(module, attr, original)


def _changed(leaves, before) -> list:
    from labkit.grader.standin import encode

    updates = []
    for i, (leaf, old) in enumerate(zip(leaves, before, strict=True)):
        new = encode(leaf)
        if new != old:
            updates.append((i, new))
    return updates


def main(argv: list[str]) -> int:
    read_fd, write_fd, file, backend = int(argv[0]), int(argv[1]), Path(argv[2]), argv[3]
    _die_with_parent()
    from labkit.grader.standin import send

    try:
        if backend == "triton":
            from labkit.testing import triton_env

            triton_env.select_backend()
        module = _import(file)
        send(write_fd, ("ready", _describe(module)))
    except BaseException as exc:
        send(write_fd, _error(exc, kind="import"))
        return 1
    _Session(module, read_fd, write_fd).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
