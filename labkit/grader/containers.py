"""What a call does to the plain containers a test passed (a config dict, a list of ids, a matrix of
dicts): in one process the test sees the submission's writes into them, so here too. Containers
cross by value (:mod:`values`), so the worker remembers each one's contents before the call
(:func:`container_key`) and, after it, sends those that changed (whether the call returned or
raised); the grader writes each into the test's own object, in place (:func:`refill`), keeping the
identity of the containers nested in it. Arrays inside them are not compared here: their memory
crosses and comes back as buffers.

The containers a call *returns* are kept too, by number, on both sides (:class:`Returned`): in one
process a result may be the submission's own list, which a later call changes (a pool that hands out
one list, cleared at each call, hands out the same list twice). The worker sends the number of each
container it returns, the grader gives back the same object for the same number, and after each call
the worker sends those whose contents changed, which the grader refills in place. So are the numpy
arrays and torch tensors a call returns (an output buffer the submission reuses, written again by
the next call): their bytes are compared, not their items. Both sides; staged into the sandbox.
"""

from __future__ import annotations

import collections
import math
import operator

from labkit.grader.wire import ProtocolError

MUTABLE = (list, dict, set, collections.deque)  # what the worker decodes a test's mutable container into
MAX_DEPTH = 32  # values.MAX_NESTING: no value that crossed is deeper
KEPT_RETURNED = 64  # returned containers each side keeps, the latest returned: older ones keep no identity
RETURNED_ITEMS = 4096  # items (counted through nested containers) past which a returned container is not kept
RETURNED_BYTES = 256 << 10  # bytes past which a returned array is not kept (its later changes are not followed)
# Bytes of the returned arrays kept in all, the oldest forgotten past it: what each call that ran student code
# hashes, and the most their changes add to a reply (results the test no longer holds are kept too).
RETURNED_ARRAYS_BYTES = 4 << 20


# --------------------------------------------------------------------------- the worker's side


def mutable_arguments(call_args: tuple) -> list[tuple[tuple, object]]:
    """``[(path, container)]``: the mutable containers of ``(args, kwargs)``, reached through tuples
    only, named tuples included (a container inside a container is the outer one's business). A path
    is the indices and keyword names from ``(args, kwargs)`` down to the container."""
    found: list = []

    def walk(value, path, depth):
        if type(value) in MUTABLE:
            found.append((path, value))
        elif isinstance(value, tuple) and depth < MAX_DEPTH:  # a named tuple too (its class made by decoding)
            for i, item in enumerate(value):
                walk(item, (*path, i), depth + 1)

    args, kwargs = call_args
    walk(args, (0,), 1)
    for name, value in kwargs.items():
        walk(value, (1, name), 2)
    return found


def is_array(value) -> bool:
    """Whether ``value`` is a numpy array or a torch tensor itself (a subclass crosses as its plain value)."""
    kind = type(value)
    return (kind.__module__, kind.__name__) in (("numpy", "ndarray"), ("torch", "Tensor"))


def returned_array(value):
    """``value`` as the plain numpy array or torch tensor it crosses as, if it is one, of a subclass too (the
    student's own ``class Buf(np.ndarray)``, a Parameter: a view of the same memory); else None. A result of
    a subclass is followed as its plain value: an output buffer of the student's own class, reused at each
    call, changes the test's earlier result as a plain one does (04-04's merge_reuses_one_output_buffer with
    such a buffer graded 158 of 158, where pytest fails it)."""
    if is_array(value):
        return value
    from labkit.grader.values import _as_plain

    for klass in type(value).__mro__:
        if (klass.__module__, klass.__name__) in (("numpy", "ndarray"), ("torch", "Tensor")):
            return _as_plain(value)
    return None


def outer_containers(value) -> list[tuple[tuple, object]]:
    """``[(path, container)]``: the mutable containers and the arrays of a result, reached through
    what crosses as a tuple or a record (a named tuple, a frozen dataclass: a summary ``(m, denom,
    acc)`` written as either holds the same reused output buffer as a plain tuple would), as
    :func:`mutable_arguments` finds containers in arguments. A path's steps are tuple or item indices
    and record field names (:func:`~labkit.grader.values.crossing_parts`); ``()``: the result."""
    from labkit.grader.values import crossing_parts, plain_container

    found: list = []

    def walk(v, path):
        # A subclass of a container crosses as its plain value: kept too, keyed by that value (a pool that
        # refills one list of its own class at each call hands out the same list, as with a plain one).
        if type(v) in MUTABLE or returned_array(v) is not None or plain_container(v) is not None:
            found.append((path, v))
        elif len(path) < MAX_DEPTH:
            for step, item in crossing_parts(v) or ():
                walk(item, (*path, step))

    walk(value, ())
    return found


_NESTING = frozenset((list, tuple, set, frozenset, collections.deque, dict))
# Items of a container compared in one C-level pass: plain ones by type and value (a list of token ids,
# a dict of str to int), objects by identity (a list of blocks): none of their classes is one of
# _NOT_BY_IDENTITY, whose objects are compared by value or item by item.
_ATOMIC = frozenset((type(None), bool, int, str, bytes))
_NOT_BY_IDENTITY = _NESTING | {int, str, bytes, float}


def _small(value, budget: int) -> int:
    """``budget`` less the items of ``value`` (through nested containers); negative once past it."""
    if type(value) in _NESTING:
        budget -= len(value)
        items = value.values() if type(value) is dict else value
        if budget < 0 or _NESTING.isdisjoint(map(type, items)):  # nothing nested: counted
            return budget
        for item in items:
            if budget < 0:
                break
            budget = _small(item, budget)
    return budget


def _shallow(value) -> tuple | None:
    """The items of a list or deque, or a dict's keys then its values, as a tuple, if none of them is a
    container: then holding the very same objects in the same order means holding the same key (plain
    items are immutable, objects are keyed by identity), a check made in C before the key is computed.
    With them, their types: an object's class may be assigned (``x.__class__ = Other``), which its key
    tells (a named tuple or an int subclass crosses by value, its class's name with it). None for any
    other value (a set, an array, a container with containers in it)."""
    kind = type(value)
    try:
        if kind is dict:
            items = (*value, *value.values())
        elif kind is list or kind is collections.deque:
            items = tuple(value)
        else:
            return None
    except RuntimeError:  # changed while read (a thread of the submission's): no quick check for it
        return None
    types = tuple(map(type, items))
    return (items, types) if _NESTING.isdisjoint(types) else None


class Returned:
    """The worker's side: the containers its replies returned, by number, each with its key as last sent."""

    def __init__(self):
        # number -> (container, key, what the key keeps alive, (its items, their types) for the quick check, or
        # None); oldest first
        self.kept: dict[int, tuple] = {}
        self.numbers: dict[int, int] = {}  # id(container) -> number, while it is kept
        self.next = 0

    def changes(self, encode) -> list:
        """``("r", number, encoded)`` for each kept container or array whose contents changed since last
        sent. One that grew past :data:`RETURNED_ITEMS`, now holds what cannot cross, or (an array) has
        another shape, dtype or strides, is forgotten (the test's copy stays as last sent): never an
        error in a call that did not return it."""
        changed = []
        # Each call that ran the submission's code compares every kept container (64 of them, in a test that
        # holds many results): the quick check first, a key only where it fails.
        for number, (container, key, _, shallow) in list(self.kept.items()):
            keep: list = []
            try:
                if shallow is not None:
                    items, types = shallow
                    now_items = (*container, *container.values()) if type(container) is dict else tuple(container)
                    if (len(now_items) == len(items) and all(map(operator.is_, now_items, items))
                            and all(map(operator.is_, map(type, now_items), types))):
                        continue
                now = _returned_key(container, keep)
                if now == key:
                    continue
                if returned_array(container) is not None and now[:-1] != key[:-1]:
                    raise TypeError("another shape, dtype or layout: the test's array cannot follow it")
                changed.append(("r", number, encode(container)))
            except Exception:
                del self.numbers[id(self.kept.pop(number)[0])]
                continue
            self.kept[number] = (container, now, keep, _shallow(container))
        return changed

    def keep(self, result) -> list:
        """``("k", path, number)`` for each container or array ``result`` returns (the same number for one
        returned before); the latest :data:`KEPT_RETURNED` are kept, none of more than :data:`RETURNED_ITEMS`
        items or :data:`RETURNED_BYTES` bytes, arrays of :data:`RETURNED_ARRAYS_BYTES` in all, and at most
        that many of one result (a tuple of a thousand lists: the first 64)."""
        named = []
        for path, container in outer_containers(result)[:KEPT_RETURNED]:
            keep: list = []
            try:
                key = _returned_key(container, keep)
            except TypeError:  # too large to follow
                continue
            number = self.numbers.get(id(container))
            if number is None:
                number, self.next = self.next, self.next + 1
                self.numbers[id(container)] = number
            else:
                del self.kept[number]  # kept again, as the latest
            self.kept[number] = (container, key, keep, _shallow(container))
            named.append(("k", path, number))
        if not named:  # nothing kept anew: every bound below still holds
            return named
        while len(self.kept) > KEPT_RETURNED:
            number = next(iter(self.kept))
            del self.numbers[id(self.kept.pop(number)[0])]
        # oldest first; the arrays among them
        arrays = {number: _nbytes(returned_array(value)) for number, (value, *_) in self.kept.items()
                  if returned_array(value) is not None}
        total = sum(arrays.values())
        for number in arrays:
            if total <= RETURNED_ARRAYS_BYTES:
                break
            total -= arrays[number]
            del self.numbers[id(self.kept.pop(number)[0])]
        return named


def _returned_key(value, keep: list):
    """What a returned container or array holds, to tell later whether it changed; TypeError for one
    too large to follow (past :data:`RETURNED_ITEMS` items or :data:`RETURNED_BYTES` bytes)."""
    plain = returned_array(value)
    if plain is not None:
        return _array_key(plain)
    if type(value) not in MUTABLE:  # a subclass: what crosses is its plain value
        from labkit.grader.values import plain_container

        value = plain_container(value)
        if value is None:
            raise TypeError("no longer crosses as a container")
    if _small(value, RETURNED_ITEMS) < 0:
        raise TypeError("grown past what is kept")
    return container_key(value, keep)


def _nbytes(a) -> int:
    return a.nbytes if type(a).__module__ == "numpy" else a.numel() * a.element_size()


def _array_key(a) -> tuple:
    """An array's layout and a digest of its bytes (computed in C: no code of the submission runs)."""
    import hashlib

    if type(a).__module__ == "numpy":
        if a.nbytes > RETURNED_BYTES:
            raise TypeError("too large to follow")
        import numpy as np

        raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8) if a.size else b""
        return ("nd", a.dtype.str, a.shape, a.strides, hashlib.blake2b(raw).digest())
    from labkit.grader.values import tensor_bytes

    if a.numel() * a.element_size() > RETURNED_BYTES or a.device.type == "meta":
        raise TypeError("too large to follow")
    flat = tensor_bytes(a) if a.numel() else b""
    return ("pt", str(a.dtype), tuple(a.shape), tuple(a.stride()), a.device.type, hashlib.blake2b(flat).digest())


def container_key(value, keep: list, depth: int = 0):
    """What ``value`` holds, as a comparable key that runs none of the submission's code: plain values
    by value (1 and True, 0.0 and -0.0 told apart), containers item by item, anything else (an
    array, an object) by identity. Objects named by identity are kept alive in ``keep``, so that
    no other object can take their id before the key is compared."""
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return (kind, value)
    if kind is float:
        return (float, value, math.copysign(1.0, value))
    if depth < MAX_DEPTH:
        if kind in (list, tuple, collections.deque):
            # Plain items only, or objects only (the usual cases): their types, and their values or
            # identities, each as one tuple, compared in C; keys of other shapes than the item-by-item one.
            items = tuple(value)
            types = tuple(map(type, items))
            if _ATOMIC.issuperset(types):
                return (kind, types, items)
            if _NOT_BY_IDENTITY.isdisjoint(types):
                keep.extend(items)
                return (kind, types, tuple(map(id, items)))
            return (kind, tuple(container_key(item, keep, depth + 1) for item in items))
        if kind is dict:
            keys, values = tuple(value), tuple(value.values())
            types = (tuple(map(type, keys)), tuple(map(type, values)))
            if _ATOMIC.issuperset(types[0]) and _ATOMIC.issuperset(types[1]):
                return (dict, types, keys, values)
            return (dict, tuple((container_key(k, keep, depth + 1), container_key(v, keep, depth + 1))
                                for k, v in value.items()))
        if kind in (set, frozenset):
            keep.append(value)  # a set's order is no content: compared as the same items, by identity
            keep.extend(value)
            return (kind, frozenset(map(id, value)), len(value))
    keep.append(value)
    return ("id", id(value), kind)  # its class too: one may be assigned in place, as in the C branch above


# --------------------------------------------------------------------------- the grader's side


def container_at(call_args: tuple, path) -> object:
    """The test's container that ``path`` (from the worker) names in the call's ``(args, kwargs)``;
    a ProtocolError for a path that names anything else."""
    if type(path) is not tuple or len(path) < 2 or path[0] not in (0, 1):
        raise ProtocolError("a malformed path to a container")
    value = call_args[path[0]]
    for depth, step in enumerate(path[1:]):
        if depth == 0 and path[0] == 1:
            if type(step) is not str or step not in value:
                raise ProtocolError("a path to a keyword argument the call did not have")
            value = value[step]
        elif isinstance(value, tuple) and type(step) is int and 0 <= step < len(value):
            value = value[step]
        else:
            raise ProtocolError("a path to a container the call did not pass")
    if type(value) not in MUTABLE:
        raise ProtocolError("a path to something that is not a mutable container")
    return value


def adopt_returned(result, named: list, returned: dict):
    """The grader's side: ``result`` with each container the worker named (``("k", path, number)``)
    replaced by the test's object of that number, refilled, if the test has it (the same list as an
    earlier call returned); new numbers join ``returned`` (number -> container, the latest
    :data:`KEPT_RETURNED` kept). More names than that in one reply is a protocol error: each may rebuild
    the tuples along its path, and a hostile worker could name every item of a long tuple."""
    if len(named) > KEPT_RETURNED:
        raise ProtocolError(f"more than {KEPT_RETURNED} returned containers named in one reply")
    for _, path, number in named:
        if type(path) is not tuple or not all(type(i) in (int, str) for i in path) or type(number) is not int:
            raise ProtocolError("a malformed returned container")
        container = _at(result, path)
        old = returned.pop(number, None)
        if old is not None and old is not container:
            refill(old, container)
            result = _replaced(result, path, old)
            container = old
        returned[number] = container  # the latest returned, last
        while len(returned) > KEPT_RETURNED:
            del returned[next(iter(returned))]
    return result


def _at(value, path: tuple):
    from labkit.grader.values import Record

    for i in path:
        if isinstance(value, Record):  # a frozen dataclass's field (a name) or item (an index)
            try:
                value = value._part(i)
            except (KeyError, IndexError):
                raise ProtocolError("a path to a container the result does not hold") from None
            continue
        # a plain tuple, or a named tuple made by decoding
        if not isinstance(value, tuple) or type(i) is not int or not 0 <= i < len(value):
            raise ProtocolError("a path to a container the result does not hold")
        value = value[i]
    if type(value) not in MUTABLE and not isinstance(value, dict) and not is_array(value):  # dict: a Counter too
        raise ProtocolError("a path to something that is not a mutable container or an array")
    return value


def _replaced(value, path: tuple, new):
    """``value`` with what ``path`` names replaced by ``new`` (tuples and records along the path rebuilt,
    each of its own class: a named tuple stays one)."""
    if not path:
        return new
    from labkit.grader.values import Record

    i = path[0]
    if isinstance(value, Record):
        return value._with(i, _replaced(value._part(i), path[1:], new))
    items = value[:i] + (_replaced(value[i], path[1:], new),) + value[i + 1:]
    if type(value) is tuple:
        return items
    made = type(value)._make(items)
    if getattr(value, "__dict__", None):  # the values of its properties that crossed with it
        made.__dict__.update(value.__dict__)
    return made


def refill(old, new, depth: int = 0) -> None:
    """Make the test's container ``old`` hold what the worker's copy ``new`` holds now, in place. A
    container inside both, at the same index or key and of one type, is refilled in turn rather than
    replaced, so that what the test holds of it stays current. An array gets the new one's values."""
    if type(new) is not type(old) or depth > MAX_DEPTH:
        raise ProtocolError("a container came back as something else")
    if is_array(old):
        _refill_array(old, new)
        return
    if type(old) is set:
        old.clear()
        old.update(new)
        return
    if isinstance(old, dict):  # a Counter or a defaultdict too, which a result crosses as
        for key, value in new.items():
            if key in old and _same_container(old[key], value):
                refill(old[key], value, depth + 1)
                new[key] = old[key]
        old.clear()
        old.update(new)
        return
    items = list(new)
    for i in range(min(len(old), len(items))):
        if _same_container(old[i], items[i]):
            refill(old[i], items[i], depth + 1)
            items[i] = old[i]
    if type(old) is list:
        old[:] = items
    else:  # a deque keeps its maxlen
        old.clear()
        old.extend(items)


def _refill_array(old, new) -> None:
    """``old``, an array the test holds, given ``new``'s values (one object in one process: its layout
    cannot have changed). A read-only numpy array is written too, as a submission may make it
    writeable; one whose memory no flag can make writeable (the test's read-only bytes, returned as
    a view) cannot have changed: a worker that says so broke the protocol."""
    if new.shape != old.shape or new.dtype != old.dtype:
        raise ProtocolError("a returned array came back with another shape or dtype")
    if type(old).__module__ == "numpy":
        from labkit.grader.values import may_be_written, writable_alias

        if not may_be_written(old):
            raise ProtocolError("a returned array over memory no flag can make writeable came back changed")

        if old.size:
            writable_alias(old)[...] = new
        return
    import torch

    with torch.no_grad():
        old.copy_(new.to(old.device))


def _same_container(a, b) -> bool:
    return a is not b and type(a) is type(b) and type(a) in MUTABLE
