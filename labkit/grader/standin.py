"""A student's module, run in a worker process and called from the trusted one.

``labs grade`` never imports a submission into the process that decides its
grade. The instructor's tests run in a trusted pytest process against a
:class:`Submission`: a stand-in module whose functions forward each call to a
worker subprocess (``python -m labkit.grader.worker``) that imported the student's
file. The worker sends back the result and any array argument it changed in
place (``write_kv`` scatters into the cache), and the stand-in copies those
changes into the caller's arrays, so the tests cannot tell the difference.

What crosses the pipe is plain data only: numbers, strings, lists, tuples,
dicts, and numpy arrays / torch tensors as (dtype, shape, raw bytes). The
trusted side unpickles with every global refused, so nothing the worker sends
can run code here. A call that does not return within its time limit, or a
worker that dies, ends that call with :class:`SubmissionTimeout` or
:class:`SubmissionCrashed`; the next call starts a fresh worker.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import io
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MESSAGE = 1 << 28  # bytes (256 MiB); anything larger is a protocol error
_HEADER = struct.Struct("<Q")

# numpy dtype kinds that cross: bool, signed, unsigned, float, complex.
_NUMPY_KINDS = set("biufc")
_TORCH_DTYPES = {
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
}


# Modules whose functions a test may monkeypatch to watch how the submission computes
# (lab 04-01 wraps np.exp to check that the scores are exponentiated block by block).
# A function patched there at call time is patched in the worker too, for that call,
# as a callback into the test's wrapper.
WATCHED_MODULES = ("numpy", "numpy.linalg", "math")


def watched_functions() -> dict[tuple[str, str], object]:
    functions = {}
    for name in WATCHED_MODULES:
        module = sys.modules.get(name)
        for attr, value in vars(module).items() if module else ():
            if callable(value) and not attr.startswith("_"):
                functions[name, attr] = value
    return functions


class SubmissionTimeout(BaseException):
    """A call into the submission ran past its time limit.

    A BaseException, like pytest's own outcomes, so that a test's
    ``pytest.raises(Exception)`` cannot swallow it and count the test passed."""


class SubmissionCrashed(BaseException):
    """The worker died, failed to import the submission, or broke the protocol."""


class RemoteError(Exception):
    """The submission raised an exception that is not one of Python's built-in ones."""


class ProtocolError(Exception):
    """Malformed data on the pipe."""


# --------------------------------------------------------------------------- wire format


def encode(value, on_callable=None, _depth: int = 0, arguments: dict | None = None):
    """``value`` as nested tuples of plain Python data, tagged by kind.

    Dataclass instances and named tuples cross as records of their fields.
    ``on_callable(fn)`` may turn a function into a tag (the trusted side's
    callbacks); otherwise, and for anything else (an object array, an
    arbitrary class), TypeError. ``arguments`` maps ``id()`` of the call's
    array arguments to their index: a result that *is* one of them crosses as
    ``("arg", index)`` and comes back as the caller's own array."""
    if _depth > 32:
        raise TypeError("nested too deeply")
    if arguments and id(value) in arguments:
        return ("arg", arguments[id(value)])

    def inner(v):
        return encode(v, on_callable, _depth + 1, arguments)

    if value is None or isinstance(value, (bool, int, float, str, bytes)) and type(value).__module__ == "builtins":
        return ("v", _plain(value))
    if isinstance(value, complex) and type(value) is complex:
        return ("c", value.real, value.imag)
    if type(value) in (tuple, list):
        tag = "t" if type(value) is tuple else "l"
        return (tag, [inner(v) for v in value])
    if type(value) is dict:
        return ("d", [(inner(k), inner(v)) for k, v in value.items()])
    if isinstance(value, Record):
        return ("dc", value._name, [(k, inner(v)) for k, v in value._fields.items()])
    if isinstance(value, tuple) and isinstance(getattr(type(value), "_fields", None), tuple):  # a named tuple
        return ("nt", type(value).__name__, [str(f) for f in type(value)._fields], [inner(v) for v in value])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [(f.name, inner(getattr(value, f.name))) for f in dataclasses.fields(value)]
        return ("dc", type(value).__name__, fields)
    module = type(value).__module__ or ""
    if module.startswith("numpy") or isinstance(value, type) and (value.__module__ or "").startswith("numpy"):
        return _encode_numpy(value)  # arrays, scalars, dtypes (np.float32 is a class)
    if module.startswith("torch"):
        return _encode_torch(value)
    if on_callable is not None and callable(value):
        return on_callable(value)
    if isinstance(value, (bool, int, float, str)):  # a subclass: keep only the plain value
        for base in (bool, int, float, str):
            if isinstance(value, base):
                return ("v", base(value))
    raise TypeError(f"a {type(value).__qualname__} cannot be passed between the grader and a submission")


def _plain(value):
    return value if value is None else type(value)(value)


def _encode_numpy(value):
    import numpy as np

    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        dtype = np.dtype(value)
        _check_numpy_dtype(dtype)
        return ("npdt", dtype.str)
    if isinstance(value, np.generic):
        _check_numpy_dtype(value.dtype)
        return ("nps", value.dtype.str, value.tobytes())
    if isinstance(value, np.ndarray):
        _check_numpy_dtype(value.dtype)
        return ("nd", value.dtype.str, tuple(int(n) for n in value.shape),
                np.ascontiguousarray(value).tobytes(), bool(value.flags.writeable))
    raise TypeError(f"a {type(value).__qualname__} cannot be passed between the grader and a submission")


def _check_numpy_dtype(dtype) -> None:
    if dtype.kind not in _NUMPY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise TypeError(f"numpy dtype {dtype} cannot be passed between the grader and a submission")


def _encode_torch(value):
    import torch

    if isinstance(value, torch.dtype):
        return ("ptdt", _torch_dtype_name(value))
    if isinstance(value, torch.device):
        return ("ptdev", value.type)
    if isinstance(value, torch.Tensor):
        name = _torch_dtype_name(value.dtype)
        if value.device.type == "meta":  # shape and dtype only, no data
            return ("pt", name, tuple(int(n) for n in value.shape), "meta", b"")
        t = value.detach().to("cpu").contiguous()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return ("pt", name, tuple(int(n) for n in t.shape), value.device.type, raw)
    raise TypeError(f"a {type(value).__qualname__} cannot be passed between the grader and a submission")


def _torch_dtype_name(dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in _TORCH_DTYPES:
        raise TypeError(f"torch dtype {name} cannot be passed between the grader and a submission")
    return name


def decode(data, hooks: dict | None = None):
    """The inverse of :func:`encode`; ProtocolError on anything malformed.

    ``hooks`` maps the tags only the worker accepts ("cb", "fn", "dc") to
    functions of the payload; without them "dc" gives a :class:`Record` and
    the others are refused."""
    try:
        return _decode(data, 0, hooks or {})
    except ProtocolError:
        raise
    except Exception as err:  # malformed shapes, bad dtype strings, wrong arity...
        raise ProtocolError(f"malformed value: {type(err).__name__}: {err}") from None


def _decode(data, depth, hooks):
    if depth > 32 or type(data) is not tuple or not data or type(data[0]) is not str:
        raise ProtocolError("malformed value")
    tag, *rest = data
    if tag in hooks:
        return hooks[tag](*rest)
    if tag == "dc":
        name, fields = rest
        return Record(_identifier(name), {_identifier(k): _decode(v, depth + 1, hooks) for k, v in _as_list(fields)})
    if tag == "nt":
        name, fields, values = rest
        cls = _named_tuple(_identifier(name), tuple(_identifier(f) for f in _as_list(fields)))
        return cls(*[_decode(v, depth + 1, hooks) for v in _as_list(values)])
    if tag == "v":
        (value,) = rest
        if value is not None and type(value) not in (bool, int, float, str, bytes):
            raise ProtocolError("malformed plain value")
        return value
    if tag == "c":
        return complex(float(rest[0]), float(rest[1]))
    if tag in ("t", "l"):
        (items,) = rest
        out = [_decode(v, depth + 1, hooks) for v in _as_list(items)]
        return tuple(out) if tag == "t" else out
    if tag == "d":
        (items,) = rest
        return {_decode(k, depth + 1, hooks): _decode(v, depth + 1, hooks) for k, v in _as_list(items)}
    if tag == "npdt":
        return _numpy_dtype(rest[0])
    if tag == "nps":
        import numpy as np

        dtype_str, raw = rest
        return np.frombuffer(_as_bytes(raw), dtype=_numpy_dtype(dtype_str))[0]
    if tag == "nd":
        import numpy as np

        dtype_str, shape, raw, writeable = rest
        array = np.frombuffer(_as_bytes(raw), dtype=_numpy_dtype(dtype_str)).reshape(_shape(shape)).copy()
        array.flags.writeable = bool(writeable)
        return array
    if tag == "ptdt":
        return _torch_dtype(rest[0])
    if tag == "ptdev":
        import torch

        return torch.device(_device(rest[0]))
    if tag == "pt":
        import torch

        name, shape, device, raw = rest
        dtype = _torch_dtype(name)
        shape = _shape(shape)
        raw = _as_bytes(raw)
        if device == "meta":
            return torch.empty(shape, dtype=dtype, device="meta")
        if not raw and any(shape) and 0 not in shape:  # no data for a non-empty tensor: refuse to allocate it
            raise ProtocolError("a tensor without its data")
        if raw:
            t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)
        else:
            t = torch.empty(shape, dtype=dtype)
        return t.to(_device(device))
    raise ProtocolError(f"unknown tag {tag!r}")


class Record:
    """A dataclass instance of the submission, as its fields: ``budget.total_bytes``
    reads like the original; passed back to the submission it becomes one again."""

    def __init__(self, name: str, fields: dict):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_fields", dict(fields))

    def __getattr__(self, name):
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"{self._name} has no field {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"{self._name} (a submission's record) is read-only")

    def __eq__(self, other):
        return isinstance(other, Record) and (self._name, self._fields) == (other._name, other._fields)

    __hash__ = None

    def __repr__(self):
        return f"{self._name}({', '.join(f'{k}={v!r}' for k, v in self._fields.items())})"


_NAMED_TUPLES: dict = {}


def _named_tuple(name: str, fields: tuple):
    if (name, fields) not in _NAMED_TUPLES:
        _NAMED_TUPLES[name, fields] = collections.namedtuple(name, fields)
    return _NAMED_TUPLES[name, fields]


def _identifier(name):
    if type(name) is not str or not name.isidentifier() or name.startswith("__"):
        raise ProtocolError("malformed name")
    return name


def _as_list(items):
    if type(items) is not list:
        raise ProtocolError("malformed container")
    return items


def _as_bytes(raw):
    if type(raw) is not bytes:
        raise ProtocolError("malformed array data")
    return raw


def _shape(shape):
    if type(shape) is not tuple or not all(type(n) is int and n >= 0 for n in shape):
        raise ProtocolError("malformed shape")
    return shape


def _numpy_dtype(dtype_str):
    import numpy as np

    if type(dtype_str) is not str:
        raise ProtocolError("malformed dtype")
    dtype = np.dtype(dtype_str)
    _check_numpy_dtype(dtype)
    return dtype


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


class _PlainUnpickler(pickle.Unpickler):
    """Builds only pickle's built-in data (None, bool, int, float, str, bytes,
    tuple, list, dict): every class or function lookup is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused to load {module}.{name}")


def dumps(message) -> bytes:
    return pickle.dumps(message, protocol=4)


def loads(raw: bytes):
    try:
        return _PlainUnpickler(io.BytesIO(raw)).load()
    except Exception as err:
        raise ProtocolError(f"unreadable message: {type(err).__name__}: {err}") from None


def send(fd: int, message) -> None:
    raw = dumps(message)
    view = memoryview(_HEADER.pack(len(raw)) + raw)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def recv(fd: int, deadline: float | None = None):
    """The next message from ``fd``. TimeoutError past ``deadline`` (a
    ``time.monotonic()`` value), EOFError when the other end closed."""
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    if size > MAX_MESSAGE:
        raise ProtocolError(f"message of {size} bytes")
    return loads(_read_exactly(fd, size, deadline))


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# --------------------------------------------------------------------------- in-place changes


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


def copy_into(target, source) -> None:
    """Write ``source`` (decoded from the worker) into the caller's ``target``."""
    if type(target).__module__.startswith("torch"):
        import torch

        with torch.no_grad():
            target.copy_(source.to(target.device))
    elif target.flags.writeable:
        target[...] = source


# --------------------------------------------------------------------------- the trusted side


def _builtin_exception(name: str):
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls
    return None


class Submission(types.ModuleType):
    """A stand-in module for a student's file that lives in a worker process.

    ``file``: the student's file (a private snapshot). ``triton``: select the
    Triton backend in the worker before importing it. ``call_timeout``: seconds
    one call may take. ``deadline``: a ``time.time()`` after which every call
    fails at once (the lab's time limit). ``import_timeout``: seconds the
    import may take. ``on_incident(kind, message)``: told about every timeout
    and crash, so the grader can tell them from ordinary failures.
    """

    def __init__(self, file: Path, *, triton: bool = False, call_timeout: float = 10.0,
                 deadline: float | None = None, import_timeout: float = 60.0, on_incident=None):
        super().__init__("submission", f"a student's {Path(file).name}, run in a worker process")
        self._file = Path(file)
        self._triton = triton
        self._call_timeout = call_timeout
        self._deadline = deadline
        self._import_timeout = import_timeout
        self._on_incident = on_incident or (lambda kind, message: None)
        self._worker: _Worker | None = None
        self._callbacks: list = []  # the trusted functions the worker may call back (monkeypatched globals)
        self._callback_index: dict[int, int] = {}
        self._baseline = watched_functions()  # numpy's functions as they were before any test patched one
        names = self._start()
        for name, (kind, payload) in names.items():
            if kind in ("function", "class"):
                setattr(self, name, _RemoteFunction(self, name))
            elif kind == "kernel":
                setattr(self, name, _RemoteKernel(self, name))
            elif kind == "value":
                setattr(self, name, decode(payload))

    # -- time budget
    def _seconds_left(self, limit: float) -> float:
        if self._deadline is None:
            return limit
        return min(limit, self._deadline - time.time())

    def _incident(self, exc_type, kind: str, message: str):
        self._on_incident(kind, message)
        return exc_type(message)

    # -- the worker
    def _start(self) -> dict:
        wait = self._seconds_left(self._import_timeout)
        if wait <= 0:
            raise self._incident(SubmissionTimeout, "timeout", "the lab's time limit was reached before this test")
        worker = _Worker(self._file, self._triton)
        try:
            reply = worker.recv(time.monotonic() + wait)
        except TimeoutError:
            worker.kill()
            raise self._incident(
                SubmissionTimeout, "timeout", f"importing {self._file.name} did not finish within {wait:.0f} s"
            ) from None
        except (EOFError, ProtocolError) as err:
            worker.kill()
            raise self._incident(SubmissionCrashed, "crashed", f"importing {self._file.name}: {worker.death(err)}") \
                from None
        if _tag(reply) == "error":
            worker.kill()
            raise self._incident(SubmissionCrashed, "crashed", f"importing {self._file.name} raised {_describe(reply)}")
        if _tag(reply) != "ready" or type(reply[1]) is not dict:
            worker.kill()
            raise self._incident(SubmissionCrashed, "crashed", "the worker broke the protocol at import")
        self._worker = worker
        return {k: v for k, v in reply[1].items() if type(k) is str and type(v) is tuple and len(v) == 2}

    def _encode_arg(self, value):
        return encode(value, on_callable=self._callable_tag)

    def _callable_tag(self, fn):
        if isinstance(fn, _RemoteFunction) and fn._owner is self:
            return ("fn", fn.__name__)  # the submission's own function
        if id(fn) not in self._callback_index:  # trusted code (a test's wrapper): the worker calls back
            self._callback_index[id(fn)] = len(self._callbacks)
            self._callbacks.append(fn)  # kept alive, so its id is never reused
        return ("cb", self._callback_index[id(fn)])

    def _patches(self) -> dict:
        """The watched functions a test has replaced since this stand-in was made: "module:name" -> function."""
        patched = {}
        for (module, attr), original in self._baseline.items():
            current = getattr(sys.modules.get(module), attr, original)
            if current is not original:
                patched[f"{module}:{attr}"] = current
        return patched

    def _run_callback(self, message) -> tuple:
        """Run a trusted callback the worker asked for; the reply to send back."""
        try:
            _, index, args, kwargs = message
            fn = self._callbacks[index]
            args, kwargs = decode(args), decode(kwargs)
        except (ValueError, TypeError, IndexError, ProtocolError) as err:
            raise ProtocolError(f"a malformed callback: {err}") from None
        try:
            return ("cbret", self._encode_arg(fn(*args, **kwargs)))
        except Exception as err:  # the test's code raised: the submission sees it raised
            return ("cberr", type(err).__name__, str(err))

    def _set_global(self, name: str, value) -> None:
        """``module.name = value`` inside the worker (monkeypatching through ``__globals__``)."""
        self._call(("setglobal", name), f"setting {name}", (value,), {})

    def _call(self, request: tuple, what: str, args: tuple, kwargs: dict):
        leaves = array_leaves((args, kwargs))
        payload = (*request, self._encode_arg(args), self._encode_arg(kwargs), self._encode_arg(self._patches()))
        if self._worker is None:  # the last call timed out or crashed: a fresh import
            self._start()
        wait = self._seconds_left(self._call_timeout)
        if wait <= 0:
            self._stop()
            raise self._incident(SubmissionTimeout, "timeout", f"{what}: the lab's time limit was reached")
        worker = self._worker
        deadline = time.monotonic() + wait
        try:
            worker.send(payload)
            reply = worker.recv(deadline)
            while _tag(reply) == "callback":  # the submission calls a test's function, which may call back in
                worker.send(self._run_callback(reply))
                reply = worker.recv(deadline)
        except TimeoutError:
            self._stop()
            limit = "per-call" if wait >= self._call_timeout else "the lab's"
            raise self._incident(SubmissionTimeout, "timeout", f"{what} did not return within {wait:.1f} s ({limit} "
                                 "time limit)") from None
        except (EOFError, BrokenPipeError, ProtocolError) as err:
            message = f"{what}: {worker.death(err)}"
            self._stop()
            raise self._incident(SubmissionCrashed, "crashed", message) from None
        try:
            return self._unpack(reply, leaves, what)
        except ProtocolError as err:
            self._stop()
            raise self._incident(SubmissionCrashed, "crashed", f"{what}: the worker sent {err}") from None

    def _unpack(self, reply, leaves: list, what: str):
        tag = _tag(reply)
        if tag == "error":
            _, kind, builtin_name, qualname, message = (reply + ("",) * 5)[:5]
            if kind != "exception":
                self._stop()
                raise self._incident(SubmissionCrashed, "crashed", f"{what} raised {_describe(reply)}")
            cls = _builtin_exception(str(builtin_name))
            text = str(message) if qualname == builtin_name else f"({qualname}) {message}"
            raise (cls or RemoteError)(text)
        if tag != "ok" or len(reply) != 3 or type(reply[2]) is not list:
            raise ProtocolError("a malformed reply")
        for item in reply[2]:
            if type(item) is not tuple or len(item) != 2 or type(item[0]) is not int:
                raise ProtocolError("a malformed in-place update")
            index, data = item
            if not 0 <= index < len(leaves):
                raise ProtocolError("an in-place update of an unknown argument")
            new = decode(data)
            if tuple(new.shape) != tuple(leaves[index].shape):
                raise ProtocolError("an in-place update of the wrong shape")
            copy_into(leaves[index], new)
        # After the copies: a result that is one of the arguments is the caller's (updated) array.
        return decode(reply[1], hooks={"arg": lambda i: leaves[_index(i, leaves)]})

    def _stop(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        self._stop()


def _index(i, leaves) -> int:
    if type(i) is not int or not 0 <= i < len(leaves):
        raise ProtocolError("a result naming an unknown argument")
    return i


def _tag(reply):
    return reply[0] if type(reply) is tuple and reply and type(reply[0]) is str else None


def _describe(reply) -> str:
    parts = [str(p) for p in reply[2:5]] if len(reply) >= 5 else ["?", "?", "?"]
    builtin_name, qualname, message = parts
    return f"{qualname}: {message}" if message else qualname


class _RemoteFunction:
    def __init__(self, owner: Submission, name: str):
        self._owner, self.__name__, self.__qualname__ = owner, name, name

    def __call__(self, *args, **kwargs):
        return self._owner._call(("call", self.__name__), f"{self.__name__}()", args, kwargs)

    @property
    def __globals__(self):
        """The submission module's namespace, for tests that monkeypatch what a function calls."""
        return _RemoteGlobals(self._owner)

    def __repr__(self):
        return f"<submission function {self.__name__}>"


class _RemoteGlobals:
    """The worker module's globals, as far as ``monkeypatch.setitem(fn.__globals__, name, f)`` needs:
    reading gives the stand-in's attributes; writing a function makes the worker call it back."""

    def __init__(self, owner: Submission):
        self._owner = owner

    def __getitem__(self, name):
        try:
            return getattr(self._owner, name)
        except AttributeError:
            raise KeyError(name) from None

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name):
        return hasattr(self._owner, name)

    def __setitem__(self, name, value):
        self._owner._set_global(name, value)

    def __delitem__(self, name):
        self._owner._call(("delglobal", name), f"deleting {name}", (), {})


class _RemoteKernel:
    """A ``@triton.jit`` kernel of the submission: ``kernel[grid](*args)`` launches it in the worker."""

    def __init__(self, owner: Submission, name: str):
        self._owner, self.__name__ = owner, name

    def __getitem__(self, grid):
        if callable(grid):
            raise TypeError("labs grade launches kernels with a tuple grid only")
        grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)

        def launch(*args, **kwargs):
            return self._owner._call(("launch", self.__name__, encode(grid)), f"{self.__name__}[{grid}]", args,
                                     kwargs)

        return launch

    def __repr__(self):
        return f"<submission kernel {self.__name__}>"


class _Worker:
    """One ``python -m labkit.grader.worker`` process, in its own session and scratch directory."""

    def __init__(self, file: Path, triton: bool):
        to_worker_r, self._to_worker = os.pipe()
        self._from_worker, from_worker_w = os.pipe()
        self._scratch = tempfile.TemporaryDirectory(prefix="labs-worker-")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LABS_", "PYTEST_"))}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        cmd = [sys.executable, "-m", "labkit.grader.worker", str(to_worker_r), str(from_worker_w), str(file),
               "triton" if triton else "numpy"]
        self._proc = subprocess.Popen(
            # The student's prints go nowhere: the verdict comes from the tests, and a print loop fills no disk.
            cmd, cwd=self._scratch.name, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, pass_fds=(to_worker_r, from_worker_w), start_new_session=True,
        )
        os.close(to_worker_r)
        os.close(from_worker_w)

    def send(self, message) -> None:
        send(self._to_worker, message)

    def recv(self, deadline: float):
        return recv(self._from_worker, deadline)

    def death(self, err: BaseException) -> str:
        """Why the worker stopped answering, in one line."""
        if isinstance(err, ProtocolError):
            return f"the worker sent {err}"
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "the worker closed its pipe"
        if code < 0:
            try:
                return f"the worker process was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"the worker process was killed by signal {-code}"
        return f"the worker process exited with code {code} (os._exit or sys.exit in the submission?)"

    def kill(self) -> None:
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)  # its children too
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._to_worker, self._from_worker):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self._scratch.cleanup()
        except OSError:
            pass  # whatever the student left there, it is in the system's temp folder
