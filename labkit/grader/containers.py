"""What a call does to the plain containers a test passed (a config dict, a list of ids, a matrix of
dicts): in one process the test sees the submission's writes into them, so here too. Containers
cross by value (:mod:`values`), so the worker remembers each one's contents before the call
(:func:`container_key`) and, after it, sends those that changed (whether the call returned or
raised); the grader writes each into the test's own object, in place (:func:`refill`), keeping the
identity of the containers nested in it. Arrays inside them are not compared here: their memory
crosses and comes back as buffers. Both sides; staged into the sandbox.
"""

from __future__ import annotations

import collections
import math

from labkit.grader.wire import ProtocolError

MUTABLE = (list, dict, set, collections.deque)  # what the worker decodes a test's mutable container into
MAX_DEPTH = 32  # values.MAX_NESTING: no value that crossed is deeper


# --------------------------------------------------------------------------- the worker's side


def mutable_arguments(call_args: tuple) -> list[tuple[tuple, object]]:
    """``[(path, container)]``: the mutable containers of ``(args, kwargs)``, reached through tuples
    only (a container inside a container is the outer one's business). A path is the indices and
    keyword names from ``(args, kwargs)`` down to the container."""
    found: list = []

    def walk(value, path, depth):
        if type(value) in MUTABLE:
            found.append((path, value))
        elif type(value) is tuple and depth < MAX_DEPTH:
            for i, item in enumerate(value):
                walk(item, (*path, i), depth + 1)

    args, kwargs = call_args
    walk(args, (0,), 1)
    for name, value in kwargs.items():
        walk(value, (1, name), 2)
    return found


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
            return (kind, tuple(container_key(item, keep, depth + 1) for item in value))
        if kind is dict:
            return (dict, tuple((container_key(k, keep, depth + 1), container_key(v, keep, depth + 1))
                                for k, v in value.items()))
        if kind in (set, frozenset):
            keep.append(value)  # a set's order is no content: compared as the same items, by identity
            keep.extend(value)
            return (kind, frozenset(map(id, value)), len(value))
    keep.append(value)
    return ("id", id(value))


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


def refill(old, new, depth: int = 0) -> None:
    """Make the test's container ``old`` hold what the worker's copy ``new`` holds now, in place. A
    container inside both, at the same index or key and of one type, is refilled in turn rather than
    replaced, so that what the test holds of it stays current."""
    if type(new) is not type(old) or depth > MAX_DEPTH:
        raise ProtocolError("a container came back as something else")
    if type(old) is set:
        old.clear()
        old.update(new)
        return
    if type(old) is dict:
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


def _same_container(a, b) -> bool:
    return a is not b and type(a) is type(b) and type(a) in MUTABLE
