"""Values across the pipe: plain data, containers, numpy arrays and scalars, torch tensors, dtypes,
frozen dataclass instances, as tagged tuples of plain values for :mod:`labkit.grader.wire`; anything
else goes to the caller's ``on_object``. Decoding trusts nothing. Staged into the sandbox.

Arrays cross as views, as they are: the memory they live in (a torch storage, a numpy array's base)
crosses once per message as a *buffer*, and each array as its dtype, sizes, strides and offset into
it. So a kernel meets on the far side the layout a test made (K and V as the halves ``kv[:, 0]``,
``kv[:, 1]`` of one pool, ``q`` sliced from a fused ``qkv``), two views of one storage share one
buffer there (a write through one is seen through the other), and what the far side writes into a
buffer can be copied back into the memory it came from (:class:`Layouts`)."""

from __future__ import annotations

import ast
import builtins
import collections
import collections.abc
import dataclasses
import decimal
import fractions
import functools
import itertools
import types

from labkit.grader.wire import HashCount, ProtocolError

MAX_NESTING = 32
RECORD_EXTRAS = 16  # properties of a submission's dataclass whose values cross with its fields
RECORD_ITEMS = 4096  # items of one that can be iterated (a summary unpacked as m, denom, acc)
MADE_CLASSES = 256  # classes made on the far side (named tuples, subclasses of int/float/str); past them, plain
MAX_NAME = 100  # characters of a record's or named tuple's name and field names
# A Fraction or Decimal of the standard library crosses as a value within these (past them, a handle): bits
# of a Fraction's numerator or denominator (the far side normalises it, a gcd), characters of a Decimal.
MAX_EXACT_BITS = 4096
MAX_DECIMAL = 1000
# A buffer is the whole storage a view lives in (the memory beside it included: a kernel that writes
# past a view's end writes where it would in one process) unless that storage is larger than this and
# than four times what the message's views of it span (a small slice of a large pool); then the span
# alone. So a call never sends more than four times what its views need, or this much.
WHOLE_STORAGE_BYTES = 1 << 20
BUFFER_ALIGN = 64  # a buffer starts at a multiple of this in its storage (any dtype's offset divides)
_NUMPY_KINDS = set("biufc")  # bool, signed, unsigned, float, complex
MAX_FIELDS = 64  # fields of a structured numpy dtype (each of the kinds above), or of a named tuple
_TORCH_DTYPES = {"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}


def encode(value, on_object=None, arguments: dict | None = None, layouts: Layouts | None = None,
           plain_subclasses: bool = False, shared: list = ()):
    """``value`` as nested tuples of plain values, tagged by kind. ``on_object(obj)`` turns what is not
    data into a reference (else TypeError); ``arguments`` (``id()`` -> index of the call's arrays): a
    result that *is* one of them crosses as ``("arg", index)``, to come back as the caller's own.
    ``layouts``: where the message's arrays live (:class:`Layouts`; a new one, sending spans, if
    None), kept by a caller that will copy back what the far side writes. ``plain_subclasses``: a
    subclass of bytes or of a container crosses as its plain value (the worker's results; a test's
    own, such as a list that counts its reads, is lent). ``shared``: the buffers of the call being
    answered (as :func:`decode` gave them): an array in one of them crosses as a view of the caller's
    own memory, as a view of an argument is in one process."""
    layouts = Layouts(whole=False, shared=shared) if layouts is None else layouts
    inner = _encode(value, on_object, arguments, layouts, 0, plain_subclasses)
    return ("bufs", layouts.wire(), inner) if layouts.groups else inner


def _encode(value, on_object, arguments, layouts, _depth: int, plain_subclasses: bool = False):
    if _depth > MAX_NESTING:
        raise TypeError("nested too deeply")
    if arguments and id(value) in arguments:
        return ("arg", arguments[id(value)])

    def inner(v):
        return _encode(v, on_object, arguments, layouts, _depth + 1, plain_subclasses)

    kind = type(value)
    if value is None or kind in (bool, int, float, str, bytes):
        return ("v", value)
    if kind in (tuple, list):
        return ("t" if kind is tuple else "l", [inner(v) for v in value])
    if kind in (set, frozenset):
        return ("s" if kind is set else "fs", [inner(v) for v in value])
    if kind is collections.deque:  # a sequence of the standard library (02-01 hashes any sequence of ids)
        return ("dq", [inner(v) for v in value], value.maxlen)
    if kind is dict:
        return ("d", [(inner(k), inner(v)) for k, v in value.items()])
    if kind is complex:
        return ("c", value.real, value.imag)
    # The standard library's exact numbers, which compare and compute with floats as numbers: as a handle,
    # a `max_concurrency` returning a Fraction equalled no float (02-03 graded 22 of 24, pytest 23).
    if kind is fractions.Fraction and _bits(value.numerator, value.denominator) <= MAX_EXACT_BITS:
        return ("fr", value.numerator, value.denominator)
    if kind is decimal.Decimal and len(text := str(value)) <= MAX_DECIMAL:
        return ("dec", text)
    if isinstance(value, Record):
        special = [(k, inner(v)) for k, v in value._special.items()]
        return ("dc", value._name, [(k, inner(v)) for k, v in value._fields.items()],
                [(k, inner(v)) for k, v in value._props.items()],
                None if value._items is None else [inner(v) for v in value._items], *([special] if special else []))
    if isinstance(value, tuple) and isinstance(getattr(kind, "_fields", None), tuple):  # a named tuple
        names = [kind.__name__, *kind._fields]
        if len(names) <= MAX_FIELDS + 1 and all(map(_nameable, names)):
            # Its class's public properties' values too, computed here, as a record's (a `Selection` named
            # tuple whose `rejected` is a property: lost, 04-02 graded 245 of 320 where pytest passes it all).
            props = [(k, v) for k, v in _properties(value, inner) if _nameable(k) and k not in kind._fields]
            return ("nt", names[0], names[1:], [inner(v) for v in value], *([props] if props else []))
        return ("t", [inner(v) for v in value])  # past what the far side makes a class for: a tuple
    if _is_record(value, mutable_too=on_object is None):  # a value: its fields; a mutable one is an object
        return ("dc", kind.__name__, [(f.name, inner(getattr(value, f.name))) for f in dataclasses.fields(value)],
                *_record_extras(value, inner))
    module = kind.__module__ or ""
    try:
        # numpy's str and bytes scalars (an item of an array of names) are subclasses of str and bytes, below:
        # as numpy values they crossed as nothing (a TypeError, "numpy dtype <U10"), where they equal the name.
        if module.startswith("numpy") and not isinstance(value, (str, bytes)) \
                or isinstance(value, type) and (value.__module__ or "").startswith("numpy"):
            return _encode_numpy(value, layouts)  # arrays, scalars, dtypes (np.float32 is a class)
        if module.startswith("torch"):
            return _encode_torch(value, layouts)
    except _NotData:
        if on_object is None:
            raise
        return on_object(value)  # a torch module, a random generator...: an object, not data
    # A subclass of a plain type: its plain value, through the type's own conversion (str() of a
    # `class Mode(str, Enum)` member is "Mode.FULL", its value "full"; an int's __int__ may be redefined),
    # and its class's name: the far side makes a subclass of that name, so that `type(x) is int` is
    # false there too (a test that byte counts are ints exists for such a submission).
    for base, plain in ((int, int.__int__), (float, float.__float__), (str, str.__str__)):
        if isinstance(value, base):
            named = _nameable(kind.__name__)
            return ("vs", base.__name__, kind.__name__, plain(value)) if named else ("v", plain(value))
    if plain_subclasses and kind in (collections.Counter, collections.defaultdict):
        return _encode_counting_dict(value, inner, on_object)
    if plain_subclasses:
        plain = _as_plain(value)
        if plain is not None:
            return _encode(plain, on_object, arguments, layouts, _depth, plain_subclasses)
    if on_object is not None:
        return on_object(value)
    raise TypeError(f"a {kind.__qualname__} cannot be passed between the grader and a submission")


# The factories of a defaultdict that cross by name and are called where it arrives: the standard library's
# own types, which run none of the student's code.
DEFAULT_FACTORIES = {f.__name__: f for f in (int, float, complex, bool, str, bytes, list, dict, set, frozenset, tuple,
                                             collections.Counter, collections.deque, collections.OrderedDict)}


def _encode_counting_dict(value, inner, on_object):
    """A Counter or a defaultdict as itself, so that reading a missing key gives what it gives in one process
    (a Counter's 0, the factory's value); crossed as a plain dict, it raised KeyError. A factory of
    :data:`DEFAULT_FACTORIES` crosses by name. Any other (a lambda, the student's class) is the student's code,
    which the grader never runs: it crosses as a reference, so that a missing key's default is made by the
    factory in the worker, as a call of the submission's."""
    pairs = [(inner(k), inner(v)) for k, v in value.items()]
    if type(value) is collections.Counter:
        return ("d", pairs, "Counter")
    factory = value.default_factory
    name = next((name for name, known in DEFAULT_FACTORIES.items() if known is factory), None)
    return ("d", pairs, ("defaultdict", name if name is not None or factory is None else on_object(factory)))


def _as_plain(value):
    """A subclass of bytes or of a container (a list with its own repr, an OrderedDict, a subclass of
    Counter), or of numpy's array or torch's tensor, as the plain type it derives from, which is what a
    test compares it with (an array a view of the same memory); else None."""
    for klass in type(value).__mro__:
        if (klass.__module__, klass.__name__) == ("numpy", "ndarray"):
            return klass.view(value, klass)
        if (klass.__module__, klass.__name__) == ("torch", "Tensor"):
            return klass.as_subclass(value, klass)
    for base in (bytes, tuple, list, dict, set, frozenset):
        if isinstance(value, base):
            return base(value)
    # The standard library's wrappers, which equal the plain container they hold: as a handle, one equalled
    # nothing a test compares it with (02-01 handing out a `collections.UserList` of blocks graded 25 of 32,
    # "got [], expected []", where pytest passes it all).
    for wrapper, base in ((collections.UserList, list), (collections.UserDict, dict)):
        if isinstance(value, wrapper):
            return base(value)
    if _only_a_mapping(value):
        try:
            return dict(value)
        except Exception:  # one that cannot be read through stays a handle
            return None
    return collections.deque(value, value.maxlen) if isinstance(value, collections.deque) else None


def _only_a_mapping(value) -> bool:
    """Whether ``value`` is a ``types.MappingProxyType``, or an instance of a ``collections.abc.Mapping``
    that is only that: its class's ``==`` is ``Mapping``'s (a mapping equals any mapping of the same items),
    and neither the class beyond ``Mapping`` nor the instance has a public name of its own. In one process
    such a result equals the dict a test compares it with; as a handle it equalled nothing (99-01 with an
    engine whose ``generate`` returns a ``MappingProxyType``, or such a ``Mapping``: graded 27 of 30, pytest
    30). One with methods or fields of its own stays a handle, as any object does."""
    kind = type(value)
    if kind is types.MappingProxyType:
        return True
    if not isinstance(value, collections.abc.Mapping) or kind.__eq__ is not collections.abc.Mapping.__eq__:
        return False
    mapping = set(dir(collections.abc.Mapping))
    own = getattr(value, "__dict__", {})
    names = [n for klass in kind.__mro__ for n in vars(klass)] + (list(own) if type(own) is dict else [])
    return all(type(n) is not str or n.startswith("_") or n in mapping for n in names)


def _bits(*numbers: int) -> int:
    return max(n.bit_length() for n in numbers)


def _record_extras(value, inner) -> tuple:
    """What a dataclass instance answers beyond its fields, computed where it lives (it crosses by
    value): its class's public properties (their values) and its instance's other public attributes, and
    its items if its class defines
    ``__iter__`` (a summary a test unpacks as ``m, denom, acc``). One that raises or cannot cross is
    left out: on the far side it is missing, a property as an AttributeError, items as a TypeError."""
    props = _properties(value, inner)
    # The public attributes its instance holds beyond its fields (what `__post_init__` sets with
    # `object.__setattr__`: a budget's totals so written were missing, 04-05 graded 78 of 88, pytest 88).
    taken = {name for name, _ in props} | {f.name for f in dataclasses.fields(value)}
    own = getattr(value, "__dict__", None)
    own = own if type(own) is dict else {}
    for name in sorted(n for n in own if type(n) is str and not n.startswith("_") and n not in taken):
        if len(props) >= RECORD_EXTRAS:
            break
        try:
            props.append((name, inner(own[name])))
        except Exception:  # left out, as a property that cannot cross is
            continue
    items = record_items(value)
    try:
        items = None if items is None else [inner(v) for v in items]
    except Exception:
        items = None
    special = _record_special(value, inner)
    return (props, items, special) if special else (props, items)


def _record_special(value, inner) -> list:
    """``[(name, inner(answer))]`` for what the class of a dataclass instance that crosses by value answers
    itself, of ``np.asarray`` (its ``__array__``), ``len`` and ``bool``: in one process a result so written
    is an array to numpy (04-01 with outputs in a frozen dataclass with ``__array__`` and a ``dtype``
    property graded 19 of 89, pytest 89), and ``len`` or ``bool`` of it is its own. One that raises or cannot
    cross is left out, as a property is."""
    defines = {name for klass in type(value).__mro__[:-1] for name in vars(klass)}
    special = []
    for name, answers in (("array", ("__array__",)), ("len", ("__len__",)), ("bool", ("__bool__", "__len__"))):
        if defines.isdisjoint(answers):
            continue
        try:
            if name == "array":
                import numpy as np

                got = np.asarray(value)
                if got.dtype.kind not in _NUMPY_KINDS:
                    continue
            else:
                got = len(value) if name == "len" else bool(value)
            special.append((name, inner(got)))
        except Exception:
            continue
    return special


def _properties(value, inner) -> list:
    """``[(name, inner(value))]`` for the public properties of ``value``'s class, ``functools.cached_property``
    ones included (a frozen dataclass may have them: they write the instance's ``__dict__`` directly; 04-02
    with a ``margin`` so written graded 317 of 320, where pytest passes it all), at most :data:`RECORD_EXTRAS`,
    by name; one that raises or cannot cross is left out (on the far side, an AttributeError)."""
    kind, props = type(value), []
    names = {name for klass in kind.__mro__[:-1] for name, attr in vars(klass).items()
             if not name.startswith("_") and isinstance(attr, (property, functools.cached_property))}
    for name in sorted(names)[:RECORD_EXTRAS]:
        try:
            props.append((name, inner(getattr(value, name))))
        except Exception:  # this one is left out; the others still cross
            continue
    return props


def plain_container(value):
    """A subclass of list, dict, set or deque, or a ``collections.UserList`` or ``UserDict``, that a result
    crosses as its plain value (a list with its own ``repr``, an OrderedDict: :func:`_as_plain`), or a Counter
    or defaultdict (which cross as themselves, and change as a dict does), as that plain value (a copy); else
    None."""
    kind = type(value)
    if kind in (list, dict, set, collections.deque) or not isinstance(value, _FOLLOWED_AS_PLAIN) \
            or _is_record(value, mutable_too=False) or (kind.__module__ or "").startswith(("numpy", "torch")):
        return None
    return _as_plain(value)


_FOLLOWED_AS_PLAIN = (list, dict, set, collections.deque, collections.UserList, collections.UserDict,
                      collections.abc.Mapping, types.MappingProxyType)


def record_items(value) -> list | None:
    """The items of a dataclass instance that crosses by value, if its class defines ``__iter__``, or
    ``__getitem__`` (the old sequence protocol: ``m, denom, acc = summary`` calls it with 0, 1, 2... until
    IndexError; a summary written so graded 124 of 158 in 04-04, where pytest passes it all), at most
    :data:`RECORD_ITEMS`; else None."""
    if not any("__iter__" in vars(klass) or "__getitem__" in vars(klass) for klass in type(value).__mro__[:-1]):
        return None
    try:
        got = list(itertools.islice(iter(value), RECORD_ITEMS + 1))
    except Exception:
        return None
    return got if len(got) <= RECORD_ITEMS else None


def crossing_parts(value) -> list[tuple] | None:
    """The parts of ``value`` as a result crosses (the worker's encoding, in its order of checks), where
    it crosses as a tuple or a record: ``[(step, part)]``, a step an index of the tuple, or of a
    record's items, or a record's field name; None for anything else. Results' containers and arrays
    are reached through these (:func:`labkit.grader.containers.outer_containers`)."""
    kind = type(value)
    if kind is tuple or isinstance(value, tuple) and isinstance(getattr(kind, "_fields", None), tuple):
        return list(enumerate(value))  # a plain or a named tuple
    if _is_record(value, mutable_too=False):
        parts = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
        return parts + list(enumerate(record_items(value) or ()))
    if (kind.__module__ or "").startswith(("numpy", "torch")) or not isinstance(value, tuple):
        return None
    return list(enumerate(tuple(value)))  # another tuple subclass crosses as its plain tuple


def _is_record(value, mutable_too: bool) -> bool:
    """A dataclass instance that crosses by value: a frozen one (a value has no identity to keep),
    or any one where no object can stay behind (no ``on_object``)."""
    return not isinstance(value, type) and dataclasses.is_dataclass(value) and (mutable_too or frozen(type(value)))


def frozen(cls: type) -> bool:
    """Whether ``cls`` is a frozen dataclass."""
    return dataclasses.is_dataclass(cls) and bool(getattr(getattr(cls, "__dataclass_params__", None), "frozen", False))


class _NotData(TypeError):
    """An object of numpy or torch that is not an array, a scalar or a dtype (a module, a generator)."""


def _encode_numpy(value, layouts):
    import numpy as np

    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return ("npdt", _dtype_wire(np.dtype(value)))
    if isinstance(value, np.generic):
        return ("nps", _dtype_wire(value.dtype), value.tobytes())
    if isinstance(value, np.ndarray):
        _checked_numpy_dtype(value.dtype)
        view = layouts.numpy_view(value)
        if view is not None:
            return view
        return ("nd", _dtype_wire(value.dtype), tuple(int(n) for n in value.shape),
                np.ascontiguousarray(value).tobytes(), bool(value.flags.writeable))
    raise _NotData(f"a {type(value).__qualname__} cannot be passed between the grader and a submission")


def _checked_numpy_dtype(dtype):
    """``dtype`` if its values are numbers: one of the kinds above, or a structured dtype of at most
    MAX_FIELDS fields of those kinds (a table of columns); else TypeError."""
    fields = [dtype] if dtype.fields is None else [dtype.fields[name][0] for name in dtype.names]
    if dtype.subdtype is not None or len(fields) > MAX_FIELDS or \
            any(f.kind not in _NUMPY_KINDS or f.fields is not None or f.subdtype is not None for f in fields):
        raise TypeError(f"numpy dtype {dtype} cannot be passed between the grader and a submission")
    return dtype


def _dtype_wire(dtype):
    """A checked dtype as it crosses: its string (``"<f8"``), or a structured one's fields as
    ``("struct", [(name, dtype string, byte offset)], itemsize)``."""
    _checked_numpy_dtype(dtype)
    if dtype.fields is None:
        return dtype.str
    return ("struct", [(name, dtype.fields[name][0].str, dtype.fields[name][1]) for name in dtype.names],
            dtype.itemsize)


def _encode_torch(value, layouts):
    import torch

    if isinstance(value, torch.dtype):
        return ("ptdt", _torch_dtype_name(value))
    if isinstance(value, torch.device):
        return ("ptdev", value.type)
    if isinstance(value, torch.Tensor):
        name = _torch_dtype_name(value.dtype)
        # Whether it requires grad crosses with it (a leaf there: its graph stays here): numpy refuses such a
        # tensor in one process, and 04-07 hands `rank_summaries` a `q` that does, so that a conversion
        # through numpy fails (dropped, `q.float().numpy()` passed under labs grade what pytest fails).
        grad = (True,) if value.requires_grad else ()
        if value.device.type == "meta":  # shape and dtype only, no data
            return ("pt", name, tuple(int(n) for n in value.shape), "meta", b"", *grad)
        view = layouts.torch_view(value, name)
        if view is not None:
            return (*view, *grad)
        raw = tensor_bytes(value).tobytes() if value.numel() else b""
        return ("pt", name, tuple(int(n) for n in value.shape), value.device.type, raw, *grad)
    raise _NotData(f"a {type(value).__qualname__} cannot be passed between the grader and a submission")


def tensor_bytes(t):
    """The bytes of tensor ``t``'s elements in row-major order, as a uint8 numpy array (a copy, on the
    CPU). Through a fresh tensor: ``contiguous()`` keeps a one-element slice's stride of 2, which
    a view as bytes refuses."""
    import torch

    plain = torch.empty(t.shape, dtype=t.dtype).copy_(t.detach())
    return plain.reshape(-1).view(torch.uint8).numpy()


class Layouts:
    """Where one message's arrays live: a group per torch storage (per device) or numpy base array,
    with the byte range its views cover. Each group crosses once, as a buffer; each array as a view
    of it. The sender of a call keeps this to copy back what the far side wrote (:meth:`copy_back`).

    ``whole``: a group's buffer is its whole storage (the grader's arguments: the memory beside a view
    is there, as in one process), unless that is past :data:`WHOLE_STORAGE_BYTES` and four times the
    views' span; otherwise (replies) the span alone, and an array that is a sparse view of a large
    storage crosses as a copy. An array whose elements overlap in memory (``expand``) crosses as a
    copy in both: its logical size is never more than the bytes that cross."""

    def __init__(self, whole: bool, shared: list = ()):
        self.whole, self.shared = whole, shared
        self.groups: list[_Group] = []
        self._by_key: dict = {}

    def _shared(self, memory) -> int | None:
        """The index of the call's buffer that ``memory`` (a numpy root, or a storage's address) is, if any."""
        for i, buffer in enumerate(self.shared):
            if buffer is memory or (type(memory) is int and hasattr(buffer, "untyped_storage")
                                    and buffer.untyped_storage().data_ptr() == memory):
                return i
            if isinstance(getattr(memory, "base", None), _Memory) and memory.base.base is buffer:
                return i  # the read-only memory made over a buffer that no flag may write (see _decode)
        return None

    def _group(self, key, kind: str, device: str, owner, origin: int, total: int, shared=None) -> _Group:
        group = self._by_key.get(key)
        if group is None:
            group = self._by_key[key] = _Group(len(self.groups), kind, device, owner, origin, total, shared)
            self.groups.append(group)
        return group

    def memory(self, index) -> tuple:
        """For a reply's view of the call's buffer ``index``: (kind, a uint8 array or tensor over the whole
        memory of that group, the offset of byte 0 of the buffer that crossed, negated, "a"): its views
        are made over the caller's own memory, as views of an argument are in one process."""
        if type(index) is not int or not 0 <= index < len(self.groups):
            raise ProtocolError("a view of an unknown argument's memory")
        group = self.groups[index]
        if group.kind == "pt":
            import torch

            storage = group.owner.untyped_storage()
            base = torch.empty(0, dtype=torch.uint8, device=group.owner.device).set_(storage, 0, (storage.nbytes(),))
        else:
            import numpy as np

            base = np.asarray(_Memory(group.origin, group.total, group.owner, group.owner.flags.writeable))
        return (group.kind, base, -group.start, "a")

    def _keep_as_view(self, logical: int, first: int, last: int) -> bool:
        span = last - first
        return logical <= span and (self.whole or span <= 4 * logical + (1 << 20))

    def torch_view(self, t, name: str):
        """``("ptv", group, dtype, sizes, strides, byte offset in the storage)``, or None for a copy."""
        numel, itemsize = t.numel(), t.element_size()
        sizes, strides = tuple(int(n) for n in t.shape), tuple(int(s) for s in t.stride())
        if not numel or min(strides, default=0) < 0:
            return None
        first = t.storage_offset() * itemsize
        last = first + (sum((n - 1) * s for n, s in zip(sizes, strides, strict=True)) + 1) * itemsize
        storage = t.untyped_storage()
        shared = self._shared(storage.data_ptr())
        if shared is None and not self._keep_as_view(numel * itemsize, first, last):
            return None
        group = self._group(("pt", str(t.device), storage.data_ptr()), "pt", t.device.type, t.detach(), 0,
                            storage.nbytes(), shared)
        group.cover(first, last)
        return ("ptv", group.index, name, sizes, strides, first)

    def numpy_view(self, a):
        """``("ndv", group, dtype, shape, byte strides, byte offset of element 0, writeable)``, or None."""
        import numpy as np

        if not a.size:
            return None
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        low, high = _numpy_bounds(a)
        root_low, root_high = _numpy_bounds(root) if root.size else (low, high)
        if not root_low <= low <= high <= root_high:  # not inside its base (a foreign buffer): on its own
            root, root_low, root_high = a, low, high
        shared = self._shared(root)
        if shared is None and not self._keep_as_view(a.size * a.itemsize, low, high):
            return None
        group = self._group(("nd", id(root)), "nd", "cpu", root, root_low, root_high - root_low, shared)
        if self.whole and group.access is None:
            group.access = _access(root)
        group.cover(low - root_low, high - root_low)
        group.views.append(a)
        return ("ndv", group.index, _dtype_wire(a.dtype), tuple(int(n) for n in a.shape),
                tuple(int(s) for s in a.strides), a.ctypes.data - root_low, bool(a.flags.writeable))

    def wire(self) -> list:
        return [group.wire(self.whole) for group in self.groups]

    def copy_back(self, index, raw) -> None:
        """Write ``raw``, group ``index``'s buffer as the far side left it, into the memory it came from:
        a torch storage's range whole (torch has no read-only tensors), a numpy base through the
        call's views of it, read-only ones included: in one process a submission may make a read-only
        array writeable again (``flags.writeable = True``) and write through it, unless no flag can make
        its memory writeable (:func:`_access` "l": then neither can one in the worker, and what comes
        for it is not written)."""
        if type(index) is not int or not 0 <= index < len(self.groups) or type(raw) is not bytes:
            raise ProtocolError("an in-place update of an unknown buffer")
        group = self.groups[index]
        if len(raw) != group.end - group.start:
            raise ProtocolError("an in-place update of the wrong size")
        if group.kind == "pt":
            import torch

            with torch.no_grad():
                group.bytes_view().copy_(torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(group.owner.device))
            return
        import numpy as np

        if group.access == "l":
            return
        far = np.frombuffer(raw, dtype=np.uint8)
        for view in group.views:
            offset = view.ctypes.data - group.origin - group.start
            written = np.ndarray(view.shape, view.dtype, buffer=far, offset=offset, strides=view.strides)
            writable_alias(view)[...] = written


    def made_writeable(self, index) -> None:
        """The call made the read-only owner of buffer ``index`` (reached through a view's ``base``)
        writeable: the test's is made so too, as the flag is the test's own array's in one process."""
        if type(index) is not int or not 0 <= index < len(self.groups) or type(self.groups[index].access) is not tuple:
            raise ProtocolError("a flag update of an unknown array")
        _writeable(self.groups[index].owner, True)

    def relaid(self, index, layout, leaves: list) -> None:
        """The call changed argument array ``index`` in place beyond its bytes (:func:`array_layout`; for torch,
        the storage offset as the change the call made to it): the test's array is changed so too, as in one
        process it is the same array. A numpy array as numpy changes one (its dtype, then its shape: numpy
        refuses what it would refuse there, and makes the strides), a torch tensor within its own storage
        (``set_`` checks no bounds); anything else is a broken protocol."""
        array = leaves[index] if type(index) is int and 0 <= index < len(leaves) else None
        kind = {"numpy": "nd", "torch": "pt"}.get(type(array).__module__)
        if type(layout) is not tuple or not layout or layout[0] != kind or len(layout) != (5 if kind == "nd" else 6):
            raise ProtocolError("a layout update of an unknown array")
        try:
            if kind == "nd":
                _, shape, strides, dtype, writeable = layout
                if _numpy_dtype(dtype) != array.dtype:
                    array.dtype = _numpy_dtype(dtype)
                if _shape(shape) != array.shape:
                    array.shape = shape
                if type(writeable) is not bool:
                    raise ProtocolError("a malformed numpy layout")
                _writeable(array, writeable)
                return
            import torch

            _, sizes, strides, moved, dtype, grad = layout
            offset, itemsize = array.storage_offset() + moved, array.element_size()
            if _torch_dtype(dtype) != array.dtype or type(grad) is not bool or type(strides) is not tuple \
                    or not all(type(n) is int and n >= 0 for n in strides) or type(moved) is not int:
                raise ProtocolError("a malformed torch layout")
            _Views([], None).check(_shape(sizes), tuple(n * itemsize for n in strides), offset * itemsize, itemsize,
                                   array.untyped_storage().nbytes(), own=True)
            with torch.no_grad():
                array.set_(array.untyped_storage(), offset, sizes, strides)
            array.requires_grad_(grad)
        except (ValueError, TypeError, AttributeError, RuntimeError) as err:
            raise ProtocolError(f"an argument's layout that cannot be made: {err}") from None


def array_layout(a) -> tuple:
    """What a call may change of an argument array in place besides its bytes, as it crosses: numpy's
    ``("nd", shape, strides, dtype, writeable)`` (``q.shape = ...``, ``q.dtype = ...``, ``flags.writeable``),
    torch's ``("pt", sizes, strides, storage offset, dtype, requires grad)`` (``unsqueeze_``, ``t_``,
    ``set_``, ``requires_grad_``)."""
    if type(a).__module__.startswith("numpy"):
        return ("nd", tuple(map(int, a.shape)), tuple(map(int, a.strides)), _dtype_wire(a.dtype),
                bool(a.flags.writeable))
    return ("pt", tuple(map(int, a.shape)), tuple(map(int, a.stride())), int(a.storage_offset()),
            _torch_dtype_name(a.dtype), bool(a.requires_grad))


def _writeable(array, flag: bool) -> None:
    """Set numpy ``array``'s writeable flag, where numpy would let the worker (else a broken protocol)."""
    if flag and not array.flags.writeable and not may_be_written(array):
        raise ProtocolError("a flag update of an array no flag can make writeable")
    array.flags.writeable = flag


class _Group:
    """One storage (or numpy base) of a message: ``origin`` its first byte's address (numpy; 0 for a
    torch storage, addressed by offset), ``total`` its size, ``[low, high)`` the bytes its views cover,
    ``[start, end)`` the bytes that crossed."""

    def __init__(self, index, kind, device, owner, origin, total, shared=None):
        self.index, self.kind, self.device, self.owner = index, kind, device, owner
        self.origin, self.total = origin, total
        self.shared = shared  # the index of the call's buffer it is (a reply's view of an argument), or None
        self.low, self.high, self.start, self.end = total, 0, 0, 0
        self.views: list = []  # numpy: the arrays of this base in the message (they get copies back)
        # numpy, the grader's arguments: how a flag may make this memory writeable in one process (_access)
        self.access: str | tuple | None = None

    def cover(self, first: int, last: int) -> None:
        self.low, self.high = min(self.low, first), max(self.high, last)

    def wire(self, whole: bool) -> tuple:
        if self.shared is not None:  # the caller has these bytes: it makes the view over its own
            return ("argument", self.shared)
        if whole and self.total <= max(WHOLE_STORAGE_BYTES, 4 * (self.high - self.low)):
            self.start, self.end = 0, self.total
        else:
            self.start, self.end = self.low - self.low % BUFFER_ALIGN, self.high
        view = self.bytes_view()
        raw = view.cpu().numpy().tobytes() if self.kind == "pt" else view.tobytes()
        if type(self.access) is tuple and (self.start, self.end) != (0, self.total):
            self.access = "l"  # its span alone crossed: the far side cannot make the owner, so no flag may write
        return (self.kind, self.device, self.start, raw, self.access or "w")

    def bytes_view(self):
        """The bytes ``[start, end)`` of the storage, as a uint8 tensor (torch) or array (numpy) over them."""
        if self.kind == "pt":
            import torch

            empty = torch.empty(0, dtype=torch.uint8, device=self.owner.device)
            return empty.set_(self.owner.untyped_storage(), self.start, (self.end - self.start,))
        import numpy as np

        return np.asarray(_Memory(self.origin + self.start, self.end - self.start, self.owner))


class _Memory:
    """Bytes of a numpy base array, by address, for numpy to view (read-only unless ``writeable``); keeps
    the base alive."""

    def __init__(self, address: int, size: int, base, writeable: bool = False):
        self.base = base
        self.__array_interface__ = {"data": (address, not writeable), "shape": (size,), "typestr": "|u1",
                                    "version": 3}


def _numpy_bounds(a) -> tuple[int, int]:
    """The addresses of the first and one past the last byte ``a`` uses."""
    low = high = a.ctypes.data
    for n, stride in zip(a.shape, a.strides, strict=True):
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return low, high + a.itemsize


def _access(root):
    """How code handed views of numpy array ``root`` (their last base, or the array itself) may write its
    memory in one process, by numpy's rule for ``flags.writeable = True``: "w" where ``root`` is
    writeable, or is not and a flag makes it and every view of it so (its memory is a writeable
    buffer's); ``("o", dtype, shape)`` where it is a read-only array that owns its memory (a flag
    makes it writeable, never a view of it); "l" where no flag can (read-only bytes). The worker makes
    each so (:func:`_buffers`); an owner it cannot make (not C-contiguous) is "l"."""
    if root.flags.writeable:
        return "w"
    if root.flags.owndata:
        return ("o", _dtype_wire(root.dtype), tuple(int(n) for n in root.shape)) if root.flags.c_contiguous else "l"
    return "w" if may_be_written(root) else "l"


def may_be_written(array) -> bool:
    """Whether numpy lets ``array`` be written, or be made writeable by its flag (numpy's own rule,
    tried on ``array`` and put back as it was)."""
    import warnings

    if array.flags.writeable:
        return True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns about some arrays made writeable; the answer is the same
        try:
            array.flags.writeable = True
        except ValueError:
            return False
    array.flags.writeable = False
    return True


def writable_alias(view):
    """An array over ``view``'s memory, writeable whatever ``view``'s flag says (for copying back)."""
    import numpy as np

    low, high = _numpy_bounds(view)
    memory = np.asarray(_Memory(low, high - low, view, writeable=True))
    return np.ndarray(view.shape, view.dtype, buffer=memory, offset=view.ctypes.data - low, strides=view.strides)


def _torch_dtype_name(dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in _TORCH_DTYPES:
        raise TypeError(f"torch dtype {name} cannot be passed between the grader and a submission")
    return name


# --------------------------------------------------------------------------- decoding


def decode(data, hooks: dict | None = None, buffers: list | None = None, max_view_bytes: int | None = None,
           shared: Layouts | None = None):
    """The inverse of :func:`encode`; ProtocolError on anything malformed. ``hooks``: tag -> function of
    the payload, for the tags only one side accepts (references: "h", "api", "cb", "tobj", "arg"...),
    and "record": a function of a decoded :class:`Record` (the worker rebuilds the student's dataclass).
    ``buffers``: a list that gets the message's buffers (uint8 tensors and arrays the views share),
    in their order on the wire. ``max_view_bytes``: the most that the views may hold together.
    ``shared``: the layouts of the call a reply answers, whose memory its views of arguments are of."""
    try:
        if type(data) is tuple and len(data) == 3 and data[0] == "bufs":
            _, wired, inner = data
            made = _buffers(_checked(wired, list, "buffers"), shared)
            if buffers is not None:
                buffers.extend(base for _, base, _, _ in made)
            return _decode(inner, hooks or {}, 0, _Views(made, max_view_bytes))
        return _decode(data, hooks or {}, 0, _Views([], max_view_bytes))
    except ProtocolError:
        raise
    except Exception as err:  # malformed shapes, bad dtype strings, wrong arity (unpacking the payload)...
        raise ProtocolError(f"malformed value: {type(err).__name__}: {err}") from None


def _buffers(wired: list, shared: Layouts | None = None) -> list:
    """(kind, uint8 tensor or array holding the bytes, offset of its first byte in the sender's storage,
    access: :func:`_access`'s answer for the memory it came from; for an owner the array holds the bytes
    as that read-only owner); ``("argument", index)``: the memory of the call's buffer ``index`` itself
    (:meth:`Layouts.memory`)."""
    made = []
    for item in wired:
        if type(item) is tuple and len(item) == 2 and item[0] == "argument" and shared is not None:
            made.append(shared.memory(item[1]))
            continue
        if type(item) is not tuple or len(item) != 5:
            raise ProtocolError("a malformed buffer")
        kind, device, start, raw, access = item
        if kind not in ("pt", "nd") or type(start) is not int or start < 0 or type(raw) is not bytes:
            raise ProtocolError("a malformed buffer")
        import numpy as np

        if type(access) is tuple and kind == "nd" and len(access) == 3 and access[0] == "o" and start == 0:
            # The test's read-only owner, as one here: a flag makes it writeable, never a view of it.
            base = np.frombuffer(raw, dtype=_numpy_dtype(access[1])).reshape(_shape(access[2])).copy()
            base.flags.writeable = False
            made.append((kind, base, start, "o"))
            continue
        if access not in ("w", "l"):
            raise ProtocolError("a malformed buffer")
        base = np.empty(len(raw), dtype=np.uint8)  # aligned, writeable, owned: what an allocation gives
        base[:] = np.frombuffer(raw, dtype=np.uint8)
        if kind == "pt":
            import torch

            base = torch.from_numpy(base).to(_device(device))
        made.append((kind, base, start, access))
    return made


class _Views:
    """The buffers one message's views are made over, and what those views hold so far."""

    def __init__(self, made: list, max_bytes: int | None):
        self.made, self.left = made, max_bytes

    def buffer(self, index, kind: str):
        if type(index) is not int or not 0 <= index < len(self.made) or self.made[index][0] != kind:
            raise ProtocolError("a view of an unknown buffer")
        return self.made[index][1:]

    def check(self, shape, strides, offset, itemsize: int, size: int, own: bool = False) -> int:
        """The view's offset in its buffer, after checking that it lies inside it, holds no more
        elements than the bytes it spans (no view is larger than the bytes that crossed), and keeps
        the message's views within their budget. ``own``: the buffer is the caller's own memory (a
        view of an argument's, "a"), where no bytes crossed: there a view may repeat elements, as a
        result that is ``np.broadcast_to`` or ``expand`` of an argument does in one process (refused, a
        correct 04-04 that returned such a view of its argument's zeros crashed where pytest passes it);
        the budget still counts every element."""
        if type(strides) is not tuple or len(strides) != len(shape) or not all(type(s) is int for s in strides):
            raise ProtocolError("malformed strides")
        if type(offset) is not int or offset < 0:
            raise ProtocolError("a view outside its buffer")
        numel = 1
        for n in shape:
            numel *= n
        if not numel:  # no element is read, but the offset stays inside (a resize of the view reads from it)
            if offset > size:
                raise ProtocolError("a view outside its buffer")
            return offset
        low = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
        high = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0) + itemsize
        if low < 0 or high > size or (numel * itemsize > high - low and not own):
            raise ProtocolError("a view outside its buffer, or larger than it")
        if self.left is not None:
            self.left -= numel * itemsize
            if self.left < 0:
                raise ProtocolError("views larger in all than the message's limit")
        return offset


def _decode(data, hooks: dict, depth: int, views: _Views):
    if depth > MAX_NESTING or type(data) is not tuple or not data or type(data[0]) is not str:
        raise ProtocolError("malformed value")
    tag, *rest = data
    if tag in hooks:
        return hooks[tag](*rest)
    depth += 1
    if tag == "ptv":
        import torch

        index, name, shape, strides, offset, *grad = rest
        base, start, access = views.buffer(index, "pt")
        dtype, shape = _torch_dtype(name), _shape(shape)
        itemsize = torch.empty(0, dtype=dtype).element_size()
        if type(offset) is not int or (offset - start) % itemsize:
            raise ProtocolError("a misaligned view")
        if type(strides) is not tuple or not all(type(s) is int and s >= 0 for s in strides):
            raise ProtocolError("malformed strides")
        views.check(shape, tuple(s * itemsize for s in strides), offset - start, itemsize, base.numel(), access == "a")
        view = torch.empty(0, dtype=dtype, device=base.device)
        return _requiring_grad(view.set_(base.untyped_storage(), (offset - start) // itemsize, shape, strides), grad)
    if tag == "ndv":
        import numpy as np

        index, wired_dtype, shape, strides, offset, writeable = rest
        base, start, access = views.buffer(index, "nd")
        dtype, shape = _numpy_dtype(wired_dtype), _shape(shape)
        offset = views.check(shape, strides, offset - start if type(offset) is int else None, dtype.itemsize,
                             base.nbytes, access == "a")
        if access == "o" and (shape, strides, offset, dtype) == (base.shape, base.strides, 0, base.dtype):
            return base  # the owner itself, as the test passed it
        if access == "l":  # the test's memory cannot be made writeable: neither can this (over read-only bytes)
            base = np.asarray(_Memory(base.ctypes.data, base.nbytes, base))
        array = np.ndarray(shape, dtype, buffer=base, offset=offset, strides=strides)
        array.flags.writeable = bool(writeable)
        return array
    if tag == "vs":
        base, name, value = rest
        kind = {"int": int, "float": float, "str": str}.get(base)
        if kind is None or type(value) is not kind:
            raise ProtocolError("malformed plain value")
        return _made(("vs", kind, _identifier(name)), lambda: type(name, (kind,), {"__slots__": ()}), kind)(value)
    if tag == "v":
        (value,) = rest
        if value is not None and type(value) not in (bool, int, float, str, bytes):
            raise ProtocolError("malformed plain value")
        return value
    if tag in ("t", "l", "s", "fs"):
        (items,) = rest
        items = [_decode(v, hooks, depth, views) for v in _checked(items, list, "container")]
        if tag in ("s", "fs"):
            try:
                _no_hash_flood(items)
            except TypeError:
                raise ProtocolError("a set with an unhashable member") from None
        return {"t": tuple, "l": list, "s": set, "fs": frozenset}[tag](items)
    if tag == "d":
        items, *kind = rest
        pairs = [(_decode(k, hooks, depth, views), _decode(v, hooks, depth, views))
                 for k, v in _checked(items, list, "container")]
        _no_hash_flood(k for k, _ in pairs)
        if not kind:
            return dict(pairs)
        if kind == ["Counter"]:
            return collections.Counter(dict(pairs))
        ((what, factory),) = kind
        if what != "defaultdict":
            raise ProtocolError("malformed dict")
        if type(factory) is str:
            factory = DEFAULT_FACTORIES[factory]
        elif factory is not None:  # a reference: calling it asks the worker (defaultdict refuses what is not callable)
            factory = _decode(factory, hooks, depth, views)
        return collections.defaultdict(factory, pairs)
    if tag == "dq":
        items, maxlen = rest
        if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
            raise ProtocolError("malformed deque")
        return collections.deque((_decode(v, hooks, depth, views) for v in _checked(items, list, "container")), maxlen)
    if tag == "c":
        real, imag = rest
        return complex(_plain_float(real), _plain_float(imag))
    if tag == "fr":
        numerator, denominator = rest
        if type(numerator) is not int or type(denominator) is not int or denominator < 1 \
                or _bits(numerator, denominator) > MAX_EXACT_BITS:
            raise ProtocolError("malformed fraction")
        return fractions.Fraction(numerator, denominator)
    if tag == "dec":
        (text,) = rest
        if type(text) is not str or len(text) > MAX_DECIMAL:
            raise ProtocolError("malformed decimal")
        try:
            return decimal.Decimal(text)
        except (decimal.InvalidOperation, ValueError):
            raise ProtocolError("malformed decimal") from None
    if tag == "dc":
        name, fields, props, items, *more = rest
        special = _checked(more[0], list, "container") if len(more) == 1 else [] if not more else None
        if special is None or len(special) > len(_SPECIAL):
            raise ProtocolError("a record with malformed answers of its own")
        if len(_checked(props, list, "container")) > RECORD_EXTRAS or \
                (items is not None and len(_checked(items, list, "container")) > RECORD_ITEMS):
            raise ProtocolError("a record with too many properties or items")

        def named(pairs):
            return {_identifier(k): _decode(v, hooks, depth, views) for k, v in _checked(pairs, list, "container")}

        items = None if items is None else [_decode(v, hooks, depth, views) for v in items]
        special = {k: _decode(v, hooks, depth, views) for k, v in special}
        if not all(k in _SPECIAL and _SPECIAL[k](v) for k, v in special.items()):
            raise ProtocolError("a record with malformed answers of its own")
        record = Record(_identifier(name), named(fields), named(props), items, special)
        return hooks["record"](record) if "record" in hooks else record
    if tag == "nt":
        name, names, items, *more = rest
        props = _checked(more[0], list, "container") if len(more) == 1 else [] if not more else None
        if props is None or len(props) > RECORD_EXTRAS:
            raise ProtocolError("a named tuple with too many properties")
        items = [_decode(v, hooks, depth, views) for v in _checked(items, list, "container")]
        if len(_checked(names, list, "container")) != len(items) or len(names) > MAX_FIELDS:
            raise ProtocolError("a named tuple whose names and items differ in number, or too many")
        names = tuple(_identifier(n) for n in names)
        props = {_identifier(k): _decode(v, hooks, depth, views) for k, v in props}
        if not set(props).isdisjoint(names) or any(k.startswith("_") for k in props):
            # public names only, as the sender reads them: a `_make` or `_fields` would break the class made here
            raise ProtocolError("a named tuple's property named as one of its fields, or not public")
        cls = _made(("nt", _identifier(name), names, tuple(sorted(props))),
                    lambda: _named_tuple(name, names, tuple(sorted(props))), tuple)
        if cls is tuple:
            return tuple(items)
        made = cls._make(items)
        if props:
            made.__dict__[_PROPS] = props
        return made
    if tag in ("npdt", "nps", "nd"):
        import numpy as np

        if tag == "npdt":
            (wired_dtype,) = rest
            return _numpy_dtype(wired_dtype)
        if tag == "nps":
            wired_dtype, raw = rest
            return np.frombuffer(_checked(raw, bytes, "array data"), dtype=_numpy_dtype(wired_dtype))[0]
        wired_dtype, shape, raw, writeable = rest
        array = np.frombuffer(_checked(raw, bytes, "array data"), dtype=_numpy_dtype(wired_dtype))
        array = array.reshape(_shape(shape)).copy()
        array.flags.writeable = bool(writeable)
        return array
    if tag in ("ptdt", "ptdev", "pt"):
        import torch

        if tag == "ptdt":
            (name,) = rest
            return _torch_dtype(name)
        if tag == "ptdev":
            (kind,) = rest
            return torch.device(_device(kind))
        name, shape, device, raw, *grad = rest
        dtype, shape, raw = _torch_dtype(name), _shape(shape), _checked(raw, bytes, "array data")
        if device == "meta":
            return _requiring_grad(torch.empty(shape, dtype=dtype, device="meta"), grad)
        if not raw:
            if 0 in shape:  # an empty tensor has no data to send
                return _requiring_grad(torch.empty(shape, dtype=dtype).to(_device(device)), grad)
            raise ProtocolError("a tensor without its data")  # never allocate on the sender's word
        made = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape).to(_device(device))
        return _requiring_grad(made, grad)
    raise ProtocolError(f"unknown tag {tag!r}")


def _requiring_grad(tensor, grad: list):
    """``tensor``, made to require grad where the sender's did (``[True]``; a dtype that cannot is refused)."""
    if grad not in ([], [True]):
        raise ProtocolError("a malformed tensor")
    return tensor.requires_grad_(True) if grad else tensor


def _no_hash_flood(keys) -> None:
    """ProtocolError if too many of ``keys`` hash alike (:class:`~labkit.grader.wire.HashCount`). Only
    plain values are counted: a handle's hash is a request, bounded by the call's time limit."""
    hashes = HashCount()
    for key in keys:
        if key is None or isinstance(key, _PLAIN_KEYS):  # the classes made for "vs" values too
            hashes.add(key)


_PLAIN_KEYS = (int, float, complex, str, bytes, tuple, frozenset, fractions.Fraction, decimal.Decimal)


def builtin_exception(name):
    """The built-in exception class called ``name`` (an error crosses as its name), else None."""
    cls = getattr(builtins, str(name), None)
    return cls if isinstance(cls, type) and issubclass(cls, Exception) else None


def exception_argument(cls: type, message: str):
    """What makes an exception of class ``cls`` read ``message``, as it did where it was raised: the message
    itself, but for a KeyError, which reads as its key's repr (``KeyError(message)`` would be quoted twice,
    ``"'a'"``). A key that is a literal (a name, a number, a tuple of them) is parsed back, never run; any
    other is its text, shown unquoted."""
    if not issubclass(cls, KeyError):
        return message
    try:
        key = ast.literal_eval(message)
        if repr(key) == message:
            return key
    except Exception:  # not a literal: an object's repr, or no key at all
        pass
    return _Shown(message)


class _Shown(str):
    """A KeyError's text that names no literal key: shown as it is."""

    __slots__ = ()

    def __repr__(self):
        return str.__str__(self)


_MADE: dict[tuple, type] = {}  # ("nt", name, fields) or ("vs", base, name) -> the class made for it


def _made(key: tuple, make, plain: type) -> type:
    """The class made for ``key`` (one per key, kept); past MADE_CLASSES, ``plain``."""
    cls = _MADE.get(key)
    if cls is None:
        if len(_MADE) >= MADE_CLASSES:
            return plain
        cls = _MADE[key] = make()
    return cls


def _named_tuple(name: str, names: tuple, props: tuple = ()) -> type:
    """A named tuple class; with ``props``, a subclass whose properties of those names read the values that
    crossed with each instance (kept in its ``__dict__``)."""
    try:  # namedtuple refuses keywords, names starting with "_" and repeated names
        base = collections.namedtuple(name, names)
    except ValueError:
        raise ProtocolError("a named tuple with malformed names") from None
    if not props:
        return base

    def getter(prop):
        def get(self):
            try:
                return self.__dict__[_PROPS][prop]
            except KeyError:  # a copy made without them (``_replace``)
                raise AttributeError(f"{name} has no property {prop!r} here") from None
        return property(get)

    return type(name, (base,), {prop: getter(prop) for prop in props})


_PROPS = "_props_that_crossed"  # where an instance of a named tuple made above keeps its properties' values


def _an_array(value) -> bool:
    return type(value).__module__ == "numpy" and type(value).__name__ == "ndarray"


# What a record's class may answer itself (:func:`_record_special`), and the check of each answer.
_SPECIAL = {"array": _an_array, "len": lambda v: type(v) is int and v >= 0, "bool": lambda v: type(v) is bool}


class Record:
    """A dataclass instance of the submission, as its fields, its properties' values and, if its
    class can be iterated, its items: ``budget.total_bytes`` reads like the original and a summary
    unpacks as one; passed back to the submission it becomes one again. Read-only."""

    def __new__(cls, name=None, fields=None, props=None, items=None, special=None):
        # One whose class has `__array__` is an array to numpy, as the original is: numpy asks the class.
        return object.__new__(_ArrayRecord if cls is Record and special and "array" in special else cls)

    def __init__(self, name: str, fields: dict, props: dict | None = None, items: list | None = None,
                 special: dict | None = None):
        object.__setattr__(self, "_special", dict(special or {}))
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_fields", dict(fields))
        object.__setattr__(self, "_props", dict(props or {}))
        object.__setattr__(self, "_items", None if items is None else tuple(items))

    def __getattr__(self, name):
        if name.startswith("_"):  # copy's probes of a record not yet filled in, dunders
            raise AttributeError(name)
        for found in (self._fields, self._props):
            if name in found:
                return found[name]
        raise AttributeError(f"{self._name} has no field {name!r}")

    def __iter__(self):
        if self._items is None:
            raise TypeError(f"{self._name!r} object is not iterable")
        return iter(self._items)

    def __len__(self):
        if "len" in self._special:
            return self._special["len"]
        if self._items is None:
            raise TypeError(f"object of type {self._name!r} has no len()")
        return len(self._items)

    def __getitem__(self, index):
        if self._items is None:
            raise TypeError(f"{self._name!r} object is not subscriptable")
        return self._items[index]

    def __bool__(self):
        return self._special.get("bool", True)

    def __setattr__(self, name, value):
        raise AttributeError(f"{self._name} (a submission's record) is read-only")

    def __eq__(self, other):
        return isinstance(other, Record) and (self._name, self._fields) == (other._name, other._fields)

    def __hash__(self):  # as a frozen dataclass's: of its fields (TypeError if one is unhashable)
        return hash((self._name, *self._fields.values()))

    def __repr__(self):
        return f"{self._name}({', '.join(f'{k}={v!r}' for k, v in self._fields.items())})"

    def _part(self, step):
        """A field (a name) or an item (an index), as :func:`crossing_parts` named it; KeyError or
        IndexError if there is none such."""
        if type(step) is str:
            return self._fields[step]
        if self._items is None or type(step) is not int or step < 0:
            raise IndexError(step)
        return self._items[step]

    def _with(self, step, new) -> Record:
        """This record with the part ``step`` replaced by ``new`` (a container the test already holds)."""
        fields, items = dict(self._fields), self._items
        if type(step) is str:
            fields[step] = new
        else:
            items = (*items[:step], new, *items[step + 1:])
        return Record(self._name, fields, self._props, items, self._special)


class _ArrayRecord(Record):
    """A record whose class has ``__array__``: its answer, computed in the worker, is what numpy gets."""

    def __array__(self, dtype=None, copy=None):
        import numpy as np

        return np.array(self._special["array"], dtype=dtype, copy=True)


def _nameable(name) -> bool:
    """Whether ``name`` may name a class or field made on the far side (:func:`_identifier`)."""
    return type(name) is str and len(name) <= MAX_NAME and name.isidentifier() and not name.startswith("__")


def _identifier(name):
    if not _nameable(name):
        raise ProtocolError("malformed name")
    return name


def _plain_float(x):
    if type(x) not in (int, float):
        raise ProtocolError("malformed number")
    return float(x)


def _checked(value, kind: type, what: str):
    if type(value) is not kind:
        raise ProtocolError(f"malformed {what}")
    return value


def _shape(shape):
    if type(shape) is not tuple or len(shape) > 64 or not all(type(n) is int and n >= 0 for n in shape):
        raise ProtocolError("malformed shape")
    return shape


def _numpy_dtype(wired):
    """The dtype :func:`_dtype_wire` sent, checked."""
    import numpy as np

    if type(wired) is tuple and len(wired) == 3 and wired[0] == "struct":
        _, fields, itemsize = wired
        if type(fields) is not list or not 0 < len(fields) <= MAX_FIELDS or type(itemsize) is not int \
                or not 0 < itemsize <= 1 << 16 or not all(type(f) is tuple and len(f) == 3 and type(f[0]) is str
                                                          and len(f[0]) <= 100 and type(f[1]) is str
                                                          and type(f[2]) is int for f in fields):
            raise ProtocolError("malformed structured dtype")
        spec = {"names": [f[0] for f in fields], "formats": [_numpy_dtype(f[1]) for f in fields],
                "offsets": [f[2] for f in fields], "itemsize": itemsize}
        dtype = np.dtype(spec)  # numpy refuses repeated names and fields past the item's end
    elif type(wired) is str and len(wired) <= 8:
        dtype = np.dtype(wired)
    else:
        raise ProtocolError("malformed dtype")
    try:
        return _checked_numpy_dtype(dtype)
    except TypeError as err:
        raise ProtocolError(str(err)) from None


def _torch_dtype(name):
    import torch

    if name not in _TORCH_DTYPES:
        raise ProtocolError(f"torch dtype {name!r} refused")
    return getattr(torch, name)


def _device(kind):
    if kind == "cuda":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cpu"


# --------------------------------------------------------------------------- in-place changes


class BufferWrites:
    """Which of a message's decoded buffers (uint8 arrays or tensors) a call writes into: their bytes
    are hashed now; :meth:`changes` gives ``[(index, bytes)]`` of those that differ after the call, for
    the sender to copy back into the memory they came from."""

    def __init__(self, buffers: list):
        self.buffers = buffers
        self.digests = [_digest(buffer) for buffer in buffers]

    def changes(self) -> list:
        return [(i, _host(b).tobytes()) for i, b in enumerate(self.buffers) if _digest(b) != self.digests[i]]


def _digest(buffer) -> bytes:
    import hashlib

    return hashlib.blake2b(_host(buffer)).digest()


def _host(buffer):
    return buffer if type(buffer).__module__.startswith("numpy") else buffer.detach().cpu().numpy()


def array_leaves(value, out: list | None = None) -> list:
    """The numpy arrays and torch tensors inside ``value`` (args, kwargs), in a fixed order."""
    out = [] if out is None else out
    if type(value) in (tuple, list):
        for v in value:
            array_leaves(v, out)
    elif type(value) is dict:
        for v in value.values():
            array_leaves(v, out)
    elif type(value).__name__ in ("ndarray", "Tensor") or hasattr(value, "__array_interface__"):
        if type(value).__module__.startswith(("numpy", "torch")):
            out.append(value)
    return out
