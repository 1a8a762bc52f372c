"""A submission's objects behind handles: the worker's :class:`ObjectTable` (number -> object), and
the grader's :class:`Handle`, one per number, whose every use is a request (:data:`OPS`) unless a
snapshot answers it. Staged into the sandbox."""

from __future__ import annotations

import contextlib
import operator
import weakref

from labkit.grader.lending import public_name
from labkit.grader.snapshots import ASK, Copies
from labkit.grader.wire import ProtocolError

MAX_HANDLES = 100_000  # handles alive at once, per worker: more is a protocol error (a crash)
MAX_REPR = 2000  # characters of a worker's repr that are kept
MAX_TYPES = 1000  # classes of the submission's objects, per worker
MAX_METHODS = 500  # public method names of one class

# Answers the worker must give for the protocol's own operations (Python would refuse others too).
RESULT_TYPES = {"len": int, "hash": int, "bool": bool, "isinstance": bool, "issubclass": bool, "contains": bool,
                "repr": str}


# --------------------------------------------------------------------------- the worker's side


class ObjectTable:
    """The objects the grader may name: number -> object, a number never reused. Held strongly while the
    grader holds a handle, else weakly where the object allows it; ``on_death(n)`` hears of a death.

    An object that allows no weak reference (an iterator, an object of a class with ``__slots__``) is
    held strongly: while the grader holds a handle to it, and for good once a snapshot names it (the
    grader may read that snapshot later). One that only a handle named is let go with the handle, as in
    one process: held for good, the iterators a test makes at every step kept their containers, and those
    the whole engine they belong to, alive."""

    def __init__(self, on_death=lambda n: None):
        self.strong: dict[int, object] = {}  # number -> object the grader holds a handle to
        self.weak: dict[int, weakref.ref] = {}  # number -> the object, while it lives
        self.numbers: dict[int, int] = {}  # id(object) -> number
        self.pinned: set[int] = set()  # numbers of objects without weak references that a snapshot names
        self.next_number = 1
        self.on_death = on_death

    def number(self, obj, hold: bool = True) -> int:
        """The number of ``obj``, registered if new; ``hold``: the grader gets a handle to it now (else a
        snapshot names it)."""
        n = self.numbers.get(id(obj))
        if n is None:
            n, self.next_number, i = self.next_number, self.next_number + 1, id(obj)
            self.numbers[i] = n
            with contextlib.suppress(TypeError):  # no weak references to it
                self.weak[n] = weakref.ref(obj, lambda _, n=n, i=i: self._forget(n, i))
        if n not in self.weak:  # its death could not be heard of: kept while anything names it
            if not hold:
                self.pinned.add(n)
            hold = True
        if hold:
            self.strong[n] = obj
        return n

    def _forget(self, n: int, i: int) -> None:
        self.weak.pop(n, None)
        if self.numbers.get(i) == n:
            del self.numbers[i]
        self.on_death(n)

    def peek(self, n):
        """Object ``n`` if it lives, else None."""
        obj = self.strong.get(n)
        if obj is None and n in self.weak:
            obj = self.weak[n]()
        return obj

    def get(self, n):
        obj = self.peek(n) if type(n) is int else None
        if obj is None:
            raise LookupError(f"no object number {n!r} in the worker (forgotten, or never handed out)")
        return obj

    def hold(self, numbers) -> None:
        """The grader made handles for these (read from snapshots): keep them alive."""
        for n in numbers if type(numbers) is list else ():
            ref = self.weak.get(n) if type(n) is int else None
            obj = ref() if ref is not None else None
            if obj is not None:
                self.strong[n] = obj

    def release(self, numbers) -> None:
        """The grader dropped its handles to these: they may be freed now (their numbers stay theirs)."""
        for n in numbers if type(numbers) is list else ():
            if type(n) is not int:
                continue
            if n in self.weak:
                self.strong.pop(n, None)
            elif n in self.strong and n not in self.pinned:  # nothing names it now: let go, and forgotten
                obj = self.strong.pop(n)
                if self.numbers.get(id(obj)) == n:
                    del self.numbers[id(obj)]
                self.on_death(n)


# What a handle's use asks of the object it stands for (``subject``): getattr(subject, *args)...
OPS = {
    "getattr": getattr, "setattr": setattr, "delattr": delattr,
    "call": lambda obj, *args, **kwargs: obj(*args, **kwargs),
    "method": lambda obj, name, *args, **kwargs: getattr(obj, name)(*args, **kwargs),
    "len": len, "bool": bool, "repr": repr, "hash": hash, "eq": operator.eq, "ne": operator.ne,
    "iter": iter, "next": next, "contains": operator.contains, "getitem": operator.getitem,
    "setitem": operator.setitem, "delitem": operator.delitem, "isinstance": isinstance, "issubclass": issubclass,
}


# --------------------------------------------------------------------------- the grader's side


class Handles:
    """The handles to one worker's objects, the copies of their snapshots, the classes they belong to
    (one table per worker process, dead with it)."""

    def __init__(self, owner):
        self.owner, self.alive = owner, True
        self.by_number = weakref.WeakValueDictionary()  # number -> its handle, while the test holds it
        self.snapshots = Copies()
        # type id -> (class name, public method names, public names its data descriptors answer when it was
        # first seen: properties and the like; a read of one asks the worker, never a copy)
        self.types: dict[int, tuple[str, frozenset, frozenset]] = {}
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

    def update(self, updates, compared: list[int] = ()) -> None:
        """Apply a message's ``(new types, [(number, fields or None)], gone numbers, the student's code ran)``;
        ``compared``: the numbers the request asked the worker to compare once the student's code had run
        (it did, if it ran: their copies are current)."""
        if type(updates) is not tuple or len(updates) != 4 or not all(type(u) is list for u in updates[:3]) \
                or type(updates[3]) is not bool:
            raise ProtocolError("malformed snapshot updates")
        types, snaps, gone, ran = updates
        self.add_types(types)
        self.snapshots.apply(snaps, gone, ran)
        if ran:
            self.snapshots.confirm(compared)

    def add_types(self, types) -> None:
        if type(types) is not list or len(self.types) + len(types) > MAX_TYPES:
            raise ProtocolError("malformed, or too many types of objects")
        for item in types:
            if type(item) is not tuple or len(item) != 4 or type(item[0]) is not int or type(item[1]) is not str \
                    or type(item[2]) is not list or type(item[3]) is not list:
                raise ProtocolError("a malformed type")
            for names in item[2:]:
                if len(names) > MAX_METHODS or not all(type(m) is str and len(m) <= 100 for m in names):
                    raise ProtocolError("a type with too many methods or computed attributes")
            self.types[item[0]] = (item[1][:80], frozenset(item[2]), frozenset(item[3]))

    def take_changes(self) -> tuple[list[int], list[int]]:
        """(numbers of the handles made, of those dropped) since the last request, for the worker."""
        events = self.events
        self.events = []
        last = {n: what for what, n in events}
        return (sorted(n for n, what in last.items() if what == "made"),
                sorted(n for n, what in last.items() if what == "dropped"))


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
        _, methods, computed = table.types[self._type]
        if name in computed:  # a property's value is in no copy: one request, no sync before it
            return self._ask("getattr", name)
        # Copies are read only while no request is in flight (in a callback, the student's code is half-way
        # through one), and only once the worker has compared them with its objects since that code last ran.
        fields = self._copy()
        if fields is not None and not table.snapshots.current(self._number) and (name not in methods or name in fields):
            table.owner._sync(self._number)
            fields = self._copy()
        if fields is not None and name in fields:
            table.snapshots.mark_read(self._number)
            encoded = fields[name]
            return self._ask("getattr", name) if encoded is ASK else table.owner._read_copy(encoded)
        if name in methods:  # obj.method(...) is one request, not a read and then a call (the worker looks it up)
            return RemoteMethod(self, name)
        return self._ask("getattr", name)

    def _copy(self) -> dict | None:
        """This object's snapshot as the grader holds it, when one may be read now."""
        table = self._table
        return table.snapshots.fields.get(self._number) if not table.owner._busy and table.alive else None

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
        return _remote_items(self._table.owner, self._ask("iter"))  # iter() runs now, each next() when asked for

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


def _remote_items(owner, iterator):
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
