"""Values across the pipe: plain data, containers, numpy arrays and scalars, torch tensors, dtypes,
frozen dataclass instances, as tagged tuples of plain values for :mod:`labkit.grader.wire`; anything
else goes to the caller's ``on_object``. Decoding trusts nothing. Staged into the sandbox."""

from __future__ import annotations

import builtins
import dataclasses

from labkit.grader.wire import ProtocolError

MAX_NESTING = 32
_NUMPY_KINDS = set("biufc")  # bool, signed, unsigned, float, complex
_TORCH_DTYPES = {"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}


def encode(value, on_object=None, arguments: dict | None = None, _depth: int = 0):
    """``value`` as nested tuples of plain values, tagged by kind. ``on_object(obj)`` turns what is not
    data into a reference (else TypeError); ``arguments`` (``id()`` -> index of the call's arrays): a
    result that *is* one of them crosses as ``("arg", index)``, to come back as the caller's own."""
    if _depth > MAX_NESTING:
        raise TypeError("nested too deeply")
    if arguments and id(value) in arguments:
        return ("arg", arguments[id(value)])

    def inner(v):
        return encode(v, on_object, arguments, _depth + 1)

    kind = type(value)
    if value is None or kind in (bool, int, float, str, bytes):
        return ("v", value)
    if kind in (tuple, list):
        return ("t" if kind is tuple else "l", [inner(v) for v in value])
    if kind in (set, frozenset):
        return ("s" if kind is set else "fs", [inner(v) for v in value])
    if kind is dict:
        return ("d", [(inner(k), inner(v)) for k, v in value.items()])
    if kind is complex:
        return ("c", value.real, value.imag)
    if isinstance(value, Record):
        return ("dc", value._name, [(k, inner(v)) for k, v in value._fields.items()])
    if isinstance(value, tuple) and isinstance(getattr(kind, "_fields", None), tuple):  # a named tuple
        return ("t", [inner(v) for v in value])
    if _is_record(value, mutable_too=on_object is None):  # a value: its fields; a mutable one is an object
        return ("dc", kind.__name__, [(f.name, inner(getattr(value, f.name))) for f in dataclasses.fields(value)])
    module = kind.__module__ or ""
    try:
        if module.startswith("numpy") or isinstance(value, type) and (value.__module__ or "").startswith("numpy"):
            return _encode_numpy(value)  # arrays, scalars, dtypes (np.float32 is a class)
        if module.startswith("torch"):
            return _encode_torch(value)
    except _NotData:
        if on_object is None:
            raise
        return on_object(value)  # a torch module, a random generator...: an object, not data
    for base in (bool, int, float, str):  # a subclass of a plain type: keep only the plain value
        if isinstance(value, base):
            return ("v", base(value))
    if on_object is not None:
        return on_object(value)
    raise TypeError(f"a {kind.__qualname__} cannot be passed between the grader and a submission")


def _is_record(value, mutable_too: bool) -> bool:
    """A dataclass instance that crosses by value: a frozen one (a value has no identity to keep),
    or any one where no object can stay behind (no ``on_object``)."""
    return not isinstance(value, type) and dataclasses.is_dataclass(value) and (mutable_too or frozen(type(value)))


def frozen(cls: type) -> bool:
    """Whether ``cls`` is a frozen dataclass."""
    return dataclasses.is_dataclass(cls) and bool(getattr(getattr(cls, "__dataclass_params__", None), "frozen", False))


class _NotData(TypeError):
    """An object of numpy or torch that is not an array, a scalar or a dtype (a module, a generator)."""


def _encode_numpy(value):
    import numpy as np

    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return ("npdt", _checked_numpy_dtype(np.dtype(value)).str)
    if isinstance(value, np.generic):
        return ("nps", _checked_numpy_dtype(value.dtype).str, value.tobytes())
    if isinstance(value, np.ndarray):
        _checked_numpy_dtype(value.dtype)
        return ("nd", value.dtype.str, tuple(int(n) for n in value.shape), np.ascontiguousarray(value).tobytes(),
                bool(value.flags.writeable))
    raise _NotData(f"a {type(value).__qualname__} cannot be passed between the grader and a submission")


def _checked_numpy_dtype(dtype):
    if dtype.kind not in _NUMPY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise TypeError(f"numpy dtype {dtype} cannot be passed between the grader and a submission")
    return dtype


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
    raise _NotData(f"a {type(value).__qualname__} cannot be passed between the grader and a submission")


def _torch_dtype_name(dtype) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in _TORCH_DTYPES:
        raise TypeError(f"torch dtype {name} cannot be passed between the grader and a submission")
    return name


# --------------------------------------------------------------------------- decoding


def decode(data, hooks: dict | None = None):
    """The inverse of :func:`encode`; ProtocolError on anything malformed. ``hooks``: tag -> function of
    the payload, for the tags only one side accepts (references: "h", "api", "cb", "tobj", "arg"...)."""
    try:
        return _decode(data, hooks or {}, 0)
    except ProtocolError:
        raise
    except Exception as err:  # malformed shapes, bad dtype strings, wrong arity (unpacking the payload)...
        raise ProtocolError(f"malformed value: {type(err).__name__}: {err}") from None


def _decode(data, hooks: dict, depth: int):
    if depth > MAX_NESTING or type(data) is not tuple or not data or type(data[0]) is not str:
        raise ProtocolError("malformed value")
    tag, *rest = data
    if tag in hooks:
        return hooks[tag](*rest)
    depth += 1
    if tag == "v":
        (value,) = rest
        if value is not None and type(value) not in (bool, int, float, str, bytes):
            raise ProtocolError("malformed plain value")
        return value
    if tag in ("t", "l", "s", "fs"):
        (items,) = rest
        items = [_decode(v, hooks, depth) for v in _checked(items, list, "container")]
        if tag in ("s", "fs"):
            try:
                frozenset(items)
            except TypeError:
                raise ProtocolError("a set with an unhashable member") from None
        return {"t": tuple, "l": list, "s": set, "fs": frozenset}[tag](items)
    if tag == "d":
        (items,) = rest
        return {_decode(k, hooks, depth): _decode(v, hooks, depth) for k, v in _checked(items, list, "container")}
    if tag == "c":
        real, imag = rest
        return complex(_plain_float(real), _plain_float(imag))
    if tag == "dc":
        name, fields = rest
        return Record(_identifier(name), {_identifier(k): _decode(v, hooks, depth)
                                                for k, v in _checked(fields, list, "container")})
    if tag in ("npdt", "nps", "nd"):
        import numpy as np

        if tag == "npdt":
            (dtype_str,) = rest
            return _numpy_dtype(dtype_str)
        if tag == "nps":
            dtype_str, raw = rest
            return np.frombuffer(_checked(raw, bytes, "array data"), dtype=_numpy_dtype(dtype_str))[0]
        dtype_str, shape, raw, writeable = rest
        array = np.frombuffer(_checked(raw, bytes, "array data"), dtype=_numpy_dtype(dtype_str))
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
        name, shape, device, raw = rest
        dtype, shape, raw = _torch_dtype(name), _shape(shape), _checked(raw, bytes, "array data")
        if device == "meta":
            return torch.empty(shape, dtype=dtype, device="meta")
        if not raw:
            if 0 in shape:  # an empty tensor has no data to send
                return torch.empty(shape, dtype=dtype).to(_device(device))
            raise ProtocolError("a tensor without its data")  # never allocate on the sender's word
        return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape).to(_device(device))
    raise ProtocolError(f"unknown tag {tag!r}")


def builtin_exception(name):
    """The built-in exception class called ``name`` (an error crosses as its name), else None."""
    cls = getattr(builtins, str(name), None)
    return cls if isinstance(cls, type) and issubclass(cls, Exception) else None


class Record:
    """A dataclass instance of the submission, as its fields: ``budget.total_bytes`` reads like
    the original; passed back to the submission it becomes one again. Read-only."""

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


def _identifier(name):
    if type(name) is not str or not name.isidentifier() or name.startswith("__"):
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


def _numpy_dtype(dtype_str):
    import numpy as np

    if type(dtype_str) is not str or len(dtype_str) > 8:
        raise ProtocolError("malformed dtype")
    try:
        return _checked_numpy_dtype(np.dtype(dtype_str))
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
    """Write ``source`` (decoded from the worker) into the caller's ``target``, if it may be written."""
    if type(target).__module__.startswith("torch"):
        import torch

        with torch.no_grad():
            target.copy_(source.to(target.device))
    elif target.flags.writeable:
        target[...] = source
