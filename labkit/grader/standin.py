"""A student's module as the trusted pytest process sees it: :class:`Submission`, whose names call a
worker in the student's sandbox. Nothing the worker sends is believed (README.md: the trusted side
checks); a timeout or crash is :class:`SubmissionTimeout` or :class:`SubmissionCrashed`."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
import types
import warnings
from pathlib import Path

from labkit.grader import sandbox as sandboxes
from labkit.grader import wire
from labkit.grader.containers import adopt_returned, container_at, refill
from labkit.grader.handles import MAX_TYPES, RESULT_TYPES, Handle, Handles, RemoteClass
from labkit.grader.lending import (
    MAX_WARNINGS,
    Lent,
    Patches,
    serve_lent,
    the_tests_torch_modes,
    the_tests_warning_filters,
)
from labkit.grader.snapshots import COMPARE_AFTER, WATCH_MAX
from labkit.grader.values import (
    BufferWrites,
    Layouts,
    array_leaves,
    builtin_exception,
    decode,
    encode,
    exception_argument,
)

# What one reply may cost the grader. The largest any lab's tests need, graded on the reference
# solutions: 0.6 MB and 67,000 items (lab 02-02); big arrays travel through child scripts instead.
MAX_REPLY = 16 << 20  # bytes: a larger reply is refused before it is read
MAX_ITEMS = 500_000  # items of the wire format in one reply (a few hundred bytes each, decoded)
# What the arrays of one reply may hold together, as views: each is never larger than the bytes it
# spans, which crossed; this bounds a reply whose arrays are many views of the same bytes.
MAX_VIEW_BYTES = 2 * MAX_REPLY
MAX_MESSAGE = 2000  # characters of an exception's message that are kept
ProtocolError = wire.ProtocolError


class SubmissionTimeout(BaseException):
    """A call ran past its time limit (a BaseException, like pytest's outcomes: a test's
    ``pytest.raises(Exception)`` cannot swallow it)."""


class SubmissionCrashed(BaseException):
    """The worker died, failed to import the submission, or broke the protocol."""


_ABSENT = object()


class RemoteError(Exception):
    """The submission raised an exception that is not one of Python's built-in ones."""


class Submission(types.ModuleType):
    """A stand-in module for the student's ``file``, run in ``box``: the names of ``api`` (the lab's
    declared API, ``lab.toml``: name -> "callable", "value" or "any"). ``deadline``: a ``time.time()`` after which
    every call fails at once (the lab's limit); ``on_incident(kind, message)`` hears of every timeout
    and crash.

    The lab's names live in the module's own ``__dict__``, as in any module, so that every reader
    (``getattr``, ``vars``, ``inspect``, monkeypatch's look at ``__dict__``) sees the same thing, and
    writes to it are not intercepted: whatever a test (or a tool) sets, deletes and restores there is
    read again at each request and made in the worker's module for that request (README.md: "A test's
    patches"). The stand-in's own state lives in slots, out of that ``__dict__``."""

    __slots__ = ("_file", "_api_kinds", "_box", "_triton", "_call_timeout", "_deadline", "_import_timeout",
                 "_on_incident", "_worker", "_busy", "_handles", "_lent", "_patches", "_api", "_reported",
                 "_others", "_returned")

    def __init__(self, file: Path, api: dict[str, str], box: sandboxes.Sandbox, *, triton: bool = False,
                 call_timeout: float = 10.0, deadline: float | None = None, import_timeout: float = 60.0,
                 on_incident=None, patches=()):
        super().__init__("submission", f"a student's {Path(file).name}, run in a sandboxed worker")
        self._file, self._api_kinds, self._box, self._triton = Path(file), dict(api), box, triton
        self._call_timeout, self._deadline, self._import_timeout = call_timeout, deadline, import_timeout
        self._on_incident = on_incident or (lambda kind, message: None)
        self._worker: _Worker | None = None
        self._busy = 0  # requests in flight (more than one: a test's callback asked in turn): snapshots may be old
        self._handles = Handles(self)  # the worker's objects the tests hold (a new table per worker)
        self._lent = Lent()  # the tests' objects, functions and models the worker may use
        self._patches = Patches(patches)  # the numpy functions the lab's tests wrap, as they were
        self._api: dict[str, object] = {}  # the lab's names as the worker's module has them, never changed
        self._reported: dict[str, str] = {}  # every public name the worker reported at import -> its kind
        self._others: dict[str, object] = {}  # stand-ins of its other classes and functions, made as they cross
        self._returned: dict[int, object] = {}  # the containers calls returned, by the worker's number for each
        ready = self._start()
        self._reported = {name: kind for name, (kind, _) in ready.items() if kind in ("class", "function")}
        try:
            self._api = self._public_names(ready)
        except ProtocolError as err:
            raise self._incident(SubmissionCrashed, f"the worker's ready message: {err}") from None
        self.__dict__.update(self._api)

    def __getattr__(self, name):  # only for a name the module's __dict__ does not hold
        raise AttributeError(f"the submission has no {name!r} (or it is not part of the lab's API)")

    def _names_patched(self) -> tuple[dict, list]:
        """The public names of this module that differ from the worker's module as imported: (name ->
        what a test put there, names a test deleted). Private names stay here, as they always did."""
        now, api = self.__dict__, self._api
        changed = {name: value for name, value in now.items()
                   if not name.startswith("_") and api.get(name, _ABSENT) is not value}
        return changed, [name for name in api if name not in now]

    def _public_names(self, ready: dict) -> dict:
        """The stand-ins for the API names the worker reported, each of the kind the lab declares
        ("any": the starter re-exports another name, which may be a class, a function or a value)."""
        found = {}
        for name, expected in self._api_kinds.items():
            kind, payload = ready.get(name, (None, None))
            if kind == "class" and expected in ("callable", "any"):
                found[name] = RemoteClass(name, owner=self)
            elif kind == "function" and expected in ("callable", "any"):
                found[name] = RemoteFunction(self, name)
            elif kind == "value" and expected in ("value", "any"):
                found[name] = self._decode(payload)
        return found

    # -- time budget
    def _seconds_left(self, limit: float) -> float:
        return limit if self._deadline is None else min(limit, self._deadline - time.time())

    def _incident(self, exc_type, message: str, stop: bool = True):
        """Tell ``on_incident`` of a timeout or crash, stopping the worker (its objects die with it)
        unless ``stop`` is false; the exception to raise."""
        if stop:
            self._stop()
        self._on_incident("timeout" if exc_type is SubmissionTimeout else "crashed", message)
        return exc_type(message)

    # -- the worker
    def _start(self) -> dict:
        wait = self._seconds_left(self._import_timeout)
        if wait <= 0:
            raise self._incident(SubmissionTimeout, "the lab's time limit was reached before this test")
        self._worker = worker = _Worker(self._box, self._file, self._triton, self._api_kinds)
        name = self._file.name
        deadline = time.monotonic() + wait
        try:
            reply = worker.recv(deadline)
        except TimeoutError:
            raise self._incident(SubmissionTimeout, f"importing {name} did not finish within {wait:.0f} s") from None
        except (EOFError, ProtocolError) as err:
            raise self._incident(SubmissionCrashed, f"importing {name}: {worker.death(err, deadline)}") from None
        if _tag(reply) == "error":
            raise self._incident(SubmissionCrashed, f"importing {name} raised {_describe(reply)}")
        if _tag(reply) != "ready" or len(reply) != 3 or type(reply[1]) is not dict:
            raise self._incident(SubmissionCrashed, "the worker broke the protocol at import")
        try:
            self._handles.update(reply[2])
        except ProtocolError as err:
            raise self._incident(SubmissionCrashed, f"the worker's ready message: {err}") from None
        return {k: v for k, v in reply[1].items() if type(k) is str and type(v) is tuple and len(v) == 2}

    # -- references: what crosses for what is not data
    def _encode_arg(self, value, lend: bool = True, layouts: Layouts | None = None):
        """``value`` for the worker. Objects of the test's own classes are lent to the submission when
        ``lend`` (arguments); in the answers to the worker's questions only those already lent may cross.
        ``layouts``: where its arrays live, kept to copy back what the worker writes (arrays cross as views
        of their whole storage, so that the worker's memory is laid out as the test's)."""
        return encode(value, on_object=lambda obj: self._reference(obj, lend), layouts=layouts)

    def _reference(self, obj, lend: bool) -> tuple:
        if type(obj) is Handle:
            if obj._table is not self._handles or not obj._table.alive:
                raise self._incident(SubmissionCrashed, "an object of a worker that was stopped after a timeout or "
                                     "crash was used: its objects died with it", stop=False)
            return ("h", obj._number)
        if isinstance(obj, (RemoteFunction, RemoteClass)) and (self._api.get(obj.__name__) is obj
                                                               or self._others.get(obj.__name__) is obj):
            return ("api", obj.__name__)  # the submission's own class or function
        return self._lent.tag(obj, lend)

    def _decode(self, data, leaves: list = (), layouts: Layouts | None = None, buffers: list | None = None):
        """``layouts``: those of the call a result answers (a view of an argument's memory is one of the
        test's own memory); ``buffers`` gets the message's buffers (:func:`~labkit.grader.values.decode`)."""
        hooks = {"h": self._handles.handle, "tobj": self._lent.get, "titer": self._lent.get, "api": self._api_object,
                 "arg": lambda i: leaves[_index(i, leaves)]}
        return decode(data, hooks=hooks, max_view_bytes=MAX_VIEW_BYTES, shared=layouts, buffers=buffers)

    def _api_object(self, name):
        """The stand-in of the submission's class or function ``name``: one of the lab's API, or another
        public one its module has (a helper a call returns, a class a field holds), made when it first
        crosses; the worker refers to each by its name."""
        if type(name) is not str or name not in self._api and name not in self._reported:
            raise ProtocolError("a reference to a class or function the submission's module does not have")
        if name in self._api:
            return self._api[name]
        if name not in self._others:
            if len(self._others) >= MAX_TYPES:  # each is a class or function object of the grader's
                raise ProtocolError(f"references to more than {MAX_TYPES} of the module's classes and functions")
            self._others[name] = RemoteClass(name, owner=self) if self._reported[name] == "class" else \
                RemoteFunction(self, name)
        return self._others[name]

    def _read_copy(self, encoded):
        """A field's value from its object's copy, decoded as it is read: one the worker sent malformed is
        a crash, as any malformed reply is (never an exception a test's ``pytest.raises`` could take)."""
        try:
            return self._decode(encoded)
        except ProtocolError as err:
            raise self._incident(SubmissionCrashed, f"reading a field: {err}") from None

    def _serve_reverse(self, message) -> tuple:
        """Run what the worker asked of a trusted callback or lent object; the reply to send back, with
        what the test's code wrote into the arrays it was given (the worker writes it into its own)."""
        try:
            _, op, index, call, types = message
            self._handles.add_types(types)  # the classes of the objects the arguments name
            buffers: list = []
            call = self._decode(call, buffers=buffers)
            if type(call) is not tuple or len(call) != 2:
                raise TypeError("arguments")
            args, kwargs = call
            if type(args) is not tuple or type(kwargs) is not dict or not all(type(k) is str for k in kwargs):
                raise TypeError("arguments")
            obj, kind = self._lent.get(index, kinds=("cb", "titer", "tobj")), self._lent.kinds[index]
        except (ValueError, TypeError, IndexError, ProtocolError) as err:
            raise ProtocolError(f"a malformed callback: {err}") from None
        written = BufferWrites(buffers)
        try:
            result, is_method = serve_lent(obj, kind, op, args, kwargs)
            if is_method:
                return ("cbmethod",)
            # An iterator's items are the test's arguments too (lent); other answers only what is lent already.
            return ("cbret", self._encode_arg(result, lend=op == "next"), written.changes())
        except ProtocolError:
            raise
        except Exception as err:  # the test's code raised, or refused: the submission sees it raised
            return ("cberr", type(err).__name__, str(err), written.changes())

    def _op(self, op: str, subject, *args, **kwargs):
        """``op`` (:data:`labkit.grader.handles.OPS`) on ``subject`` in the worker: a handle's use."""
        name = subject._table.types[subject._type][0] if type(subject) is Handle else \
            getattr(subject, "__name__", None) or type(subject).__name__
        what = f"{op}{'(.' + str(args[0]) + ')' if op in ('getattr', 'setattr', 'method') else '()'} on a {name}"
        result = self._call("op", (op, self._encode_arg(subject)), what, args, kwargs)
        expected = RESULT_TYPES.get(op)
        if expected is not None and type(result) is not expected:
            raise self._incident(SubmissionCrashed, f"{what}: the worker answered a {type(result).__name__}, "
                                 f"not a {expected.__name__}")
        return result

    def _sync(self, number: int) -> None:
        """Bring the copy of object ``number`` up to date, with those likely to be read next: the worker
        compares each with its object and sends what changed, running none of the student's code
        (:class:`~labkit.grader.snapshots.Copies` says why reads wait for it)."""
        numbers = self._handles.snapshots.to_compare(number, WATCH_MAX)
        self._call("sync", numbers, "reading a field", (), {})
        self._handles.snapshots.confirm(numbers)

    def _call(self, kind: str, target, what: str, args: tuple, kwargs: dict):
        leaves = array_leaves((args, kwargs))
        if self._worker is None:  # the last call timed out or crashed: a fresh import
            self._start()
        patches = (self._patches.current(), *self._names_patched(), the_tests_warning_filters(),
                   the_tests_torch_modes())
        layouts = Layouts(whole=True)  # args and kwargs in one message: views of one storage share one buffer
        # The copies to compare if the student's code runs (a sync names its own, in target).
        after = [] if kind == "sync" else self._handles.snapshots.likely_read(COMPARE_AFTER)
        payload = (kind, target, self._encode_arg((args, kwargs), layouts=layouts), self._encode_arg(patches),
                   (*self._handles.take_changes(), after))
        wait = self._seconds_left(self._call_timeout)
        if wait <= 0:
            raise self._incident(SubmissionTimeout, f"{what}: the lab's time limit was reached")
        worker, deadline = self._worker, time.monotonic() + wait
        self._busy += 1  # the student's code may run: until its reply, no snapshot is read
        try:
            worker.send(payload, deadline)
            reply = worker.recv(deadline)
            while _tag(reply) == "reverse":  # the submission uses a test's function or object, which may call back in
                worker.send(self._serve_reverse(reply), deadline)
                reply = worker.recv(deadline)
            if sandboxes.memory_killed(worker._proc):  # a process of the sandbox was: the sandbox is
                raise EOFError
            return self._unpack(reply, leaves, layouts, what, (args, kwargs), after)
        except TimeoutError:
            limit = "per-call" if wait >= self._call_timeout else "the lab's"
            raise self._incident(SubmissionTimeout, f"{what} did not return within {wait:.1f} s ({limit} time "
                                 "limit)") from None
        except (EOFError, BrokenPipeError, ProtocolError) as err:
            raise self._incident(SubmissionCrashed, f"{what}: {worker.death(err, deadline)}") from None
        finally:
            self._busy -= 1

    def _unpack(self, reply, leaves: list, layouts: Layouts, what: str, call_args: tuple, after: list):
        tag = _tag(reply)
        if tag == "error":
            _, kind, builtin_name, qualname, message, notes = (reply + ("",) * 6)[:6]
            if kind != "exception" or len(reply) != 8:
                raise self._incident(SubmissionCrashed, f"{what} raised {_describe(reply)}")
            # What the student's code wrote and changed before it raised, as in one process.
            self._handles.update(reply[7], after)
            self._copy_back(reply[6], leaves, layouts, call_args)
            bases = _builtin_bases(builtin_name)
            message = str(message)[:MAX_MESSAGE]
            # str(err) is the message alone, and the notes are the student's own, as in one process: a
            # test's ``match=`` (which reads the message and the notes) or ``in str(err)`` must never read
            # the class's name, the student's to choose. The name is the exception's class's own: a
            # subclass of the built-in named like the student's, as in one process (the report shows it).
            if len(bases) == 1 and (qualname,) == builtin_name:
                raise _exception(bases[0], message, notes)  # a built-in exception itself
            raise _exception(_named_subclass(bases, qualname), message, notes)
        if tag != "ok" or len(reply) != 4 or type(reply[2]) is not list:
            raise ProtocolError("a malformed reply")
        self._handles.update(reply[3], after)
        named = self._copy_back(reply[2], leaves, layouts, call_args)
        # After the copies: a result that is one of the arguments is the caller's (updated) array, and a
        # container returned before is the test's object of that number, refilled.
        return adopt_returned(self._decode(reply[1], leaves, layouts), named, self._returned)

    def _copy_back(self, written, leaves: list, layouts: Layouts, call_args: tuple) -> list:
        """Into the test's arguments, what the call wrote: the buffers of its arrays, whole (the storage's
        bytes as they are now), and the plain containers it changed; into the containers earlier calls
        returned, what they hold now (:mod:`containers`). The result's containers the worker named by
        number, for :func:`~labkit.grader.containers.adopt_returned`."""
        if type(written) is not list:
            raise ProtocolError("malformed in-place updates")
        named, warned = [], []
        for item in written:
            if type(item) is tuple and len(item) == 2 and item[0] == "W":
                layouts.made_writeable(item[1])
            elif type(item) is tuple and len(item) == 3 and item[0] == "m":
                layouts.relaid(*item[1:], leaves)
            elif type(item) is tuple and len(item) == 2:
                layouts.copy_back(*item)
            elif type(item) is tuple and len(item) == 3 and item[0] == "c":
                refill(container_at(call_args, item[1]), self._decode(item[2], leaves))
            elif type(item) is tuple and len(item) == 3 and item[0] == "r":
                if type(item[1]) is int and item[1] in self._returned:  # else one the test no longer holds
                    refill(self._returned[item[1]], self._decode(item[2], leaves))
            elif type(item) is tuple and len(item) == 3 and item[0] == "k":
                named.append(item)
            elif type(item) is tuple and len(item) == 4 and item[0] == "w" and len(warned) < MAX_WARNINGS:
                warned.append(_warning(*item[1:]))
            else:
                raise ProtocolError("a malformed in-place update")
        # Emitted again here, after the copies, where the test's filters, pytest.warns and
        # warnings.catch_warnings decide what each is (one made an error raises from the call).
        for warning in warned:
            warnings.warn(warning, stacklevel=2)
        return named

    def _stop(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None
            self._handles.alive = False  # its objects are gone: every handle to one is dead
            self._handles = Handles(self)
            self._returned = {}  # numbers are the worker's: a fresh one starts again
            self._lent.modules_sent.clear()  # the next worker gets its own copies

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        self._stop()


_NAMED: dict[tuple[tuple, str], type] = {}  # (built-in bases, the submission's class name) -> a subclass so named
MAX_NAMED = 1000  # such subclasses kept per trusted process; past it, the built-in itself


def _builtin_bases(names) -> tuple[type, ...]:
    """The built-in exception classes an error names as its bases (:class:`RemoteError` if none): at
    most 8, each at most once."""
    if type(names) is not tuple or not 1 <= len(names) <= 8:
        return (RemoteError,)
    found = tuple(dict.fromkeys(cls for cls in map(builtin_exception, names) if cls is not None))
    return found or (RemoteError,)


def _named_subclass(bases: tuple[type, ...], qualname) -> type:
    """A subclass of ``bases`` named like the submission's exception class (``UnknownGPU``), made once;
    of the first base alone where they cannot be combined (two built-ins' layouts), or ``bases[0]``
    itself where it cannot be subclassed."""
    name = str(qualname)[:200].replace("\0", "?") or "?"
    named = _NAMED.get((bases, name))
    if named is None:
        if len(_NAMED) >= MAX_NAMED:
            return bases[0]
        for combined in (bases, bases[:1]):
            try:
                named = type(name, combined, {"__module__": "submission", "__qualname__": name})
                break
            except TypeError:  # a layout conflict, a base that is final, an order that is not consistent
                continue
        else:
            return bases[0]
        _NAMED[bases, name] = named
    return named


def _exception(cls: type, message: str, notes) -> BaseException:
    """``cls(message)`` with the student's ``notes`` (at most 16 strings, each cut to 2,000
    characters); for a built-in that takes more than a message (UnicodeDecodeError, ExceptionGroup),
    its nearest base class that takes one."""
    for klass in cls.__mro__:
        try:
            exc = klass(exception_argument(klass, message))
            break
        except TypeError:
            continue
    else:
        exc = RemoteError(message)
    if type(notes) is list and notes:
        exc.__notes__ = [str(note)[:MAX_MESSAGE] for note in notes[:16]]  # what add_note makes (3.11+)
    return exc


def _warning(bases, qualname, message) -> Warning:
    """A warning the submission emitted, as the worker sent it (as an exception crosses: its built-in bases,
    its class's name, its message); ProtocolError for one that is not a warning."""
    bases = _builtin_bases(bases)
    cls = bases[0] if len(bases) == 1 and bases[0].__name__ == qualname else _named_subclass(bases, qualname)
    if not issubclass(cls, Warning):
        raise ProtocolError("a warning that is not a Warning")
    return _exception(cls, str(message)[:MAX_MESSAGE], ())


def _index(i, leaves) -> int:
    if type(i) is not int or not 0 <= i < len(leaves):
        raise ProtocolError("a result naming an unknown argument")
    return i


def _tag(reply):
    return reply[0] if type(reply) is tuple and reply and type(reply[0]) is str else None


def _describe(reply) -> str:
    parts = [str(p)[:MAX_MESSAGE] for p in reply[2:5]] if len(reply) >= 5 else ["?", "?", "?"]
    _, qualname, message = parts
    return f"{qualname}: {message}" if message else qualname


class _Worker:
    """One ``python -m labkit.grader.worker serve`` process in the student's sandbox."""

    def __init__(self, box: sandboxes.Sandbox, file: Path, triton: bool, api: dict[str, str]):
        """``api``: the lab's names and their kinds (the worker looks up names a module ``__getattr__``
        makes, and sends the values of the "value" and "any" ones)."""
        to_worker_r, self._to_worker = os.pipe()
        self._from_worker, from_worker_w = os.pipe()
        args = ["serve", str(to_worker_r), str(from_worker_w), box.inside(file), "triton" if triton else "numpy",
                json.dumps(api)]
        self._box = box
        os.set_blocking(self._to_worker, False)  # a worker that stops reading cannot hold a send past its deadline
        try:  # the student's prints go nowhere: the verdict comes from the tests, and a print loop fills no disk
            self._proc = box.popen(args, pass_fds=(to_worker_r, from_worker_w))
        finally:
            os.close(to_worker_r)
            os.close(from_worker_w)

    def send(self, message, deadline: float) -> None:
        wire.send(self._to_worker, message, deadline)

    def recv(self, deadline: float):
        """The next message, by ``deadline``; while waiting for it, a sandbox the kernel killed a process of
        for memory (the process the worker waits for, perhaps) ends the wait as a death."""
        while not select.select([self._from_worker], [], [], max(0.0, min(0.5, deadline - time.monotonic())))[0]:
            if sandboxes.memory_killed(self._proc):
                raise EOFError
            if time.monotonic() >= deadline:
                raise TimeoutError
        return wire.recv(self._from_worker, deadline, limit=MAX_REPLY, max_items=MAX_ITEMS)

    def death(self, err: BaseException, deadline: float) -> str:
        """Why the worker stopped answering, in one line; waited for until ``deadline`` (the call's, or the
        import's) at most: a worker that closed its pipe and stays must not hold the call past its limit."""
        if isinstance(err, ProtocolError):
            return f"the worker sent {err}"
        if sandboxes.memory_killed(self._proc):
            return sandboxes.memory_limit(self._box.resources)
        try:
            code = self._proc.wait(timeout=min(5.0, max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            return "the worker closed its pipe"
        if code < 0:
            return f"the worker process was killed by signal {-code}"
        if code > 128 and self._box.enabled:  # bubblewrap exits with 128 + N for a process killed by signal N
            return (f"the worker process ended with status {code}: killed by signal {code - 128}, or it exited "
                    f"with code {code} (the sandbox reports both alike)")
        return f"the worker process exited with code {code} (os._exit or sys.exit in the submission?)"

    def kill(self) -> None:
        sandboxes.stop(self._proc)
        for fd in (self._to_worker, self._from_worker):
            with contextlib.suppress(OSError):
                os.close(fd)


# --------------------------------------------------------------------------- the lab's functions


class RemoteFunction:
    def __init__(self, owner, name: str):
        self._owner, self.__name__, self.__qualname__ = owner, name, name

    def __call__(self, *args, **kwargs):
        return self._owner._call("call", self.__name__, f"{self.__name__}()", args, kwargs)

    def __repr__(self):
        return f"<submission function {self.__name__}>"
