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

import dataclasses
import inspect
import math
import operator
import weakref

SNAPSHOT_ITEMS = 64  # fields of one snapshot, and items of a container field (a larger one is asked for)
WATCH_MAX = 4096  # objects whose snapshots the worker keeps current (more are asked for, read by read)
PREFETCH = 256  # objects a reply may add snapshots of (those its result names, then those their fields name)
ASK = None  # in a snapshot: a public field that is not plain (the grader asks for it when it is read)


class ObjectTable:
    """The objects the grader may name: number -> object. An object keeps its number as long as it
    lives (numbers are never reused), so a handle named again, or read from a snapshot, is the same
    handle. Held strongly while the grader holds a handle to it; otherwise only weakly, where the
    object allows it (what a snapshot mentions, what the grader dropped), else strongly.
    ``on_death(n)`` is told when a weakly held object dies."""

    def __init__(self, on_death=lambda n: None):
        self.strong: dict[int, object] = {}  # number -> object the grader holds a handle to
        self.weak: dict[int, weakref.ref] = {}  # number -> the object, while it lives
        self.numbers: dict[int, int] = {}  # id(object) -> number
        self.next_number = 1
        self.on_death = on_death

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
    """``obj.__dict__`` when a read of its public entries gives them as they are (the class has no
    ``__getattribute__`` of its own), else None. Data descriptors are left to :class:`Snapshots`."""
    if type(obj).__getattribute__ is not object.__getattribute__:
        return None
    try:
        fields = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return fields if type(fields) is dict else None


class _NotPlain(Exception):
    """A value a snapshot does not hold (an array, a set, a large container...): the grader asks for it."""


class Snapshots:
    """What the grader knows of the submission's objects, kept current.

    With every handle the grader may get a **snapshot**: the object's public instance fields that are
    plain (numbers, strings, None; references to objects; lists, tuples and dicts of those, small),
    from which it answers reads without asking. The worker remembers what it sent (``sent``: number
    -> a comparison key of the fields) and, at the end of every request that may have run the
    student's code (a call, a method, a write; an exception too), compares every watched object with
    it and sends the ones that changed. So whenever the grader is not waiting for a reply, each of
    its snapshots equals its object, as a read would give it. Objects that a reply names for the first
    time (its result, and what the new snapshots' fields name, breadth first) get snapshots too, up to
    ``PREFETCH`` a reply and ``WATCH_MAX`` in all; the others are asked for, read by read. A snapshot
    stays until its object dies (``gone``)."""

    def __init__(self, table: ObjectTable, refer):
        self.table, self.refer = table, refer  # refer(obj) -> ("tobj"/"titer"/"api", ...) or None
        self.sent: dict[int, tuple | None] = {}  # number -> key of the fields sent (None: not snapshotted)
        self.raw: dict[int, tuple] = {}  # number -> the field objects when its key was last computed (_raw)
        self.pending: list = []  # (number, object) named since the last reply
        self.type_ids: dict[type, int] = {}
        self.new_types: list = []  # (type id, name, public method names) the grader has not been told
        self.gone: list[int] = []
        self.slots: dict[type, frozenset] = {}  # class -> names shadowed by its data descriptors

    def reference(self, obj, hold: bool) -> tuple:
        """``("h", number, type id)`` for ``obj``; it gets a snapshot with the next reply."""
        n = self.table.number(obj, hold=hold)
        cls = type(obj)
        tid = self.type_ids.get(cls)
        if tid is None:
            tid = self.type_ids[cls] = len(self.type_ids) + 1
            self.new_types.append((tid, cls.__name__[:80], sorted(methods_of(cls))))
        if n not in self.sent:
            self.pending.append((n, obj))
        return ("h", n, tid)

    def died(self, n: int) -> None:
        self.raw.pop(n, None)
        if self.sent.pop(n, 0) != 0:
            self.gone.append(n)

    def take_types(self) -> list:
        types, self.new_types = self.new_types, []
        return types

    def updates(self, full: bool) -> tuple:
        """``(new types, [(number, fields or None)], gone numbers)`` for the reply. ``full``: compare every
        watched object (the student's code may have run); else only add what the reply named."""
        snaps = []
        if full:
            for n, key in list(self.sent.items()):
                obj = self.table.peek(n) if key is not None else None
                fields = plain_fields(obj) if obj is not None else None
                if fields is None:
                    continue
                raw, old = _raw(fields), self.raw.get(n)
                # The same field objects (containers: the same items) as last time: nothing to compare.
                if old is not None and raw[0] == old[0] and len(raw[1]) == len(old[1]) and \
                        all(map(operator.is_, raw[1], old[1])):
                    continue
                new_key, wire = self.fields(obj)
                self.raw[n] = raw
                if new_key != key:
                    self.sent[n] = new_key
                    snaps.append((n, wire))
        budget, i = PREFETCH, 0
        while i < len(self.pending) and budget > 0 and len(self.sent) < WATCH_MAX:
            n, obj = self.pending[i]
            i += 1
            if n not in self.sent:
                fields = plain_fields(obj)
                if fields is not None:
                    self.raw[n] = _raw(fields)
                self.sent[n], wire = self.fields(obj)
                snaps.append((n, wire))
                budget -= 1
        self.pending = []
        gone, self.gone = self.gone, []
        return (self.take_types(), snaps, gone)

    def fields(self, obj) -> tuple:
        """(comparison key, [(name, encoded value or ASK)]) of ``obj``'s public instance fields; (None, None)
        when reads of it cannot be answered from a snapshot (its class reads attributes its own way)."""
        fields = plain_fields(obj)
        if fields is None:
            return None, None
        shadowed = self.shadowed(type(obj))
        keys, wire = [], []
        for name, value in list(fields.items())[:SNAPSHOT_ITEMS]:
            if type(name) is not str or name.startswith("_") or name in shadowed:
                continue
            try:
                key, encoded = self.leaf(value, 0)
            except _NotPlain:
                key, encoded = ASK, ASK
            keys.append((name, key))
            wire.append((name, encoded))
        return tuple(keys), wire

    def shadowed(self, cls) -> frozenset:
        """Names whose reads ``cls``'s data descriptors (properties, slots) answer, not the instance's dict."""
        names = self.slots.get(cls)
        if names is None:
            names = self.slots[cls] = frozenset(
                name for klass in inspect.getmro(cls) for name, value in vars(klass).items()
                if hasattr(type(value), "__set__") or hasattr(type(value), "__delete__"))
        return names

    def leaf(self, value, depth: int) -> tuple:
        """(comparison key, encoding) of one field value. The key tells apart what ``==`` would not
        (1 and True, 0.0 and -0.0) and names objects by number, so comparing keys runs no student code."""
        kind = type(value)
        if value is None or kind in (bool, int, str, bytes):
            if kind in (str, bytes) and len(value) > 4096:
                raise _NotPlain
            return (kind, value), ("v", value)
        if kind is float:
            return (float, value, math.copysign(1.0, value)), ("v", value)
        if kind in (list, tuple, dict):
            if depth >= 2 or len(value) > SNAPSHOT_ITEMS:
                raise _NotPlain
            if kind is dict:
                pairs = [(self.leaf(k, depth + 1), self.leaf(v, depth + 1)) for k, v in list(value.items())]
                return ((dict, tuple((k[0], v[0]) for k, v in pairs)),
                        ("d", [(k[1], v[1]) for k, v in pairs]))
            items = [self.leaf(v, depth + 1) for v in list(value)]
            return (kind, tuple(k for k, _ in items)), ("t" if kind is tuple else "l", [e for _, e in items])
        ref = self.refer(value)
        if ref is not None:
            return ref, ref
        if not _is_object(kind):
            raise _NotPlain
        ref = self.reference(value, hold=False)
        return ref[:2], ref


_CONTAINERS = frozenset((list, tuple, dict))


def _raw(fields: dict) -> tuple:
    """(names, the field values and the items of their containers, flat): if every one of these is the
    same object as last time, no field can read differently (a quick check, in C, before the keys)."""
    values = list(fields.values())
    flat = values[:]
    for value in values:
        if type(value) in _CONTAINERS:
            _flatten(value, flat, 0)
    return tuple(fields), flat


def _flatten(container, out: list, depth: int) -> None:
    if len(container) > SNAPSHOT_ITEMS:
        return  # never in a snapshot (the grader asks for it), so never compared
    out.append(len(container))  # a small int: the same object every time
    items = list(container.values()) if type(container) is dict else container
    if type(container) is dict:
        out.extend(container.keys())
    out.extend(items)
    if depth == 0 and not _CONTAINERS.isdisjoint(set(map(type, items))):
        for item in items:
            if type(item) in _CONTAINERS:
                _flatten(item, out, 1)


_OBJECT_KINDS: dict[type, bool] = {}


def _is_object(kind: type) -> bool:
    """Whether a value of this class crosses as a reference (an object of the student's, a bound
    method...) rather than as data: what a snapshot may name by number."""
    found = _OBJECT_KINDS.get(kind)
    if found is None:
        data = (list, tuple, dict, set, frozenset, complex, bool, int, float, str, bytes, type)
        module = getattr(kind, "__module__", None) or ""
        frozen = dataclasses.is_dataclass(kind) and getattr(kind, "__dataclass_params__", None) is not None \
            and kind.__dataclass_params__.frozen
        found = _OBJECT_KINDS[kind] = not (issubclass(kind, data) or frozen or module.startswith(("numpy", "torch")))
    return found


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
