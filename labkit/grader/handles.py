"""Objects across the pipe, the grader's side: handles to a submission's objects, and a test's own
objects lent to the submission.

A **handle** (:class:`Handle`) stands for an object that stays in the worker (an instance of the
student's class, anything a call returns that is not data). Its attribute reads and writes (public
names only), calls, ``len``, iteration, ``in``, ``[]``, ``==``, ``hash``, ``repr`` and ``bool``
are requests to the worker (:data:`labkit.grader.objects.OPS`), each under the call's time limit.
:class:`Handles` keeps one handle per worker object (so ``a is b`` holds when the worker says it
is one object), at most ``MAX_HANDLES`` alive at once, and tells the worker which ones the test
dropped. Handles belong to one worker: after a timeout or a crash restarted it, using an old one
is a :class:`~labkit.grader.standin.SubmissionCrashed`, never an answer. The lab's own classes are
:class:`RemoteClass` stand-ins: calling one builds an object in the worker, ``isinstance`` and
``issubclass`` ask the worker, and a test cannot subclass one (it would run student code here).

The **reverse** (:class:`Lent`): objects of a test's own classes (defined in a ``test_*.py``) that
the test passes to the submission stay here; the worker gets a stand-in that asks for their
public attributes (read and write), calls their public methods, and asks for ``==``, ``hash`` and
``bool``. Only objects the test passed are reachable: a value sent back must be data, a handle,
or an object already lent; never a class, a module, a function the test did not pass, or a ``_``
name (no ``__class__``, ``__dict__``, ``__globals__``, no private counter).
"""

from __future__ import annotations

import collections.abc
import sys
import types
import weakref
from pathlib import Path

from labkit.grader.values import encode, module_bytes
from labkit.grader.wire import ProtocolError

MAX_HANDLES = 100_000  # handles alive at once, per worker: more is a protocol error (a crash)
MAX_REPR = 2000  # characters of a worker's repr that are kept
MAX_SNAPSHOTS = 50_000  # snapshots kept at once (the worker keeps at most 4096 current; the rest must be gone)
SNAPSHOT_FIELDS = 64  # fields of one snapshot
MAX_TYPES = 10_000  # classes of the submission's objects, per worker

# Answers the worker must give for the protocol's own operations (Python would refuse others too).
RESULT_TYPES = {"len": int, "hash": int, "bool": bool, "isinstance": bool, "issubclass": bool, "contains": bool,
                "repr": str}


def public_name(name) -> str:
    if type(name) is not str or not name.isidentifier() or name.startswith("_"):
        raise AttributeError(f"{name!r}: only public attributes cross between the grader and a submission")
    return name


class Handles:
    """The handles to one worker's objects, and their snapshots (one table per worker process, dead with it).

    ``snapshots``: number -> {field name: encoded value, or None for a field that must be asked for},
    as the worker sent them (:class:`labkit.grader.objects.Snapshots`), kept current by the worker at
    the end of every request: a handle answers a read from its snapshot whenever no request is in flight."""

    def __init__(self, owner):
        self.owner, self.alive = owner, True
        self.by_number = weakref.WeakValueDictionary()  # number -> its handle, while the test holds it
        self.snapshots: dict[int, dict | None] = {}
        self.types: dict[int, tuple[str, frozenset]] = {}  # type id -> (class name, public method names)
        self.modules: dict[int, tuple[int, object]] = {}  # id() of a test's torch module -> (index, module)
        # ("made" | "dropped", number) in the order they happened, for the next request to tell the worker.
        # Swapped, never cleared: a handle's __del__ (which the garbage collector may run at any allocation)
        # appends to the old list or to the new one, and is never lost.
        self.events: list = []

    def handle(self, number, type_id):
        """The handle for worker object ``number`` (the decoder's hook for "h")."""
        if type(number) is not int or type(type_id) is not int or type_id not in self.types:
            raise ProtocolError("a malformed handle")
        h = self.by_number.get(number)
        if h is None:
            if len(self.by_number) >= MAX_HANDLES:
                raise ProtocolError(f"more than {MAX_HANDLES} of the submission's objects held at once")
            h = object.__new__(Handle)
            for slot, value in (("_table", self), ("_number", number), ("_type", type_id)):
                object.__setattr__(h, slot, value)
            self.by_number[number] = h
            self.events.append(("made", number))  # the worker holds it for us from the next request on
        return h

    def update(self, updates) -> None:
        """Apply a message's ``(new types, [(number, fields or None)], gone numbers)``."""
        if type(updates) is not tuple or len(updates) != 3 or not all(type(u) is list for u in updates):
            raise ProtocolError("malformed snapshot updates")
        types, snaps, gone = updates
        self.add_types(types)
        for item in snaps:
            if type(item) is not tuple or len(item) != 2 or type(item[0]) is not int:
                raise ProtocolError("a malformed snapshot")
            number, fields = item
            if fields is not None and (type(fields) is not list or len(fields) > SNAPSHOT_FIELDS or not all(
                    type(f) is tuple and len(f) == 2 and type(f[0]) is str for f in fields)):
                raise ProtocolError("a malformed snapshot")
            # Values are decoded when read: a handle read from a snapshot is the one handle of its number.
            self.snapshots[number] = None if fields is None else dict(fields)
        for number in gone:
            self.snapshots.pop(number, None)
        if len(self.snapshots) > MAX_SNAPSHOTS:
            raise ProtocolError(f"more than {MAX_SNAPSHOTS} snapshots of the submission's objects")

    def add_types(self, types) -> None:
        if type(types) is not list or len(self.types) + len(types) > MAX_TYPES:
            raise ProtocolError("malformed or too many types")
        for item in types:
            if type(item) is not tuple or len(item) != 3 or type(item[0]) is not int or type(item[1]) is not str \
                    or type(item[2]) is not list:
                raise ProtocolError("a malformed type")
            self.types[item[0]] = (item[1][:80], frozenset(m for m in item[2] if type(m) is str))

    def take_changes(self) -> tuple[list[int], list[int]]:
        """(numbers of the handles made, of those dropped) since the last request, for the worker."""
        events = self.events
        self.events = []
        last = {n: what for what, n in events}
        return (sorted(n for n, what in last.items() if what == "made"),
                sorted(n for n, what in last.items() if what == "dropped"))

    def module(self, module, lend: bool) -> tuple:
        """``("ptmod", index, bytes)`` the first time a test passes this torch module to this worker, then
        ``("ptmod", index, b"")``: the worker keeps one copy of it, as one process keeps one object."""
        if id(module) not in self.modules:
            if not lend:
                raise TypeError("a torch module the test did not pass cannot be handed to a submission")
            self.modules[id(module)] = (len(self.modules), module)  # kept alive: its id stays its own
            return ("ptmod", len(self.modules) - 1, module_bytes(module))
        return ("ptmod", self.modules[id(module)][0], b"")

    def value(self, encoded):
        """A snapshot's field, decoded (plain values and handles without the general decoder)."""
        if type(encoded) is tuple and len(encoded) == 2 and encoded[0] == "v" and \
                type(encoded[1]) in (type(None), bool, int, float, str, bytes):
            return encoded[1]
        if type(encoded) is tuple and len(encoded) == 3 and encoded[0] == "h":
            return self.handle(encoded[1], encoded[2])
        return self.owner._decode(encoded)


class Handle:
    """An object of the submission's, living in its worker. Reads of plain fields are answered from
    its snapshot; every other use is a request to the worker."""

    __slots__ = ("_table", "_number", "_type", "__weakref__")

    def _ask(self, op, *args, **kwargs):
        return self._table.owner._op(op, self, *args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("_"):  # dunder probes (numpy's __array__, copy's __deepcopy__...) stay here
            raise AttributeError(f"{name!r}: only public attributes of a submission's object are read")
        table = self._table
        # Current whenever no request is in flight (in a callback, the student's code is half-way through one).
        fields = table.snapshots.get(self._number) if not table.owner._busy and table.alive else None
        if fields is not None and name in fields:
            encoded = fields[name]
            return self._ask("getattr", name) if encoded is None else table.value(encoded)
        if name in table.types[self._type][1]:  # obj.method(...) is one request, not a read and then a call
            return RemoteMethod(self, name)
        return self._ask("getattr", name)

    def __setattr__(self, name, value):
        self._ask("setattr", public_name(name), value)

    def __delattr__(self, name):
        self._ask("delattr", public_name(name))

    def __call__(self, *args, **kwargs):
        return self._ask("call", *args, **kwargs)

    def __len__(self):
        return self._ask("len")

    def __bool__(self):
        return self._ask("bool")

    def __iter__(self):
        return _items(self._table.owner, self._ask("iter"))  # iter() runs now, each next() when asked for

    def __contains__(self, item):
        return self._ask("contains", item)

    def __getitem__(self, key):
        return self._ask("getitem", key)

    def __setitem__(self, key, value):
        self._ask("setitem", key, value)

    def __delitem__(self, key):
        self._ask("delitem", key)

    def __eq__(self, other):
        # Only the submission's objects are compared by the submission: next to data (a block id, a
        # key) a handle is unequal whatever its __eq__ says, so a lie cannot make `block_id == 3` true.
        return self._ask("eq", other) if type(other) is Handle else NotImplemented

    def __ne__(self, other):
        return self._ask("ne", other) if type(other) is Handle else NotImplemented

    def __hash__(self):
        return self._ask("hash")

    def __repr__(self):
        return self._ask("repr")[:MAX_REPR]

    def __del__(self):
        table = self._table
        if table.alive:
            table.events.append(("dropped", self._number))


class RemoteMethod:
    """``handle.name``, a public method of the submission's object: calling it asks the worker."""

    __slots__ = ("_subject", "__name__")

    def __init__(self, subject: Handle, name: str):
        self._subject, self.__name__ = subject, name

    def __call__(self, *args, **kwargs):
        return self._subject._table.owner._op("method", self._subject, self.__name__, *args, **kwargs)

    def __repr__(self):
        subject = self._subject
        return f"<method {self.__name__} of a submission's {subject._table.types[subject._type][0]}>"


def _items(owner, iterator):
    while True:
        try:
            item = owner._op("next", iterator)
        except StopIteration:
            return
        yield item


class RemoteClass(type):
    """The stand-in for one of the lab's classes (``lab.BlockPool``): a class, for ``isinstance``."""

    def __new__(mcs, name, bases=(), namespace=None, *, owner=None):
        if owner is None:
            raise TypeError(f"a submission's class ({name}'s base) cannot be subclassed by a test under labs grade: "
                            "the subclass would run the student's code in the grader")
        return super().__new__(mcs, name, (), {"__module__": "submission", "__qualname__": name, "_owner": owner})

    def __init__(cls, *args, owner=None):
        super().__init__(cls.__name__, (), {})

    def __call__(cls, *args, **kwargs):
        return cls._owner._call("call", cls.__name__, f"{cls.__name__}()", args, kwargs)

    def __instancecheck__(cls, obj):
        return cls._owner._op("isinstance", obj, cls)

    def __subclasscheck__(cls, sub):
        return cls._owner._op("issubclass", sub, cls)

    def __getattr__(cls, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return cls._owner._op("getattr", cls, name)

    def __repr__(cls):
        return f"<submission class {cls.__name__}>"


def lendable(obj) -> bool:
    """An object the grader may lend to the submission: an instance of a class that a test file
    defines (``test_*.py``), nothing else (not a path, a file, a random generator, a module)."""
    if isinstance(obj, (type, types.ModuleType)) or callable(obj):
        return False
    module = sys.modules.get(type(obj).__module__)
    return Path(getattr(module, "__file__", None) or "").name.startswith("test_")


class Lent:
    """The test's objects lent to one submission: index -> object, kept alive with the stand-in.
    An iterator the test passes (``reversed(blocks)``, a generator) is lent too, for ``next`` only:
    the submission sees its items one by one, when it asks, as in the test's own process."""

    def __init__(self):
        self.objects: list = []
        self.index: dict[int, int] = {}  # id(object) -> index
        self.iterators: set[int] = set()  # indexes of the lent iterators

    def tag(self, obj, lend: bool) -> tuple:
        """``("tobj", index)`` or ``("titer", index)``; a new one only when ``lend`` (an argument)."""
        i = self.index.get(id(obj))
        if i is None:
            iterator = isinstance(obj, collections.abc.Iterator) and not callable(obj)
            if not lend or not (iterator or lendable(obj)):
                raise TypeError(f"a {type(obj).__qualname__} cannot be passed between the grader and a submission")
            i = self.index[id(obj)] = len(self.objects)
            self.objects.append(obj)
            if iterator:
                self.iterators.add(i)
        return ("titer" if i in self.iterators else "tobj", i)

    def get(self, i):
        if type(i) is not int or not 0 <= i < len(self.objects):
            raise ProtocolError("a reference to an object the test never passed")
        return self.objects[i]


def serve_lent(obj, op: str, args: tuple, kwargs: dict, iterator: bool):
    """What the worker asked of a lent object: ``(result, is_method)``. An iterator answers ``next``
    only; an object of the test's class its public attributes and methods, ``==``, ``hash``, ``bool``."""
    if iterator or op == "next":
        if iterator and op == "next" and not args and not kwargs:
            return next(obj), False
    elif op in ("getattr", "setattr", "method"):
        name = public_name(args[0] if args else None)
        if op == "getattr":
            value = getattr(obj, name)
            method = isinstance(value, types.MethodType) and value.__self__ is obj
            return (None, True) if method else (value, False)
        if op == "setattr" and len(args) == 2 and not kwargs:
            setattr(obj, name, args[1])
            return None, False
        if op == "method":
            method = getattr(obj, name)
            if not (isinstance(method, types.MethodType) and method.__self__ is obj):
                raise TypeError(f"{name!r} of a test's object is not one of its methods")
            return method(*args[1:], **kwargs), False
    elif op in ("eq", "ne") and len(args) == 1 and not kwargs:
        return (obj == args[0]) if op == "eq" else (obj != args[0]), False
    elif op in ("hash", "bool") and not args and not kwargs:
        return (hash(obj) if op == "hash" else bool(obj)), False
    raise ProtocolError(f"a malformed request for a test's object ({op!r})")


# --------------------------------------------------------------------------- the lab's functions and kernels


class RemoteFunction:
    def __init__(self, owner, name: str):
        self._owner, self.__name__, self.__qualname__ = owner, name, name

    def __call__(self, *args, **kwargs):
        return self._owner._call("call", self.__name__, f"{self.__name__}()", args, kwargs)

    @property
    def __globals__(self):
        """The submission module's namespace, for tests that monkeypatch what a function calls."""
        return RemoteGlobals(self._owner)

    def __repr__(self):
        return f"<submission function {self.__name__}>"


class RemoteGlobals:
    """The worker module's globals, as far as ``monkeypatch.setitem(fn.__globals__, name, f)`` needs:
    reading gives the stand-in's API; writing a function makes the worker call it back."""

    def __init__(self, owner):
        self._owner = owner

    def __getitem__(self, name):
        try:
            return self._owner._api[name]
        except KeyError:
            raise KeyError(name) from None

    def get(self, name, default=None):
        return self._owner._api.get(name, default)

    def __contains__(self, name):
        return name in self._owner._api

    def __setitem__(self, name, value):
        self._owner._set_global(name, value)

    def __delitem__(self, name):
        self._owner._call("delglobal", name, f"deleting {name}", (), {})


class RemoteKernel:
    """A ``@triton.jit`` kernel of the submission: ``kernel[grid](*args)`` launches it in the worker."""

    def __init__(self, owner, name: str):
        self._owner, self.__name__ = owner, name

    def __getitem__(self, grid):
        if callable(grid):
            raise TypeError("labs grade launches kernels with a tuple grid only")
        grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)

        def launch(*args, **kwargs):
            return self._owner._call("launch", (self.__name__, encode(grid)), f"{self.__name__}[{grid}]", args,
                                     kwargs)

        return launch

    def __repr__(self):
        return f"<submission kernel {self.__name__}>"
