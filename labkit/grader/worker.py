"""The first process in a student's sandbox: set the limits, then import the student's file and serve
the grader's requests (``serve``), or run a lab's child script (``script``). Nothing here is trusted.

    python -m labkit.grader.worker serve LIMITS READ_FD WRITE_FD FILE numpy|triton API
    python -m labkit.grader.worker script LIMITS SCRIPT [ARGS...]

API: the lab's API as JSON, {name: kind}; the ready message carries the values of its "value" and "any" names.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import json
import os
import runpy
import sys
from pathlib import Path

from labkit.grader import wire
from labkit.grader.containers import Returned, container_key, mutable_arguments
from labkit.grader.handles import OPS, ObjectTable
from labkit.grader.lending import (
    GraderIterator,
    GraderObject,
    load_module,
    names_patched,
    patched,
    torch_modes,
    warning_filters,
    warnings_kept,
)
from labkit.grader.snapshots import WATCH_MAX, Snapshots
from labkit.grader.values import (
    BufferWrites,
    Layouts,
    array_layout,
    array_leaves,
    builtin_exception,
    decode,
    encode,
    exception_argument,
)


def apply_limits(limits: dict) -> None:
    """setrlimit each limit for this process and every process it starts. The process limit is set here,
    in the sandbox's own user namespace: the kernel counts processes per user and namespace."""
    import resource

    table = {"memory": resource.RLIMIT_DATA if limits.get("memory_kind") == "data" else resource.RLIMIT_AS,
             "processes": resource.RLIMIT_NPROC, "file_size": resource.RLIMIT_FSIZE,
             "open_files": resource.RLIMIT_NOFILE, "cpu_seconds": resource.RLIMIT_CPU}
    for name, which in table.items():
        value = int(limits.get(name) or 0)
        if value > 0:
            _, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            # CPU time: SIGXCPU (which a program may catch) at the soft limit, SIGKILL five seconds later.
            grace = 5 if name == "cpu_seconds" and hard == resource.RLIM_INFINITY else 0
            resource.setrlimit(which, (value, value + grace))
    # None at all, whatever the grader's own are: a core dump leaves the sandbox (the host's core_pattern
    # may pipe the process's memory to a helper on the host, outside every limit here), and a real-time
    # priority or a lower nice value would starve the grader and every other sandbox of the CPU.
    for which in (resource.RLIMIT_CORE, resource.RLIMIT_RTPRIO, resource.RLIMIT_NICE):
        resource.setrlimit(which, (0, 0))


def _die_with_parent() -> None:
    """Without a sandbox (``labs grade --no-sandbox``): exit when the grader does (Linux)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _error(exc: BaseException, kind: str = "exception") -> tuple:
    """An exception as plain data: the names of its nearest built-in base classes (every one that no
    other of them derives from: ``class BadInput(LookupError, ValueError)`` is both), the real name,
    the message."""
    found = [c for c in type(exc).__mro__ if builtin_exception(c.__name__) is c]
    base = tuple(c.__name__ for c in found if not any(o is not c and issubclass(o, c) for o in found))
    if not base:  # SystemExit, KeyboardInterrupt, pytest outcomes: not an ordinary error
        kind = "fatal" if kind == "exception" else kind
        base = ("BaseException",)
    try:
        message = str(exc)
    except BaseException:
        message = "<unprintable>"
    notes = getattr(exc, "__notes__", None)  # add_note's: pytest.raises(match=) reads them too
    notes = [note[:2000] for note in notes[:MAX_NOTES] if type(note) is str] if type(notes) is list else []
    return ("error", kind, base, type(exc).__qualname__, message[:2000], notes)


MAX_NOTES = 16  # an exception's notes that cross


GIVEN_DIR = Path(__file__).resolve().parents[2] / "given"  # the graded lab's given modules, staged by the grader


def import_file(file: Path):
    """Import the student's ``file``; modules next to it (their own helpers) import too, after the lab's
    given modules (``_checks.py``...), which come from the course, whatever the student's folder holds.
    Then, as the labs' loader does under pytest (``labkit.testing.loader.exec_file``), those folders
    leave ``sys.path`` and the modules imported from them leave ``sys.modules``: an import of one at
    call time fails here as it does there."""
    spec = importlib.util.spec_from_file_location("submission", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    folders = ([str(GIVEN_DIR)] if GIVEN_DIR.is_dir() else []) + [str(file.parent)]  # the course's first
    before = set(sys.modules)
    sys.path[:0] = folders
    try:
        spec.loader.exec_module(module)
    finally:
        for folder in folders:
            sys.path.remove(folder)
        roots = {Path(folder).resolve() for folder in folders}
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if origin and not roots.isdisjoint(Path(origin).resolve().parents):
                del sys.modules[name]
    return module


class _Writes:
    """What one call writes into its arguments: the memory of their arrays (``buffers``, as decoded)
    and the plain containers among them, each remembered as it was before the call; ``changes()``:
    those that differ after it, ``(buffer index, bytes)`` and ``("c", path, encoded container)``; the
    argument arrays whose layout the call changed in place, ``("m", argument array index, layout)``
    (:func:`~labkit.grader.values.array_layout`: ``q.shape = ...``, ``flags.writeable``, ``t.unsqueeze_(0)``,
    a torch storage offset as the change made to it); and ``("W", buffer index)`` for a read-only owner
    made writeable through a view's ``base``: in one process each is the test's own array, changed."""

    def __init__(self, buffers: list, call_args: tuple, leaves: list, encode):
        """``leaves``: the call's arrays, ``array_leaves(call_args)``, numbered as the grader numbers them."""
        self.arrays, self.encode = BufferWrites(buffers), encode
        self.containers = mutable_arguments(call_args)
        self.keep: list = []  # what the keys name by identity, alive until they are compared
        self.keys = [container_key(value, self.keep) for _, value in self.containers]
        # A tensor that crossed as a copy (an expanded one) has another layout than the test's: not followed.
        shared = {_storage(b) for b in buffers} - {None}
        self.layouts = [(i, a, array_layout(a), _storage(a)) for i, a in enumerate(leaves)
                        if _storage(a) is None or _storage(a) in shared]
        self.owners = [(i, a) for i, a in enumerate(buffers) if type(a).__module__ == "numpy" and not a.flags.writeable]

    def changes(self) -> list:
        changed = self.arrays.changes()
        for (path, value), key in zip(self.containers, self.keys, strict=True):
            if container_key(value, []) != key:
                changed.append(("c", path, self.encode(value)))
        for i, a, before, storage in self.layouts:
            now = array_layout(a)
            if now != before:
                if _storage(a) != storage:  # t.set_(other), a resize past its storage: not the test's memory now
                    raise TypeError("an argument tensor now lives in other memory: the test's cannot follow it")
                changed.append(("m", i, now if now[0] == "nd" else (*now[:3], now[3] - before[3], *now[4:])))
        return changed + [("W", i) for i, a in self.owners if a.flags.writeable]


def _storage(a):
    return a.untyped_storage().data_ptr() if type(a).__module__.startswith("torch") else None


class _Session:
    """Answers the grader's requests for one imported module."""

    def __init__(self, module, read_fd: int, write_fd: int, api: dict):
        self.module, self.read_fd, self.write_fd = module, read_fd, write_fd
        self.originals = dict(vars(module))  # calls go to these, whatever a test patched in since
        if callable(self.originals.get("__getattr__")):  # a module __getattr__ (PEP 562) makes names when read
            for name in api:
                if name not in self.originals:
                    try:
                        self.originals[name] = getattr(module, name)
                    except Exception:  # the name is missing, as in one process
                        continue
        self.objects = ObjectTable()
        self.snapshots = Snapshots(self.objects, self._special)
        self.objects.on_death = self.snapshots.died
        self.returned = Returned()  # the containers replies returned, compared after each call
        self.grader_objects: dict = {}  # (stand-in class, index) -> the stand-in of a test's object or iterator
        self.modules: dict = {}  # index -> a test's torch module (a copy)
        self.api = {}  # id() of a public class or function of the module -> its name
        for name, value in self.originals.items():
            if not name.startswith("_") and (inspect.isclass(value) or inspect.isroutine(value)):
                self.api.setdefault(id(value), name)

    # -- values both ways: data by value, objects by reference
    def encode(self, value, arguments: dict | None = None, shared: list = (), layouts: Layouts | None = None):
        return encode(value, on_object=self._reference, arguments=arguments, plain_subclasses=True, shared=shared,
                      layouts=layouts)

    def _special(self, obj):
        """The reference of a test's object or of one of the lab's classes and functions, else None."""
        if type(obj) in (GraderObject, GraderIterator):
            return ("tobj" if type(obj) is GraderObject else "titer", obj._index)
        name = self.api.get(id(obj))
        if name is not None and self.originals.get(name) is obj:
            return ("api", name)  # the grader has a stand-in for it
        return None

    def _reference(self, obj):
        return self._special(obj) or self.snapshots.reference(obj, hold=True)

    def decode(self, data, buffers: list | None = None):
        return decode(data, buffers=buffers, hooks={"h": lambda n, *_: self.objects.get(n), "tobj": self._grader_object,
                                   "titer": lambda i: self._grader_object(i, GraderIterator), "ptmod": self._module,
                                   "api": self.originals.__getitem__, "cb": lambda i: self._asker("call", i),
                                   "record": self._record})

    def _module(self, index, raw):
        """A test's torch module, loaded the first time it comes (with its bytes), the same object after."""
        if index not in self.modules:
            if type(index) is not int or not raw:
                raise wire.ProtocolError("a torch module that was never sent")
            self.modules[index] = load_module(raw)
        return self.modules[index]

    def describe(self, values: set) -> dict:
        """The module's public names, for the "ready" message: (kind, value or None); a value only for
        the names in ``values`` (the lab's API: a large table of the student's own crosses nowhere)."""
        names = {}
        for name, value in self.originals.items():
            if name.startswith("_") or inspect.ismodule(value):
                continue
            kind = "class" if inspect.isclass(value) else "function" if callable(value) else "value"
            try:
                names[name] = (kind, self.encode(value) if kind == "value" and name in values else None)
            except TypeError:
                names[name] = ("other", None)
        return names

    def _record(self, record):
        """The submission's dataclass again, rebuilt from a record's fields (its properties and items
        are its own), decoded with the rest of the message (arrays in it are views of its buffers). Made
        without calling its ``__init__``, as in one process the test hands back the object itself: a class
        whose ``field(init=False)`` values ``__post_init__`` computes, or with an ``__init__`` of its own,
        refused its own fields as keywords (04-05's budget so written graded 86 of 88, pytest 88)."""
        cls = self.originals[record._name]
        if not isinstance(cls, type) or not dataclasses.is_dataclass(cls) \
                or set(record._fields) != {f.name for f in dataclasses.fields(cls)}:
            raise wire.ProtocolError(f"a record that is not the submission's {record._name}")
        made = cls.__new__(cls)
        for name, value in record._fields.items():
            object.__setattr__(made, name, value)  # a frozen one too, as its own __init__ does
        for name, value in record._props.items():  # its instance's other attributes; its class's properties are its own
            if not hasattr(cls, name):
                try:
                    object.__setattr__(made, name, value)
                except AttributeError:  # slots: none such
                    continue
        return made

    # -- calls into the grader: a test's functions and objects
    def _grader_object(self, index, cls=GraderObject):
        """The stand-in of the test's object (or iterator) ``index``: one per index, as the grader lends one."""
        if type(index) is not int:
            raise wire.ProtocolError("malformed reference")
        return self.grader_objects.setdefault((cls, index), cls(self.ask, index))

    def _asker(self, op: str, *head):
        """A function that asks the grader ``op`` on ``head``: a test's callback (a recording wrapper),
        or a method of a test's object."""

        def ask(*args, **kwargs):
            return self.ask(op, *head, *args, **kwargs)

        return ask

    def ask(self, op: str, index: int, *args, **kwargs):
        """Ask the grader to run ``op`` on its callback or object ``index``; serve requests meanwhile. What
        the test's code wrote into the arrays it was given (``np.exp(x, out=x)`` in a test's wrapper) is
        written back into them, as in one process (its result is a copy: no object is shared)."""
        layouts = Layouts(whole=True)  # as the grader sends a call's arguments: views of whole storages
        message = ("reverse", op, index, self.encode((args, kwargs), layouts=layouts))
        wire.send(self.write_fd, message + (self.snapshots.take_types(),))
        reply = self.serve(until_callback_returns=True)
        if reply[0] == "cbmethod":
            return self._asker("method", index, str(args[0]))
        # ("cbret", result, written) or ("cberr", class name, message, written)
        if len(reply) != (3 if reply[0] == "cbret" else 4) or type(reply[-1]) is not list:
            raise wire.ProtocolError("a malformed callback reply")
        for item in reply[-1]:
            if type(item) is not tuple or len(item) != 2:
                raise wire.ProtocolError("a malformed callback reply")
            layouts.copy_back(*item)
        if reply[0] == "cbret":
            return self.decode(reply[1])
        cls = builtin_exception(reply[1]) or RuntimeError
        raise cls(exception_argument(cls, str(reply[2])))

    # -- the grader's requests
    def handle(self, request) -> tuple:
        """The reply to one request: ``("ok", result, in-place updates, snapshot updates)``, or an error
        followed by the in-place updates and the snapshot updates (the student's code may have written
        into the arguments, and changed objects, before it raised)."""
        pure, written, kind, compare, after = False, None, None, (), ()
        warned: list = []  # the warnings the call emitted, sent back with what it wrote
        ran = True  # the student's code may have run (until the request says it cannot have)
        try:
            if type(request) is not tuple or len(request) != 5 or type(request[4]) is not tuple \
                    or len(request[4]) != 3 or not _numbers(request[4][2]):
                raise wire.ProtocolError("bad request")
            kind, target, call_args, patches, (held, released, after) = request
            self.objects.hold(held)
            self.objects.release(released)
            buffers: list = []  # the memory the arguments are views of, as the grader's test laid it out
            call_args, patches = self.decode(call_args, buffers), self.decode(patches)
            self.snapshots.code_ran()  # a released object's __del__ may have run: layouts are checked again
            if type(call_args) is not tuple or len(call_args) != 2:
                raise wire.ProtocolError("bad arguments")
            args, kwargs = call_args
            if kind == "call":
                fn = self.originals[target]
                call = lambda: fn(*args, **kwargs)
            elif kind == "op":
                op, subject = target
                fn, subject = OPS[op], self.decode(subject)
                call = lambda: fn(subject, *args, **kwargs)
                # A read of an instance field runs none of the student's code: no snapshot can have changed.
                read = op == "getattr" and len(args) == 1 and not kwargs
                fields = self.snapshots.plain_fields(subject) if read else None
                pure = fields is not None and type(args[0]) is str and args[0] in fields and \
                    args[0] not in self.snapshots.shadowed(type(subject))
            elif kind == "sync":  # the grader is about to read these objects' copies, and code ran since
                if not _numbers(target):
                    raise wire.ProtocolError("bad sync request")
                compare, call = target, lambda: None
            else:
                raise wire.ProtocolError(f"unknown request {kind!r}")
            ran = not pure and kind != "sync"  # a field read or a sync runs none of the student's code
            leaves = array_leaves((args, kwargs))
            aliases = {id(leaf): i for i, leaf in enumerate(leaves)}  # a result that is an argument stays one
            if type(patches) is not tuple or len(patches) != 5:
                raise wire.ProtocolError("bad patches")
            watched, names, deleted, filters, modes = patches
            written = _Writes(buffers, (args, kwargs), leaves, lambda value: self.encode(value, arguments=aliases))
            with patched(watched), names_patched(self.module, names, deleted), warning_filters(filters), \
                    torch_modes(modes), warnings_kept(warned, lambda w: ("w", *_error(w)[2:5])):
                result = call()
            reply = ("ok", self.encode(result, arguments=aliases, shared=buffers),
                     written.changes() + self._returned_changes(ran) + self.returned.keep(result) + warned)
        except BaseException as exc:
            reply = _error(exc)
            if reply[1] == "exception":
                try:
                    reply += ((written.changes() if written is not None else []) + self._returned_changes(ran)
                              + warned,)
                except BaseException as err:  # what the call wrote cannot be sent: the grader cannot trust it
                    reply = _error(err, kind="written")
        if ran:
            compare = after  # the copies the grader read lately (Copies.likely_read): compared now, in this reply
        try:
            return reply + (self.snapshots.updates(compare) + (ran,),)
        except BaseException as exc:  # a snapshot could not be taken: the grader cannot trust its copies
            return _error(exc, kind="snapshot")

    def _returned_changes(self, ran: bool) -> list:
        """The containers earlier replies returned that the student's code changed (only if it ran)."""
        return self.returned.changes(self.encode) if ran else []

    def serve(self, until_callback_returns: bool = False):
        """Answer requests; inside a callback, until its result comes back."""
        while True:
            try:
                request = wire.recv(self.read_fd)
            except EOFError:
                os._exit(0)
            if type(request) is tuple and request and request[0] in ("cbret", "cberr", "cbmethod"):
                if until_callback_returns:
                    return request
                raise wire.ProtocolError("a callback result outside a callback")
            wire.send(self.write_fd, self.handle(request))


def _numbers(value) -> bool:
    """Whether ``value`` is a list of object numbers a request may ask the worker to compare."""
    return type(value) is list and len(value) <= WATCH_MAX and all(type(n) is int for n in value)


def serve(read_fd: int, write_fd: int, file: Path, backend: str, api: dict) -> int:
    try:
        if backend == "triton":
            from labkit.testing import triton_env

            triton_env.select_backend()
        session = _Session(import_file(file), read_fd, write_fd, api)
        names = session.describe({name for name, kind in api.items() if kind in ("value", "any")})
        wire.send(write_fd, ("ready", names, session.snapshots.updates() + (False,)))
    except BaseException as exc:
        wire.send(write_fd, _error(exc, kind="import"))
        return 1
    session.serve()
    return 0


def main(argv: list[str]) -> int:
    mode, limits, rest = argv[0], json.loads(argv[1]), argv[2:]
    apply_limits(limits)
    if not limits.get("sandboxed"):
        _die_with_parent()
    if mode == "serve":
        read_fd, write_fd, file, backend, api = int(rest[0]), int(rest[1]), Path(rest[2]), rest[3], rest[4]
        return serve(read_fd, write_fd, file, backend, dict(json.loads(api)))
    if mode == "script":  # a lab's child script, which under pytest runs from the lab's folder
        sys.argv = rest
        sys.path.insert(0, str(Path(rest[0]).parent))
        if GIVEN_DIR.is_dir():  # the lab's given modules, its siblings there (04-06's imports _host)
            sys.path.insert(1, str(GIVEN_DIR))
        runpy.run_path(rest[0], run_name="__main__")
        return 0
    print(f"labkit.grader.worker: unknown mode {mode!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
