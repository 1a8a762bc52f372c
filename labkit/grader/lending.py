"""What of a test the submission meets: its objects, iterators and functions, lent (:class:`Lent`: they
stay in the grader, the worker holds stand-ins, and :func:`serve_lent` answers them with data only);
its torch modules, copied; its patches of numpy's and math's functions (04-01 wraps ``np.exp``) and of
the submission's own names (04-04 wraps ``attend_partial``), made in the worker too for each call
(:class:`Patches`, :func:`patched`, :func:`names_patched`). Staged into the sandbox."""

from __future__ import annotations

import collections.abc
import contextlib
import importlib
import sys
import types
import warnings
from pathlib import Path

from labkit.grader.wire import ProtocolError


def public_name(name) -> str:
    if type(name) is not str or not name.isidentifier() or name.startswith("_"):
        raise AttributeError(f"{name!r}: only public attributes cross between the grader and a submission")
    return name


# --------------------------------------------------------------------------- the grader's side


def lendable(obj) -> bool:
    """An object the grader may lend to the submission: an instance of a class that a test file
    defines (``test_*.py``), nothing else (not a path, a file, a random generator, a module)."""
    if isinstance(obj, (type, types.ModuleType)) or callable(obj):
        return False
    module = sys.modules.get(type(obj).__module__)
    return Path(getattr(module, "__file__", None) or "").name.startswith("test_")


class Lent:
    """The test's things lent to one submission, by index, kept alive with the stand-in: instances of a
    test file's classes ("tobj"); iterators ("titer", for ``next`` only: the submission sees the items
    one by one, when it asks, as in the test's own process); functions, called back ("cb"); torch
    modules ("ptmod"), copied to each worker once."""

    def __init__(self):
        self.objects: list = []
        self.kinds: list[str] = []  # the tag of each index
        self.index: dict[int, int] = {}  # id(object) -> index
        self.modules_sent: set[int] = set()  # the torch modules the current worker has a copy of

    def tag(self, obj, lend: bool) -> tuple:
        """The reference of ``obj``; a new one only when ``lend`` (an argument, not an answer)."""
        i = self.index.get(id(obj))
        if i is None:
            kind = _kind(obj)
            if not lend or kind is None:
                raise TypeError(f"a {type(obj).__qualname__} cannot be passed between the grader and a submission")
            i = self.index[id(obj)] = len(self.objects)
            self.objects.append(obj)
            self.kinds.append(kind)
        if self.kinds[i] == "ptmod":
            raw = b"" if i in self.modules_sent else module_bytes(obj)
            self.modules_sent.add(i)
            return ("ptmod", i, raw)
        return (self.kinds[i], i)

    def get(self, i, kinds=("tobj", "titer")):
        if type(i) is not int or not 0 <= i < len(self.objects) or self.kinds[i] not in kinds:
            raise ProtocolError("a reference to an object the test never passed")
        return self.objects[i]


def _kind(obj) -> str | None:
    if is_torch_module(obj):
        return "ptmod"  # a test's model (99-01's engine is built on it)
    if isinstance(obj, collections.abc.Iterator) and not callable(obj):
        return "titer"
    if callable(obj) and not isinstance(obj, type):
        return "cb"  # trusted code (a test's wrapper): the worker calls it back
    return "tobj" if lendable(obj) else None


def serve_lent(obj, kind: str, op: str, args: tuple, kwargs: dict):
    """What the worker asked of a lent thing: ``(result, is_method)``. A function answers a call, an
    iterator ``next``; an object of the test's class its public attributes and methods, ``==``,
    ``hash``, ``bool``."""
    if kind == "cb" and op == "call":
        return obj(*args, **kwargs), False
    if kind == "titer" and op == "next" and not args and not kwargs:
        return next(obj), False
    if kind == "tobj" and op in ("getattr", "setattr", "method"):
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
    if kind == "tobj" and op in ("eq", "ne") and len(args) == 1 and not kwargs:
        return (obj == args[0]) if op == "eq" else (obj != args[0]), False
    if kind == "tobj" and op in ("hash", "bool") and not args and not kwargs:
        return (hash(obj) if op == "hash" else bool(obj)), False
    raise ProtocolError(f"a malformed request for a test's object ({op!r})")


def is_torch_module(obj) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def module_bytes(module) -> bytes:
    """A test's ``torch.nn.Module`` (a model an engine is built on), saved whole for the worker."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(module, buffer)
    return buffer.getvalue()


# --------------------------------------------------------------------------- the worker's side


def load_module(raw) -> object:
    """In the worker: the module :func:`module_bytes` saved (its class must be importable there)."""
    import io

    import torch

    if type(raw) is not bytes:
        raise ProtocolError("malformed module data")
    return torch.load(io.BytesIO(raw), weights_only=False)


class GraderObject:
    """A test's own object, living in the grader: every use asks it there (``ask(op, index, *args)``).

    Only public names are asked for; a ``_`` name is an AttributeError at once (the grader would
    refuse it anyway). ``repr`` is answered here, so that printing one costs nothing."""

    __slots__ = ("_ask", "_index", "__weakref__")  # a submission may hold it weakly, as the test's own

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


class GraderIterator:
    """An iterator the test passed (``reversed(blocks)``): each ``next`` asks the grader for one item."""

    __slots__ = ("_ask", "_index", "__weakref__")  # a submission may hold it weakly, as the test's own

    def __init__(self, ask, index: int):
        self._ask, self._index = ask, index

    def __iter__(self):
        return self

    def __next__(self):
        return self._ask("next", self._index)

    def __repr__(self):
        return f"<a test's iterator #{self._index}>"


# --------------------------------------------------------------------------- a test's patches

WATCHED_MODULES = ("numpy", "numpy.linalg", "math")  # a test may patch their functions (04-01 wraps np.exp)


class Patches:
    """The functions of the watched modules that a lab's tests replace (its ``lab.toml`` declares them:
    ``patches = ["numpy.exp"]``), as they were when made; :meth:`current` names those replaced since."""

    def __init__(self, watched=()):
        self.originals = {}  # (module name, function name) -> the function
        for dotted in watched:
            module_name, _, attr = dotted.rpartition(".")
            if module_name in WATCHED_MODULES:
                self.originals[module_name, attr] = getattr(importlib.import_module(module_name), attr)

    def current(self) -> dict:
        """The watched functions a test has replaced: "module:name" -> function."""
        patched = {}
        for (module_name, attr), original in self.originals.items():
            now = vars(sys.modules[module_name]).get(attr, original)
            if now is not original:
                patched[f"{module_name}:{attr}"] = now
        return patched


@contextlib.contextmanager
def patched(patches: dict):
    """Replace watched module functions ("numpy:exp") by the test's wrappers for one call."""
    saved = []
    try:
        for key, value in patches.items():
            module_name, attr = str(key).split(":", 1)
            if module_name in WATCHED_MODULES:
                module = importlib.import_module(module_name)
                saved.append((module, attr, getattr(module, attr)))
                setattr(module, attr, value)
        yield
    finally:
        for module, attr, original in reversed(saved):
            setattr(module, attr, original)


_MISSING = object()


@contextlib.contextmanager
def names_patched(module, names, deleted):
    """The submission's ``module`` with ``names`` (name -> value) set and ``deleted`` removed for one call,
    as the test's stand-in module holds them; each name as it was before, after the call."""
    if type(names) is not dict or type(deleted) is not list:
        raise ProtocolError("malformed patches of the submission's names")
    saved = []
    try:
        for name, value in [*names.items(), *((name, _MISSING) for name in deleted)]:
            public_name(name)
            saved.append((name, vars(module).get(name, _MISSING)))
            if value is _MISSING:
                vars(module).pop(name, None)
            else:
                setattr(module, name, value)
        yield
    finally:
        for name, original in reversed(saved):
            if original is _MISSING:
                vars(module).pop(name, None)
            else:
                setattr(module, name, original)



MAX_WARNING_FILTERS = 64  # of the test's warning filters, the first that cross to the worker


def the_tests_warning_filters() -> list:
    """The grader's side: the test's warning filters now, those that name a built-in warning class, as plain
    ``(action, message pattern, class name, module pattern, line)``: a test that makes a warning an error
    (02-02: numpy's RuntimeWarning on an int32 overflow is a wrong answer) makes it one in the submission's
    code, as in one process (under ``labs grade`` the worker's own filters only printed it)."""
    import builtins

    return [(action, getattr(message, "pattern", ""), category.__name__, getattr(module, "pattern", ""), lineno)
            for action, message, category, module, lineno in warnings.filters[:MAX_WARNING_FILTERS]
            if getattr(builtins, category.__name__, None) is category]


_MIRRORED: dict = {}  # the worker's own filters ("own") and the test's last applied in front of them ("test")


@contextlib.contextmanager
def warning_filters(filters):
    """The worker's side: ``filters`` (:func:`the_tests_warning_filters`) in front of the worker's own, from
    this call on; remade only when the test's change (calls are many, filters rarely change)."""
    import builtins

    if type(filters) is not list or len(filters) > MAX_WARNING_FILTERS:
        raise ProtocolError("malformed warning filters")
    if _MIRRORED.get("test") != filters:
        own = _MIRRORED.setdefault("own", list(warnings.filters))
        warnings.resetwarnings()  # caches of earlier decisions are dropped with it
        warnings.filters.extend(own)
        for item in reversed(filters):  # each goes in front: the test's first filter ends first
            try:
                action, message, name, module, lineno = item
                category = getattr(builtins, name)
                if not (isinstance(category, type) and issubclass(category, Warning)):
                    raise TypeError(name)
                warnings.filterwarnings(action, message, category, module, lineno)
            except Exception as err:
                _MIRRORED.pop("test", None)
                raise ProtocolError(f"a malformed warning filter: {err!r}") from None
        _MIRRORED["test"] = filters
    yield


MAX_WARNINGS = 64  # the warnings of one call that go back to the grader: the first (a loop may emit millions)


@contextlib.contextmanager
def warnings_kept(kept: list, describe):
    """The worker's side: the warnings the submission's code emits during a call, as ``describe`` makes each
    (the first :data:`MAX_WARNINGS`), kept in ``kept`` rather than shown: the grader emits them again in the
    test, whose filters, ``pytest.warns`` and ``catch_warnings`` see them as in one process. The filters that
    crossed still decide here first (an error raises in the submission's code; an ignored one is not kept)."""

    def keep(message, category, filename, lineno, file=None, line=None):
        if len(kept) < MAX_WARNINGS:
            kept.append(describe(message))

    with warnings.catch_warnings():
        warnings.showwarning = keep
        yield


def the_tests_torch_modes() -> tuple | None:
    """The grader's side: torch's deterministic mode as the test set it, ``(warn_only, fill uninitialized
    memory)``, or None when it is off (or torch is not loaded). A test that turns it on with the fill (04-03,
    04-06: every ``torch.empty`` is then NaN, so an output row a kernel never writes shows every time) has
    it in the submission's code too, as in one process; in the worker, memory came back zero by luck."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.are_deterministic_algorithms_enabled():
        return None
    return (torch.is_deterministic_algorithms_warn_only_enabled(),
            bool(torch.utils.deterministic.fill_uninitialized_memory))


@contextlib.contextmanager
def torch_modes(modes):
    """The worker's side: torch's deterministic mode as ``modes`` (:func:`the_tests_torch_modes`) says during
    a call, the worker's own after it (None: the worker's own throughout)."""
    if modes is None:
        yield
        return
    if type(modes) is not tuple or len(modes) != 2 or any(type(m) is not bool for m in modes):
        raise ProtocolError("malformed torch modes")
    import torch

    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=modes[0])
    torch.utils.deterministic.fill_uninitialized_memory = modes[1]
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        torch.utils.deterministic.fill_uninitialized_memory = was[2]
