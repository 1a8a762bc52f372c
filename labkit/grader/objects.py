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

import operator


class ObjectTable:
    """The objects the grader holds handles to: number -> object, kept alive until released."""

    def __init__(self):
        self.objects: dict[int, object] = {}
        self.numbers: dict[int, int] = {}  # id(object) -> number
        self.next_number = 1

    def number(self, obj) -> int:
        """The number of ``obj``, registered if new (the same object always gets the same one)."""
        n = self.numbers.get(id(obj))
        if n is None:
            n, self.next_number = self.next_number, self.next_number + 1
            self.objects[n], self.numbers[id(obj)] = obj, n
        return n

    def get(self, n):
        try:
            return self.objects[n]
        except (KeyError, TypeError):
            raise LookupError(f"no object number {n!r} in the worker (forgotten, or never handed out)") from None

    def release(self, numbers) -> None:
        """Forget the objects whose handles the grader dropped (they may be freed now)."""
        for n in numbers if type(numbers) is list else ():
            obj = self.objects.pop(n, None) if type(n) is int else None
            if obj is not None:
                del self.numbers[id(obj)]


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
