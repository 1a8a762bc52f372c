"""Objects across the pipe, the worker's side: a submission's objects stay here, a test's stay there.

When a result holds something that is not data (an instance of the student's class, a bound
method, a torch module), the object stays in the worker, registered in an :class:`ObjectTable`
under a number, and crosses as ``("h", number, type name)``: the grader gets a handle
(:mod:`labkit.grader.handles`), and every use of it (an attribute, a method call, ``len``,
``==``...) comes back here as a request ``("op", (name, subject), args, kwargs, ...)`` that
:data:`OPS` answers. The same object always has the same number, so the grader can keep one
handle per object (``a is b`` works there); numbers are never reused, and an object is forgotten
when the grader says its handle is gone.

The reverse: a test may hand the student's code objects of its own (``("tobj", index)``). They
stay in the grader; here each is a :class:`GraderObject`, one per index, whose attribute reads and
writes, public method calls, ``==``, ``hash`` and ``bool`` are asked of the grader, which answers
only for public names of objects the test passed.

Nothing here is trusted: the student's code can change any of it. The grader checks what it is
sent. Standard library only: this file is staged into the sandbox.
"""

from __future__ import annotations

import inspect
import operator
import weakref

SNAPSHOT_DEPTH = 2  # a handle's snapshot holds handles with snapshots of their own, one level down
SNAPSHOT_ITEMS = 64  # fields per snapshot, and items of a container field (a larger one is asked for)


class ObjectTable:
    """The objects the grader may name: number -> object. An object keeps its number as long as it
    lives (numbers are never reused), so a handle named again, or read from a snapshot, is the same
    handle. Held strongly while the grader holds a handle to it; otherwise only weakly, where the
    object allows it (what a snapshot mentions, what the grader dropped), else strongly."""

    def __init__(self):
        self.strong: dict[int, object] = {}  # number -> object the grader holds a handle to
        self.weak: dict[int, weakref.ref] = {}  # number -> the object, while it lives
        self.numbers: dict[int, int] = {}  # id(object) -> number
        self.next_number = 1

    def number(self, obj, hold: bool = True) -> int:
        """The number of ``obj``, registered if new; ``hold``: the grader gets a handle to it now."""
        n = self.numbers.get(id(obj))
        if n is None:
            n, self.next_number, i = self.next_number, self.next_number + 1, id(obj)
            self.numbers[i] = n
            try:
                self.weak[n] = weakref.ref(obj, lambda _, n=n, i=i: self._forget(n, i))
            except TypeError:  # no weak references to it: kept, so that its number stays its own
                hold = True
        if hold:
            self.strong[n] = obj
        return n

    def _forget(self, n: int, i: int) -> None:
        self.weak.pop(n, None)
        if self.numbers.get(i) == n:
            del self.numbers[i]

    def get(self, n):
        obj = self.strong.get(n) if type(n) is int else None
        if obj is None and type(n) is int and n in self.weak:
            obj = self.weak[n]()
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
            if type(n) is int and n in self.weak:
                self.strong.pop(n, None)


def methods_of(cls) -> frozenset:
    """The public plain functions of ``cls`` (what ``obj.name(...)`` calls), looked up without running code."""
    names = set()
    for klass in reversed(inspect.getmro(cls)):
        for name, value in vars(klass).items():
            if not name.startswith("_"):
                (names.add if inspect.isfunction(value) else names.discard)(name)
    return frozenset(names)


def plain_fields(obj) -> dict | None:
    """The public entries of ``obj.__dict__`` that a read gives as they are (no property, no
    ``__getattribute__`` of the class's own): what a snapshot may hold. None: no such dict."""
    cls = type(obj)
    if cls.__getattribute__ is not object.__getattribute__:
        return None
    try:
        fields = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    if type(fields) is not dict:
        return None
    return {k: v for k, v in list(fields.items())[:SNAPSHOT_ITEMS]
            if type(k) is str and not k.startswith("_") and not _data_descriptor(cls, k) and _small(v)}


def _data_descriptor(cls, name) -> bool:
    found = inspect.getattr_static(cls, name, None)
    return hasattr(type(found), "__set__") or hasattr(type(found), "__delete__")


def _small(value) -> bool:
    if type(value) in (list, tuple, dict, set):
        return False  # a container is asked for when read: copying it with every snapshot costs more than it saves
    if type(value) in (str, bytes):
        return len(value) <= 4096
    return not hasattr(value, "__array_interface__") and not type(value).__module__.startswith(("numpy", "torch"))


def _call(obj, *args, **kwargs):
    return obj(*args, **kwargs)


def _method(obj, name, *args, **kwargs):
    return getattr(obj, name)(*args, **kwargs)


# What a handle's use asks of the object it stands for (``subject``): getattr(subject, *args)...
OPS = {
    "getattr": getattr, "setattr": setattr, "delattr": delattr, "call": _call, "method": _method,
    "len": len, "bool": bool, "repr": repr, "hash": hash, "eq": operator.eq, "ne": operator.ne,
    "iter": iter, "next": next, "contains": operator.contains, "getitem": operator.getitem,
    "setitem": operator.setitem, "delitem": operator.delitem, "isinstance": isinstance, "issubclass": issubclass,
}


class GraderObject:
    """A test's own object, living in the grader: every use asks it there (``ask(op, index, *args)``).

    Only public names are asked for; a ``_`` name is an AttributeError at once (the grader would
    refuse it anyway). ``repr`` is answered here, so that printing one costs nothing."""

    __slots__ = ("_ask", "_index")

    def __init__(self, ask, index: int):
        object.__setattr__(self, "_ask", ask)
        object.__setattr__(self, "_index", index)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(f"a test's object has no {name!r} here (public attributes only)")
        return self._ask("getattr", self._index, name)

    def __setattr__(self, name, value):
        if name.startswith("_"):
            raise AttributeError(f"a test's object: {name!r} cannot be set (public attributes only)")
        self._ask("setattr", self._index, name, value)

    def __eq__(self, other):
        return self._ask("eq", self._index, other)

    def __ne__(self, other):
        return self._ask("ne", self._index, other)

    def __hash__(self):
        return self._ask("hash", self._index)

    def __bool__(self):
        return self._ask("bool", self._index)

    def __repr__(self):
        return f"<a test's object #{self._index}>"


class GraderMethod:
    """A public method of a test's object, as ``getattr`` returned it: calling it asks the grader."""

    __slots__ = ("_ask", "_index", "_name")

    def __init__(self, ask, index: int, name: str):
        self._ask, self._index, self._name = ask, index, name

    def __call__(self, *args, **kwargs):
        return self._ask("method", self._index, self._name, *args, **kwargs)

    def __repr__(self):
        return f"<method {self._name} of a test's object #{self._index}>"


class GraderIterator:
    """An iterator the test passed (``reversed(blocks)``): each ``next`` asks the grader for one item."""

    __slots__ = ("_ask", "_index")

    def __init__(self, ask, index: int):
        self._ask, self._index = ask, index

    def __iter__(self):
        return self

    def __next__(self):
        return self._ask("next", self._index)

    def __repr__(self):
        return f"<a test's iterator #{self._index}>"
