"""Snapshots: the plain public fields of a submission's objects, copied to the grader and brought up to
date before the grader reads them, so that most reads cost no round trip (README.md: what they save).
The worker's side is :class:`Snapshots`, the grader's :class:`Copies`. Staged into the sandbox."""

from __future__ import annotations

import enum
import inspect
import math
import operator
import types

from labkit.grader.values import frozen
from labkit.grader.wire import ProtocolError

_UNSEEN = object()  # in a comparison: a number the worker holds no snapshot of
SNAPSHOT_ITEMS = 64  # fields of one snapshot, and items of a container field (a larger one is asked for)
WATCH_MAX = 4096  # objects whose snapshots the worker keeps current (more are asked for, read by read)
COMPARE_AFTER = 128  # objects a request asks the worker to compare after the student's code ran (see Copies)
RAW_KEEP = 256  # replies after which the worker forgets the field objects of a snapshot it did not compare
RECENT = 64  # generations (calls that ran the student's code) over which a read copy counts as recently read
PREFETCH = 256  # objects a reply may add snapshots of (those its result names, then those their fields name)
ASK = None  # in a snapshot: a public field that is not plain (the grader asks for it when it is read)
# Items of copies the grader keeps per worker (a few hundred bytes each): the most any lab's tests
# need, graded on the reference solutions, is some 15,000 (99-01's engine).
MAX_COPIED = 200_000


# --------------------------------------------------------------------------- the worker's side


def methods_of(cls) -> frozenset:
    """The public plain functions of ``cls`` (what ``obj.name(...)`` calls), looked up without running code."""
    names = set()
    for klass in reversed(inspect.getmro(cls)):
        for name, value in vars(klass).items():
            if not name.startswith("_"):
                (names.add if inspect.isfunction(value) else names.discard)(name)
    return frozenset(names)


class _NotPlain(Exception):
    """A value a snapshot does not hold (an array, a set, a large container...): the grader asks for it."""


class Snapshots:
    """The worker's side: what it last sent of each watched object (``sent``: number -> comparison key),
    the objects named since the last reply (``pending``), the classes the grader has not been told of
    (id, name, public method names), and the numbers of objects that died (``gone``)."""

    def __init__(self, table, refer):
        # table: the worker's handles.ObjectTable (number <-> object; handles imports this module, so the
        # type is named here only). refer(obj) -> ("tobj"/"titer"/"api", ...) or None.
        self.table, self.refer = table, refer
        self.sent: dict[int, tuple | None] = {}  # number -> key of the fields sent (None: not snapshotted)
        # number -> the field objects when its key was last computed (_raw), and the reply that last used
        # them. They are held strongly (the quick check compares identities), so they are dropped once unused
        # for RAW_KEEP replies: a field's value that refers back to its object (a closure over the runner
        # that owns the graph it is stored in) would otherwise keep that object alive for good.
        self.raw: dict[int, tuple] = {}
        self.raw_used: dict[int, int] = {}
        self.replies = 0
        self.pending: list = []  # (number, object) named since the last reply
        self.type_ids: dict[type, int] = {}
        # (type id, name, public method names, public names its data descriptors answer) the grader has not been told
        self.new_types: list = []
        self.gone: list[int] = []
        # Numbers of objects that died, not yet taken out of ``sent``: a death is heard in a weakref
        # callback, which the garbage collector may run at any allocation (in the middle of
        # ``list(self.sent.items())`` too), so it is only noted there. Swapped, never cleared.
        self.dead: list[int] = []
        # class -> (the names its data descriptors answer, its slots read as fields: (name, member))
        self.layouts: dict[type, tuple] = {}
        self.sources: dict[type, tuple] = {}  # class -> what its layout was computed from (_sources)
        # class -> its layout, checked against its sources since the student's code last ran (see layout)
        self.verified: dict[type, tuple] = {}

    def reference(self, obj, hold: bool) -> tuple:
        """``("h", number, type id)`` for ``obj``; it gets a snapshot with the next reply."""
        n = self.table.number(obj, hold=hold)
        cls = type(obj)
        tid = self.type_ids.get(cls)
        if tid is None:
            tid = self.type_ids[cls] = len(self.type_ids) + 1
            computed = sorted(n for n in self.shadowed(cls) if not n.startswith("_"))
            self.new_types.append((tid, cls.__name__[:80], sorted(methods_of(cls)), computed))
        if n not in self.sent:
            self.pending.append((n, obj))
        return ("h", n, tid)

    def died(self, n: int) -> None:
        self.dead.append(n)

    def _bury(self) -> None:
        """Forget the objects that died since the last look; the grader is told of those it had copies of."""
        dead, self.dead = self.dead, []
        for n in dead:
            self.raw.pop(n, None)
            self.raw_used.pop(n, None)
            if self.sent.pop(n, 0) != 0:
                self.gone.append(n)

    def take_types(self) -> list:
        types, self.new_types = self.new_types, []
        return types

    def updates(self, compare=()) -> tuple:
        """``(new types, [(number, fields or None)], gone numbers)`` for the reply: the first snapshots of
        the objects the reply named, and a new one of each object in ``compare`` (numbers: those the
        grader is about to read, the student's code having run since) whose fields changed."""
        snaps = []
        self.code_ran()
        self._bury()
        self.replies += 1
        if self.replies % RAW_KEEP == 0:
            self._drop_unused_raw()
        if compare:
            for n, key in [(n, self.sent.get(n, _UNSEEN)) for n in compare]:
                obj = self.table.peek(n) if key is not None and key is not _UNSEEN else None
                fields = self.plain_fields(obj) if obj is not None else None
                if fields is None:
                    if obj is not None:  # no longer read from its __dict__ (a __getattribute__, a dict
                        # subclass as __dict__): the grader's copy is withdrawn, and every read asks
                        self.sent[n] = None
                        self.raw.pop(n, None)
                        snaps.append((n, None))
                    continue
                raw, old = self._raw(obj, fields), self.raw.get(n)
                self.raw_used[n] = self.replies
                # The same field objects (containers: the same items) as last time, and the class's data
                # descriptors the same set (the very tuple: layout replaces it when they change):
                # nothing to compare.
                if old is not None and raw[0] == old[0] and raw[2] is old[2] and len(raw[1]) == len(old[1]) \
                        and all(map(operator.is_, raw[1], old[1])):
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
                fields = self.plain_fields(obj)
                if fields is not None:
                    self.raw[n], self.raw_used[n] = self._raw(obj, fields), self.replies
                self.sent[n], wire = self.fields(obj)
                snaps.append((n, wire))
                budget -= 1
        self.pending = []
        self._bury()
        gone, self.gone = self.gone, []
        return (self.take_types(), snaps, gone)

    def _drop_unused_raw(self) -> None:
        """Forget the field objects of the snapshots no reply has compared for RAW_KEEP replies (the next
        comparison of one computes its key in full)."""
        oldest = self.replies - RAW_KEEP
        for n in [n for n, used in self.raw_used.items() if used < oldest]:
            del self.raw_used[n]
            self.raw.pop(n, None)

    def fields(self, obj) -> tuple:
        """(comparison key, [(name, encoded value or ASK)]) of ``obj``'s public instance fields; (None, None)
        when reads of it cannot be answered from a snapshot (its class reads attributes its own way)."""
        fields = self.plain_fields(obj)
        if fields is None:
            return None, None
        shadowed = self.shadowed(type(obj))
        keys, wire = [], []
        # Only keys that are str are looked at, before any comparison: another key's __eq__ is the student's.
        items = [(name, value) for name, value in list(fields.items())[:SNAPSHOT_ITEMS] if type(name) is str]
        derived = _derived(type(obj))
        if derived:
            own = dict(items)
            items = [(name, value) for name, value in items if name not in derived]
            items += [(public, own[private]) for public, private in derived.items() if private in own]
        for name, value in items:
            if name.startswith("_") or name in shadowed:
                continue
            try:
                key, encoded = self.leaf(value, 0)
            except _NotPlain:
                key, encoded = ASK, ASK
            keys.append((name, key))
            wire.append((name, encoded))
        return tuple(keys), wire

    def plain_fields(self, obj) -> dict | None:
        """The public fields a read of ``obj`` gives as they are, running no code of the student's: its
        ``__dict__`` and the values of its class's slots (those set); None when its class reads attributes
        its own way (a ``__getattribute__``), or when it has neither. Other data descriptors are left out
        in :meth:`fields`."""
        cls = type(obj)
        if cls.__getattribute__ is not object.__getattribute__:
            return None
        members = self.layout(cls)[1]
        try:
            fields = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            fields = None if not members else {}
        if type(fields) is not dict:
            return None
        if not members:
            return fields
        fields = dict(fields)
        for name, member in members:
            try:  # a slot is a data descriptor: its value, or AttributeError when unset, whatever __dict__ holds
                fields[name] = member.__get__(obj, cls)
            except AttributeError:
                fields.pop(name, None)
        return fields

    def code_ran(self) -> None:
        """The student's code may have run (a property may have been set on a class): each class's layout
        is checked again at its next use."""
        self.verified.clear()

    def layout(self, cls) -> tuple:
        """(names whose reads ``cls``'s data descriptors answer, its public slots read as fields), checked
        once since the student's code last ran (:meth:`code_ran`): looked up in full only when the
        class's namespaces changed (:func:`_sources`). A class whose layout changed gets a new tuple, so
        the quick check of its objects' fields fails. Only the classes of the objects a reply compares
        or sends are checked (checking every class the worker had met, after each call, took 99-02's
        worker a fifth of its time)."""
        found = self.verified.get(cls)
        if found is None:
            found = self.layouts.get(cls)
            if found is None or not _same_sources(cls, self.sources[cls]):
                self.sources[cls] = _sources(cls)
                now = _layout(cls)
                if now != found:
                    found = self.layouts[cls] = now
            self.verified[cls] = found
        return found

    def shadowed(self, cls) -> frozenset:
        """Names whose reads ``cls``'s data descriptors (properties...) answer, not a snapshot."""
        return self.layout(cls)[0]

    def _raw(self, obj, fields: dict) -> tuple:
        """:func:`_raw`, with the class's layout at the time."""
        return _raw(obj, fields) + (self.layout(type(obj)),)

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


# Py_TPFLAGS_IMMUTABLETYPE: a built-in class (object, property, function...), whose namespace cannot change.
_IMMUTABLE = 1 << 8
_BUILT_IN_SHADOWS: dict[type, frozenset] = {}  # built-in class -> the names its own data descriptors shadow
_BUILT_IN_SETS: dict[type, bool] = {}  # built-in class -> whether its objects are data descriptors


# An Enum member's ``name`` and ``value`` are properties of the enum module's that return its ``_name_`` and
# ``_value_``, running no code of the student's: a snapshot holds them (tests read ``request.status.name``
# at every step), wherever the class keeps those very properties. Taken before any student code runs.
_ENUM_FIELDS = {"name": ("_name_", vars(enum.Enum)["name"]), "value": ("_value_", vars(enum.Enum)["value"])}


def _derived(cls) -> dict[str, str]:
    """The public names of ``cls`` whose reads give one of its instance's private fields, running no code
    of the student's (public name -> field): an Enum's ``name`` and ``value``, if its own."""
    mro = inspect.getmro(cls)
    if not any(klass is enum.Enum for klass in mro):
        return {}
    found = {}
    for public, (private, descriptor) in _ENUM_FIELDS.items():
        owner = next((klass for klass in mro if public in vars(klass)), None)
        # The field itself must be read as it is: no data descriptor of the class may answer for it.
        if owner is not None and vars(owner)[public] is descriptor and \
                not any(_is_data_descriptor(type(vars(klass)[private])) for klass in mro if private in vars(klass)):
            found[public] = private
    return found


def _layout(cls) -> tuple[frozenset, tuple]:
    """(names whose reads ``cls``'s data descriptors answer, through its whole MRO, but for those a
    snapshot holds anyway; the slots among them, as ``(name, member)``). A slot is read as a field
    where the class that answers for its name (the first in the MRO to hold it) holds the member
    descriptor ``__slots__`` made there, of a class ``cls`` derives from: reading it runs no code.
    Run before every comparison (a class may have been given a property since): what built-in
    classes contribute, and whether a value's built-in class is a data descriptor, are looked up once."""
    mro = inspect.getmro(cls)
    names: set[str] = set()
    for klass in mro:
        if klass.__flags__ & _IMMUTABLE:
            own = _BUILT_IN_SHADOWS.get(klass)
            if own is None:
                own = _BUILT_IN_SHADOWS[klass] = frozenset(_own_shadowed(klass))
            names.update(own)
        else:
            names.update(_own_shadowed(klass))
    names.difference_update(_derived(cls))
    members = []
    for name in sorted(n for n in names if not n.startswith("_")):
        owner = next(klass for klass in mro if name in vars(klass))
        member = vars(owner)[name]
        if type(member) is types.MemberDescriptorType and not owner.__flags__ & _IMMUTABLE \
                and any(klass is member.__objclass__ for klass in mro):  # `in` would run a metaclass's __eq__
            members.append((name, member))
    return frozenset(names.difference(name for name, _ in members)), tuple(members)


def _namespaces(cls) -> tuple:
    """``cls``'s MRO; the sizes, names and values of the namespaces of its classes that can change (a
    built-in one cannot); the values' classes."""
    mro = cls.__mro__
    sizes, held, kinds = [], [], []
    for klass in mro:
        if not klass.__flags__ & _IMMUTABLE:
            namespace = vars(klass)
            sizes.append(len(namespace))
            held += namespace.keys()
            held += namespace.values()
            kinds += map(type, namespace.values())
    return mro, sizes, held, kinds


def _sources(cls) -> tuple:
    """What :func:`_layout` reads of ``cls``: :func:`_namespaces`, and whether each of the values' classes
    that can change is a data descriptor now (a class of the student's may gain a ``__set__``). Held, so
    that no id is reused while :func:`_same_sources` compares them by identity."""
    found = _namespaces(cls)
    changeable = {id(kind): kind for kind in found[3] if not kind.__flags__ & _IMMUTABLE}.values()
    return (*found, [(kind, _is_data_descriptor(kind)) for kind in changeable])


def _same_sources(cls, then: tuple) -> bool:
    """Whether :func:`_sources` of ``cls`` is still ``then``: the same MRO, the same names bound to the same
    objects of the same classes (compared in C by identity: an ``==`` could run a metaclass's code), the
    same of those classes data descriptors."""
    mro, sizes, held, kinds = _namespaces(cls)
    return mro is then[0] and sizes == then[1] and _identical(held, then[2]) and _identical(kinds, then[3]) \
        and all(_is_data_descriptor(kind) is was for kind, was in then[4])


def _identical(now: list, then: list) -> bool:
    return len(now) == len(then) and all(map(operator.is_, now, then))


def _own_shadowed(klass) -> list[str]:
    return [name for name, value in vars(klass).items() if _is_data_descriptor(type(value))]


def _is_data_descriptor(kind: type) -> bool:
    if not kind.__flags__ & _IMMUTABLE:  # the student's class: it may gain a __set__ at any time
        return hasattr(kind, "__set__") or hasattr(kind, "__delete__")
    found = _BUILT_IN_SETS.get(kind)
    if found is None:
        found = _BUILT_IN_SETS[kind] = hasattr(kind, "__set__") or hasattr(kind, "__delete__")
    return found


def _raw(obj, fields: dict) -> tuple:
    """((class, names), the field values and the items of their containers, flat): if the class is the
    same and every one of these is the same object as last time, no field can read differently (a
    quick check, in C, before the keys). The class counts: ``obj.__class__ = Other``, whose properties
    shadow fields, changes what a read gives without touching ``__dict__``."""
    values = list(fields.values())
    flat = values[:]
    for value in values:
        if type(value) in _CONTAINERS:
            _flatten(value, flat, 0)
    return (type(obj), tuple(fields)), flat


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
        is_data = issubclass(kind, data) or frozen(kind) or module.startswith(("numpy", "torch"))
        found = _OBJECT_KINDS[kind] = not is_data
    return found


# --------------------------------------------------------------------------- the grader's side


class Copies:
    """The grader's copies of one worker's snapshots: number -> {field name: encoded value, or ASK}.
    Applied from each reply; a handle reads from them only while no request is in flight, and only a
    copy compared with its object since the student's code last ran (:meth:`current`).

    The worker does not compare every watched object after each call: that walk of up to WATCH_MAX
    objects a call was most of the grading time of labs whose tests step an engine thousands of times.
    Each reply says whether the student's code may have run (a new ``generation``). The copies read in
    the last few generations (:data:`RECENT`) are those a test is likely to read next: each request names
    them, and when the student's code runs in it, the worker compares them after it, in the same reply
    (:meth:`likely_read`). A test that steps an engine and reads the same objects after each step then
    pays no round trip for its reads. Before reading any other copy of an older generation, the grader
    asks the worker to compare it (a "sync" request), together with every other copy read before that is
    not current, the latest read first (:meth:`to_compare`): one round trip, however many of them the
    test goes on to read."""

    def __init__(self):
        self.fields: dict[int, dict] = {}
        self.items = 0  # what the copies cost, in items of the encoding
        self.generation = 0  # replies that said the student's code may have run
        self.checked: dict[int, int] = {}  # number -> the generation its copy was last compared in
        self.last_read: dict[int, int] = {}  # number -> the generation its copy was last read in, oldest first

    def current(self, number: int) -> bool:
        return self.checked.get(number, -1) == self.generation

    def mark_read(self, number: int) -> None:
        self.last_read.pop(number, None)  # moved to the end: the dict is in the order of the last reads
        self.last_read[number] = self.generation

    def to_compare(self, number: int, most: int) -> list[int]:
        """``number``, and the copies read before that are not current, the most recently read first (the
        next reads are likely theirs): at most ``most`` numbers, for one sync."""
        found = [number]
        for n in reversed(self.last_read):
            if len(found) >= most:
                break
            if n != number and not self.current(n):
                found.append(n)
        return found

    def likely_read(self, most: int) -> list[int]:
        """The copies read in the last :data:`RECENT` generations, the most recently read first: those the
        worker is asked to compare after a call that runs the student's code, at most ``most`` (a copy
        current now is among them: the call may change its object)."""
        oldest, found = self.generation - RECENT, []
        for n in reversed(self.last_read):
            if len(found) >= most or self.last_read[n] < oldest:
                break
            found.append(n)
        return found

    def confirm(self, numbers) -> None:
        """The worker compared these objects and sent what changed: their copies are current."""
        for number in numbers:
            if number in self.fields:
                self.checked[number] = self.generation

    def apply(self, snaps, gone, ran: bool) -> None:
        """A reply's ``[(number, fields or None)]`` and the numbers of objects that died; ``ran``: the
        student's code may have run in that request (the snapshots in the reply were taken after it)."""
        if type(snaps) is not list or type(gone) is not list:
            raise ProtocolError("malformed snapshot updates")
        if ran:  # every copy is of an older generation now, and these snapshots of the new one
            self.generation += 1
        for item in snaps:
            if type(item) is not tuple or len(item) != 2 or type(item[0]) is not int:
                raise ProtocolError("a malformed snapshot")
            number, fields = item
            if fields is not None and (type(fields) is not list or len(fields) > SNAPSHOT_ITEMS or not all(
                    type(f) is tuple and len(f) == 2 and type(f[0]) is str for f in fields)):
                raise ProtocolError("a malformed snapshot")
            self._drop(number)
            if fields is not None:
                self.fields[number] = dict(fields)  # values are decoded when read
                self.checked[number] = self.generation
                self.items += 1 + sum(_items(value, 0) for _, value in fields)
            else:  # withdrawn: no copy to read, or to compare
                self.last_read.pop(number, None)
        for number in gone:
            self._drop(number)
            self.last_read.pop(number, None)
        if self.items > MAX_COPIED:
            raise ProtocolError(f"more than {MAX_COPIED} items in the snapshots of the submission's objects")

    def _drop(self, number) -> None:
        self.checked.pop(number, None)
        old = self.fields.pop(number, None)
        if old is not None:
            self.items -= 1 + sum(_items(value, 0) for value in old.values())


def _items(encoded, depth: int) -> int:
    """What one encoded field value costs: its tuples and lists, and its text by 64 characters."""
    if depth > 8:
        raise ProtocolError("a snapshot nested too deeply")
    if type(encoded) in (tuple, list):
        return 1 + sum(_items(x, depth + 1) for x in encoded)
    if type(encoded) in (str, bytes):
        return 1 + len(encoded) // 64
    return 1
