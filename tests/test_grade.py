"""Tests of ``labs grade``: the wire format, the worker stand-in, the statuses, the reports.

Maintainer checks (``pytest -m maintainer``), like every test of the grader: a learner's ``pytest``
never depends on the grader's sandbox. The stand-in's workers run in the sandbox, so those tests
need bubblewrap. The hostile class is ``tests/test_hostile.py``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import copy
import csv
import gc
import importlib.util
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from labkit.course import registry, suite_record
from labkit.grader import grade, handles, report, sandbox, standin, values, wire

pytestmark = pytest.mark.maintainer
sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import make_class  # noqa: E402

needs_bwrap = pytest.mark.skipif(sandbox.bwrap() is None, reason=sandbox.INSTALL)


# --------------------------------------------------------------------------- the wire format


def _round_trip(value):
    return values.decode(wire.unpack(wire.pack(values.encode(value))))


def test_plain_data_and_arrays_cross_unchanged():
    rng = np.random.default_rng(0)
    value = {
        "ints": (1, -2, True, None, 2**70, -(2**63), 2**63, -(2**63) - 1, 10**5000, -(10**5000)),
        "float": 0.25,
        "text": ["a", b"b", "é\u2603"],
        "f64": rng.standard_normal((3, 4)),
        "f16": rng.standard_normal(5).astype(np.float16),
        "i32": np.arange(6, dtype=np.int32).reshape(2, 3),
        "scalar": np.float32(1.5),
        "empty": np.zeros((0, 4)),
        "dtype": np.dtype(np.int64),
        "dtype_class": np.float32,
        "set": {"FLASH_ATTN", ("a", 1)},
        "frozenset": frozenset({2, 3}),
        "deque": collections.deque([7, 3, 9], maxlen=5),
    }
    back = _round_trip(value)
    assert back.keys() == value.keys()
    for key in ("f64", "f16", "i32", "empty"):
        assert back[key].dtype == value[key].dtype and np.array_equal(back[key], value[key])
    assert back["ints"] == value["ints"] and type(back["ints"][2]) is bool  # past 4,300 digits too
    assert back["text"] == ["a", b"b", "é\u2603"]
    assert back["scalar"] == np.float32(1.5) and back["scalar"].dtype == np.float32
    assert back["dtype"] == np.dtype(np.int64) and back["dtype_class"] == np.dtype(np.float32)
    assert back["set"] == {"FLASH_ATTN", ("a", 1)} and type(back["set"]) is set
    assert back["frozenset"] == frozenset({2, 3}) and type(back["frozenset"]) is frozenset
    assert back["deque"] == collections.deque([7, 3, 9]) and back["deque"].maxlen == 5


def test_a_structured_array_crosses_with_its_fields():
    """A table as a numpy structured array (02-02's trade-off as columns of one array: pytest passes it,
    and it graded 39 of 42 when such dtypes were refused): its fields, offsets and views cross; a dtype
    of objects, of nested or repeated fields, or with a field past the item's end, is refused."""
    table = np.zeros(3, dtype=[("block_size", "<i8"), ("waste", "<f8"), ("fits", "?")])
    table["block_size"], table["waste"] = [16, 32, 64], [0.5, 0.25, 0.125]
    back = _round_trip({"table": table, "every_other": table[::2], "row": table[1], "dtype": table.dtype})
    assert back["table"].dtype == table.dtype and np.array_equal(back["table"], table)
    assert np.array_equal(back["every_other"]["waste"], [0.5, 0.125]) and back["row"]["block_size"] == 32
    assert back["dtype"] == table.dtype
    for wired in [("struct", [("a", "<f8", 4)], 8), ("struct", [("a", "|O", 0)], 8), ("struct", [], 8),
                  ("struct", [("a", "<f8", 0), ("a", "<f8", 0)], 8), ("struct", [("a", ("struct", [], 1), 0)], 8)]:
        with pytest.raises(values.ProtocolError):
            values.decode(("npdt", wired))
    for dtype in ([("a", "O")], [("a", "<f8", (2,))], [("a", [("b", "<f8")])]):
        with pytest.raises(TypeError, match="cannot be passed"):
            values.encode(np.zeros(2, dtype=dtype))


def test_read_only_arrays_stay_read_only():
    frozen = np.arange(4.0)
    frozen.flags.writeable = False
    assert not _round_trip(frozen).flags.writeable


def test_torch_tensors_cross_with_dtype_and_device():
    torch = pytest.importorskip("torch")
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.bool):
        t = (torch.arange(12) % 3).to(dtype).reshape(3, 4)
        back = _round_trip(t)
        assert back.dtype == dtype and torch.equal(back, t)
    meta = _round_trip(torch.empty(2, 3, device="meta"))
    assert meta.device.type == "meta" and meta.shape == (2, 3)
    assert _round_trip(torch.float16) is torch.float16


READS_AUTOGRAD = """
import torch


def requires_grad(t):
    return t.requires_grad


def through_numpy(t):
    return float(t.float().numpy().sum())  # numpy refuses a tensor that requires grad


def doubled(t):
    return t * 2
"""


@needs_bwrap
def test_a_tensor_that_requires_grad_crosses_as_one(submission):
    """A tensor that requires grad still does on the far side, both ways (a leaf there): numpy refuses it
    in the worker as in one process. Without the flag, 04-07's ``rank_summaries`` converting its inputs with
    ``.float().numpy()`` passed under ``labs grade`` the test that hands it ``q`` requiring grad, which fails
    it under pytest."""
    torch = pytest.importorskip("torch")
    sub = submission(READS_AUTOGRAD, {"requires_grad": "callable", "through_numpy": "callable",
                                      "doubled": "callable"}, call_timeout=10)
    q = torch.ones(3, dtype=torch.bfloat16).requires_grad_(True)
    assert sub.requires_grad(q) is True and sub.requires_grad(q.detach()) is False
    assert sub.requires_grad(q[1:]) is True  # a view of one storage, of a non-leaf too
    with pytest.raises(RuntimeError, match="requires grad"):
        sub.through_numpy(q)
    assert sub.through_numpy(q.detach()) == 3.0
    out = sub.doubled(q)
    assert out.requires_grad and torch.equal(out.detach(), torch.full((3,), 2.0, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="requires grad"):
        out.numpy()
    assert not sub.doubled(q.detach()).requires_grad


def test_records_and_named_tuples_keep_their_fields():
    """A dataclass crosses as its fields, and its properties' values and items where its class has them
    (a frozen summary a test unpacks, a margin a test reads); a named tuple as one with the same names,
    equal to the plain tuple. A submission's honest results in these styles graded lower before."""
    import collections
    import dataclasses
    import typing

    @dataclasses.dataclass
    class Budget:
        total_bytes: int
        fits: bool

    @dataclasses.dataclass(frozen=True, slots=True)
    class Partial:
        m: float
        denom: float

        @property
        def ratio(self):
            return self.m / self.denom

        @property
        def broken(self):
            raise ValueError("not this one")

        def __iter__(self):
            return iter((self.m, self.denom))

    Summary = collections.namedtuple("Summary", "m denom acc")

    class Choice(typing.NamedTuple):
        backend: str
        margin: float

    budget = _round_trip(Budget(2336, True))
    assert budget.total_bytes == 2336 and budget.fits is True
    with pytest.raises(TypeError, match="not iterable"):
        iter(budget)
    partial = _round_trip(Partial(1.0, 4.0))
    m, denom = partial
    assert (m, denom, partial.ratio, len(partial), partial[1]) == (1.0, 4.0, 0.25, 2, 4.0)
    with pytest.raises(AttributeError, match="broken"):
        partial.broken  # noqa: B018
    summary = _round_trip(Summary(1.0, 2.0, np.ones(3)))
    assert summary.m == 1.0 and summary.denom == 2.0 and np.array_equal(summary.acc, np.ones(3))
    assert summary[:2] == (1.0, 2.0) and type(summary).__name__ == "Summary"
    choice = _round_trip(Choice("FLASH_ATTN", 0.5))
    assert choice == ("FLASH_ATTN", 0.5) and choice.backend == "FLASH_ATTN" and choice._fields == ("backend", "margin")
    for bad in (("nt", "Summary", ["m", "class"], [("v", 1), ("v", 2)]), ("nt", "Summary", ["m"], [("v", 1), ("v", 2)]),
                ("nt", "Summary", ["m", "m"], [("v", 1), ("v", 2)]), ("nt", "__x", ["m"], [("v", 1)])):
        with pytest.raises(values.ProtocolError):
            values.decode(bad)


def test_a_record_iterable_through_getitem_crosses_with_its_items():
    """A frozen dataclass with ``__getitem__`` and no ``__iter__`` unpacks in one process (the old sequence
    protocol: items 0, 1, 2... until IndexError): its items cross, as those of one with ``__iter__`` do
    (04-04's summary written so graded 124 of 158, where pytest passes it all). One whose ``__getitem__``
    takes keys, or never ends, has none."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Summary:
        m: float
        denom: float

        def __getitem__(self, i):
            return (self.m, self.denom)[i]

    @dataclasses.dataclass(frozen=True)
    class Keyed:
        m: float

        def __getitem__(self, key):
            return {"m": self.m}[key]

    @dataclasses.dataclass(frozen=True)
    class Endless:
        m: float

        def __getitem__(self, i):
            return i

    m, denom = _round_trip(Summary(1.0, 2.0))
    assert (m, denom) == (1.0, 2.0) and _round_trip(Summary(1.0, 2.0))[1] == 2.0
    for record in (_round_trip(Keyed(1.0)), _round_trip(Endless(1.0))):
        assert record.m == 1.0
        with pytest.raises(TypeError):
            iter(record)


def test_a_records_cached_properties_cross_with_it():
    """A frozen dataclass's ``functools.cached_property`` (it writes the instance's ``__dict__`` directly, so
    a frozen class may have one) crosses as a property does: it was missing, and 04-02 with a ``margin``
    so written graded 317 of 320, where pytest passes it all."""
    import dataclasses
    import functools

    @dataclasses.dataclass(frozen=True)
    class Choice:
        time_us: float
        runner_up_us: float

        @functools.cached_property
        def margin(self):
            return self.runner_up_us / self.time_us

    assert _round_trip(Choice(2.0, 3.0)).margin == 1.5


def test_a_named_tuples_properties_cross_with_it():
    """A named tuple of a class with properties (``class Selection(namedtuple(...))`` whose ``rejected`` is
    a property) crosses with its properties' values, as a record does: they were lost, and 04-02 so
    written graded 245 of 320 (``sel.rejected``), 317 with a ``margin`` property, where pytest passes it
    all. It stays a named tuple, equal to the plain tuple, and passes back with them."""
    import collections
    import copy

    class Selection(collections.namedtuple("Selection", "backend reasons")):
        __slots__ = ()

        @property
        def rejected(self):
            return dict(self.reasons)

        @property
        def broken(self):
            raise ValueError("not this one")

    sel = _round_trip(Selection("FLASH_ATTN", (("XFORMERS", "slower"),)))
    assert sel.rejected == {"XFORMERS": "slower"} and sel.backend == "FLASH_ATTN" and type(sel).__name__ == "Selection"
    assert sel == ("FLASH_ATTN", (("XFORMERS", "slower"),)) and isinstance(sel, tuple)
    assert _round_trip(sel).rejected == {"XFORMERS": "slower"}, "passed back, with them"
    assert copy.copy(sel).rejected == {"XFORMERS": "slower"}
    from labkit.grader import containers

    rebuilt = containers._replaced(sel, (0,), "TRITON_ATTN")  # a returned container put back in it
    assert rebuilt.backend == "TRITON_ATTN" and rebuilt.rejected == {"XFORMERS": "slower"}
    with pytest.raises(AttributeError):
        sel.broken  # noqa: B018
    for bad in (("nt", "S", ["m"], [("v", 1)], [("m", ("v", 2))]),  # a property named as a field
                ("nt", "S", ["m"], [("v", 1)], [("_make", ("v", 2))]),  # or as what the class made here needs
                ("nt", "S", ["m"], [("v", 1)], [(f"p{i}", ("v", i)) for i in range(17)]),  # too many
                ("nt", "S", ["m"], [("v", 1)], [], [])):
        with pytest.raises(values.ProtocolError):
            values.decode(bad)


def test_a_results_array_or_tensor_subclass_crosses_as_the_base_class():
    """The worker's results (``plain_subclasses``): a student's subclass of ``np.ndarray`` or of
    ``torch.Tensor`` crosses as an array or tensor, values and dtype kept, even empty."""
    torch = pytest.importorskip("torch")

    class Table(np.ndarray):
        pass

    class Scores(torch.Tensor):
        pass

    for value, kind in ((np.zeros((0, 3), dtype=np.int64).view(Table), np.ndarray),
                        (np.arange(4.0).view(Table), np.ndarray),
                        (torch.arange(4.0).as_subclass(Scores), torch.Tensor)):
        back = values.decode(wire.unpack(wire.pack(values.encode(value, plain_subclasses=True))))
        assert type(back) is kind and back.shape == value.shape and back.dtype == value.dtype
        assert back.tolist() == value.tolist()


def test_keys_that_hash_alike_are_refused_before_a_table_is_built():
    """Python's hash of an int is not random: ``k * (2**61 - 1)`` hashes to 0 for every k, and a dict or
    set of n such keys takes time quadratic in n to build (60,000 held a call 44 s past a 10 s limit).
    More than 64 keys of one dict or set that hash alike are a protocol error, on the wire and in a
    decoded set or dict; ordinary keys cross, however many."""
    flood = [k * (2**61 - 1) for k in range(1, 100)]
    assert len({hash(k) for k in flood}) == 1
    with pytest.raises(wire.ProtocolError, match="hash alike"):
        wire.unpack(wire.pack(dict.fromkeys(flood, 0)))
    for tag in ("s", "fs"):
        with pytest.raises(wire.ProtocolError, match="hash alike"):
            values.decode((tag, [("v", k) for k in flood]))
    with pytest.raises(wire.ProtocolError, match="hash alike"):
        values.decode(("d", [(("t", [("v", k)]), ("v", 0)) for k in flood]))  # tuples of them too
    assert _round_trip({"ids": set(range(5000)), "table": dict.fromkeys(range(5000), 1)})["ids"] == set(range(5000))
    assert _round_trip(set(flood[:64])) == set(flood[:64])


def test_a_named_tuple_or_record_past_the_names_limits_is_refused_or_a_plain_tuple():
    """A named tuple class is made on the grader's side for each name and fields (256 at most, kept): a
    reply naming one with a 15 MB name kept 195 MiB a call there. Names are at most 100 characters,
    fields at most 64; a submission's named tuple past them crosses as a plain tuple. A record is
    hashable, as a frozen dataclass is, and copies."""
    import collections
    import copy

    with pytest.raises(wire.ProtocolError):
        values.decode(("nt", "N" * 101, ["a"], [("v", 1)]))
    with pytest.raises(wire.ProtocolError):
        values.decode(("nt", "N", [f"f{i}" for i in range(65)], [("v", i) for i in range(65)]))
    wide = collections.namedtuple("Wide", [f"f{i}" for i in range(65)])
    assert type(_round_trip(wide(*range(65)))) is tuple
    record = values.Record("Summary", {"m": 1.0, "denom": 2.0})
    assert hash(record) == hash(values.Record("Summary", {"m": 1.0, "denom": 2.0}))
    assert copy.deepcopy(record) == record and copy.copy(record).m == 1.0



def test_what_makes_classes_or_records_on_the_graders_side_is_bounded(monkeypatch):
    """At most 256 named tuple classes (past them, plain tuples), 16 properties and 4,096 items of a
    record, 64 fields of a structured dtype: a reply past one of them is refused (or, for the classes,
    made plain), and the sender keeps within them."""
    import dataclasses

    monkeypatch.setattr(values, "_MADE", {})
    monkeypatch.setattr(values, "MADE_CLASSES", 2)
    made = [values.decode(("nt", f"N{i}", ["a"], [("v", i)])) for i in range(3)]
    assert [type(t).__name__ for t in made] == ["N0", "N1", "tuple"] and made[2] == (2,)
    with pytest.raises(wire.ProtocolError):
        values.decode(("dc", "R", [], [(f"p{i}", ("v", i)) for i in range(17)], None))
    with pytest.raises(wire.ProtocolError):
        values.decode(("dc", "R", [], [], [("v", 1)] * 4097))
    many = {f"p{i:02}": property(lambda self, i=i: i) for i in range(20)}
    Wide = dataclasses.dataclass(frozen=True)(type("Wide", (), {"__annotations__": {"x": int}, **many}))
    wide = _round_trip(Wide(1))
    assert wide.p15 == 15 and not hasattr(wide, "p16"), "the first 16 properties, by name"
    fields = [(f"f{i}", "<f8", 8 * i) for i in range(65)]
    with pytest.raises(wire.ProtocolError):
        values.decode(("npdt", ("struct", fields, 8 * 65)))
    with pytest.raises(TypeError, match="cannot be passed"):
        values.encode(np.zeros(1, dtype=[(f"f{i}", "<f8") for i in range(65)]))


def test_a_subclass_of_a_plain_type_crosses_as_its_own_value():
    """``str()`` of a ``class Mode(str, Enum)`` member is "Mode.FULL": its value, "full", must cross (a
    submission naming its backends so graded 227 of 311 where pytest passed all); an int subclass that
    redefines ``__int__`` crosses as its value too. Each arrives as an instance of a subclass of the same
    name made on the far side: ``type(x) is int`` is false, as in one process (an int subclass for byte
    counts graded 81 of 81 where pytest's ``test_byte_counts_are_ints`` fails it, 80)."""
    import enum

    class Mode(str, enum.Enum):
        FULL = "full"

    class Size(int):
        def __int__(self):
            return 0

    class Rate(float):
        def __float__(self):
            return 0.0

    back = _round_trip({Mode.FULL: [Mode.FULL, Size(7), Rate(2.5)]})
    assert back == {"full": ["full", 7, 2.5]}
    key, (mode, size, rate) = next(iter(back.items()))
    assert [type(v).__name__ for v in (key, mode, size, rate)] == ["Mode", "Mode", "Size", "Rate"]
    assert isinstance(size, int) and type(size) is not int, "a test that counts are ints fails it, as in one process"
    assert str(mode) == "full" and size + 1 == 8 and type(mode) is type(key)
    # numpy's str scalar (an item of an array of names: `np.array(backends)[np.argmin(times)]`) is a str
    # subclass too: it crossed as nothing, a TypeError ("numpy dtype <U10"), where in one process it
    # equals the name (04-02's choose_measured so written).
    name = _round_trip([np.array(["FLASH_ATTN"])[0]])[0]
    assert name == "FLASH_ATTN" and isinstance(name, str) and type(name).__name__ == "str_"


@pytest.mark.parametrize("value", [object(), np.array([object()]), lambda: 0, {1, object()}],
                         ids=["object", "object array", "function", "set of an object"])  # str() holds addresses
def test_anything_else_is_refused_with_a_type_error(value):
    with pytest.raises(TypeError, match="cannot be passed"):
        values.encode(value)


def _frame(payload: bytes) -> bytes:
    return struct.pack("<Q", len(payload)) + payload


def _count(tag: bytes, n: int) -> bytes:
    return tag + struct.pack("<Q", n)


BOMBS = {
    # pickle's memo made a few bytes decode into gigabytes; this format has no back-references,
    # so a container cannot claim more items than the bytes that follow.
    "a list claiming 2**40 items": _count(b"l", 2**40) + b"N" * 100,
    "a string claiming 2**62 bytes": _count(b"s", 2**62) + b"abc",
    "nesting 10 000 deep": b"".join(_count(b"l", 1) for _ in range(10_000)) + b"N",
    "a truncated float": b"f" + b"\0" * 3,
    "bytes after the value": b"NN",
    "an unknown tag": b"Q",
    "a dict keyed by a list": _count(b"d", 1) + _count(b"l", 0) + b"N",
    "an integer with fewer bytes than it claims": _count(b"I", 10) + b"\x01" * 3,
}


@pytest.mark.parametrize("payload", list(BOMBS.values()), ids=list(BOMBS))
def test_malformed_and_bomb_messages_are_refused_before_they_cost_anything(payload):
    with pytest.raises(wire.ProtocolError):
        wire.unpack(payload)


def test_a_forged_default_factory_or_warning_is_refused():
    """A Counter, a defaultdict or a warning from the worker names only what the grader may run: a factory of
    the standard library's by name, a reference (calling it asks the worker), or none; a warning class. Any
    other is a protocol error (a crash), never a call of something the worker chose."""
    for forged in [("d", [], ("defaultdict", "eval")), ("d", [], ("defaultdict", ("v", 3))),
                   ("d", [], "OrderedDict"), ("d", [], ("list", "int"))]:
        with pytest.raises(wire.ProtocolError):
            values.decode(forged)
    assert values.decode(("d", [], ("defaultdict", None))).default_factory is None
    for bases in [("ValueError",), ("SystemExit",), ()]:
        with pytest.raises(wire.ProtocolError):
            standin._warning(bases, "UserWarning", "x")


def test_a_message_over_the_limit_is_refused_before_it_is_read():
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, struct.pack("<Q", 2**40))  # the header alone: 1 TB announced
        with pytest.raises(wire.ProtocolError, match="limit"):
            wire.recv(read_fd, time.monotonic() + 5, limit=1 << 20)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_decoding_stops_at_the_deadline():
    big = wire.pack([[None] * 10 for _ in range(10_000)])
    with pytest.raises(TimeoutError, match="deadline"):  # a timeout (the call's time is up), not a crash
        wire.unpack(big, deadline=time.monotonic() - 1)


def test_a_message_decodes_to_at_most_a_constant_times_its_size():
    import tracemalloc

    payload = _count(b"l", 1_000_000) + b"N" * 1_000_000  # the cheapest items there are
    tracemalloc.start()
    wire.unpack(payload)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 40 * len(payload)


def test_decoding_trusts_no_name_shape_or_size():
    with pytest.raises(wire.ProtocolError):
        values.decode(("nd", "O", (1,), b"\0" * 8, True))  # an object array
    with pytest.raises(wire.ProtocolError):
        values.decode(("nd", "<f8", (1000, 1000), b"\0" * 8, True))  # a shape the bytes do not fill
    with pytest.raises(wire.ProtocolError):
        values.decode(("dc", "__class__", []))
    with pytest.raises(wire.ProtocolError):  # no 4 TB allocation on the worker's word
        values.decode(("pt", "float32", (10**6, 10**6), "cpu", b""))
    with pytest.raises(wire.ProtocolError):
        values.decode(("os.system", "echo pwned"))


def _buffer(kind, size):
    return [(kind, "cpu", 0, bytes(size), "w")]


VIEW_BOMBS = {  # views the bytes that crossed cannot back
    "stride 0": ("bufs", _buffer("nd", 8), ("ndv", 0, "<f8", (10**9,), (0,), 0, True)),
    "torch stride 0": ("bufs", _buffer("pt", 8), ("ptv", 0, "float32", (1 << 40, 1 << 40), (0, 0), 0)),
    "past the end": ("bufs", _buffer("nd", 64), ("ndv", 0, "<f8", (16,), (8,), 0, True)),
    "before the start": ("bufs", _buffer("nd", 64), ("ndv", 0, "<f8", (4,), (-8,), 8, True)),
    "torch past the end": ("bufs", _buffer("pt", 64), ("ptv", 0, "float64", (4,), (1,), 40)),
    "misaligned": ("bufs", _buffer("pt", 64), ("ptv", 0, "float64", (2,), (1,), 4)),
    "negative torch stride": ("bufs", _buffer("pt", 64), ("ptv", 0, "float64", (2,), (-1,), 8)),
    "unknown buffer": ("bufs", _buffer("nd", 64), ("ndv", 3, "<f8", (1,), (8,), 0, True)),
    "buffer of the other kind": ("bufs", _buffer("nd", 64), ("ptv", 0, "float64", (1,), (1,), 0)),
    "nested buffers": ("bufs", _buffer("nd", 8), ("bufs", _buffer("nd", 8), ("v", 1))),
    "object dtype": ("bufs", _buffer("nd", 64), ("ndv", 0, "|O", (1,), (8,), 0, True)),
    "strides of another rank": ("bufs", _buffer("nd", 64), ("ndv", 0, "<f8", (2, 2), (8,), 0, True)),
    "empty view far past the end": ("bufs", _buffer("pt", 64), ("ptv", 0, "float64", (0,), (1,), 1 << 40)),
    "many views of one buffer": ("bufs", _buffer("nd", 1 << 14),
                                 ("l", [("ndv", 0, "<f8", (2048,), (8,), 0, True)] * 3000)),
}


@pytest.mark.parametrize("data", list(VIEW_BOMBS.values()), ids=list(VIEW_BOMBS))
def test_a_view_is_never_larger_than_the_bytes_that_crossed(data):
    with pytest.raises(wire.ProtocolError):
        values.decode(wire.unpack(wire.pack(data)), max_view_bytes=standin.MAX_VIEW_BYTES)


def test_a_replys_view_of_an_argument_stays_inside_that_arguments_memory():
    """A reply's array made over the call's own memory (a view of an argument, returned) is checked
    against that memory: no index or extent outside it, nor a writeable view of a read-only array."""
    base = np.arange(8.0)
    frozen = np.arange(8.0)
    frozen.flags.writeable = False
    layouts = values.Layouts(whole=True)
    values.encode((base[2:], frozen), layouts=layouts)
    ok = values.decode(("bufs", [("argument", 0)], ("ndv", 0, "<f8", (2,), (8,), 8, True)), shared=layouts)
    assert np.shares_memory(ok, base) and ok.ctypes.data == base.ctypes.data + 8
    for bad in [("bufs", [("argument", 2)], ("ndv", 0, "<f8", (1,), (8,), 0, True)),
                ("bufs", [("argument", 0)], ("ndv", 0, "<f8", (8,), (8,), 8, True)),  # one past the end
                ("bufs", [("argument", 0)], ("ndv", 0, "<f8", (1,), (8,), -8, True)),
                ("bufs", [("argument", 1)], ("ndv", 0, "<f8", (1,), (8,), 0, True))]:  # read-only, made writeable
        with pytest.raises(wire.ProtocolError):
            values.decode(bad, shared=layouts)
    with pytest.raises(wire.ProtocolError):  # outside a reply to a call
        values.decode(("bufs", [("argument", 0)], ("ndv", 0, "<f8", (1,), (8,), 0, True)))


def test_a_replys_view_of_an_argument_may_repeat_its_elements_within_the_budget():
    """A result that is ``np.broadcast_to`` or ``expand`` of an argument repeats elements of the caller's
    own memory (no bytes crossed for it): it is made so, as in one process, while the views' budget
    still counts every element (a billion of stride 0 is refused)."""
    torch = pytest.importorskip("torch")
    base, t = np.arange(4.0), torch.arange(4.0)
    layouts = values.Layouts(whole=True)
    values.encode((base, t), layouts=layouts)
    wide = values.decode(("bufs", [("argument", 0)], ("ndv", 0, "<f8", (3, 4), (0, 8), 0, False)),
                         shared=layouts, max_view_bytes=standin.MAX_VIEW_BYTES)
    assert np.shares_memory(wide, base) and (wide == base).all() and not wide.flags.writeable
    tall = values.decode(("bufs", [("argument", 1)], ("ptv", 0, "float32", (5, 4), (0, 1), 0)),
                         shared=layouts, max_view_bytes=standin.MAX_VIEW_BYTES)
    t[0] = 9.0
    assert (tall[:, 0] == 9).all(), "a view of the caller's tensor"
    with pytest.raises(wire.ProtocolError):
        values.decode(("bufs", [("argument", 0)], ("ndv", 0, "<f8", (10**9,), (0,), 0, False)),
                      shared=layouts, max_view_bytes=standin.MAX_VIEW_BYTES)


RETURNS_A_BROADCAST_OF_ITS_ARGUMENT = """
import numpy as np


def zeros_like_first(a):
    return np.broadcast_to(a[:1], a.shape)  # a read-only view of the argument, its first element repeated


def rows(t):
    return t[:1].expand(3, t.shape[1])
"""


@needs_bwrap
def test_a_result_that_repeats_an_arguments_elements_crosses_as_a_view_of_it(submission):
    """A correct result may be a broadcast view of an argument (04-04's merge of two identities answering
    ``np.broadcast_to(a[2][:1], ...)``, a's acc being zeros: pytest passes it, and it crashed with "a view
    outside its buffer, or larger than it", 153 of 158)."""
    torch = pytest.importorskip("torch")
    sub = submission(RETURNS_A_BROADCAST_OF_ITS_ARGUMENT, {"zeros_like_first": "callable", "rows": "callable"},
                     call_timeout=10)
    a = np.zeros(5)
    got = sub.zeros_like_first(a)
    assert got.shape == (5,) and got.strides == (0,) and np.shares_memory(got, a) and not got.flags.writeable
    t = torch.arange(6.0).reshape(2, 3)
    r = sub.rows(t)
    t[0, 1] = -1.0
    assert r.shape == (3, 3) and (r[:, 1] == -1).all()


def test_views_of_one_storage_cross_as_one_buffer_and_in_place_changes_come_back_through_them():
    torch = pytest.importorskip("torch")
    kv = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(3, 2, 4)
    k, v = kv[:, 0], kv[:, 1]
    base = np.arange(24.0).reshape(4, 6)
    a, frozen = base[:, :2], base[:, 2:4]
    frozen.flags.writeable = False
    sealed = np.frombuffer(np.arange(3.0).tobytes())  # over read-only bytes: no flag makes it writeable
    owned = np.arange(4.0)
    owned.flags.writeable = False  # a read-only owner: a flag makes it writeable, never a view of it
    layouts = values.Layouts(whole=True)
    buffers = []
    k2, v2, a2, frozen2, sealed2, owned2, owned_tail2 = values.decode(
        wire.unpack(wire.pack(values.encode((k, v, a, frozen, sealed, owned, owned[1:]), layouts=layouts))),
        buffers=buffers)
    assert len(buffers) == 4, "one buffer per storage"
    assert owned2.flags.owndata and np.shares_memory(owned2, owned_tail2) and not owned_tail2.flags.writeable
    with pytest.raises(ValueError, match="WRITEABLE"):
        owned_tail2.flags.writeable = True  # a view of a read-only owner: refused in one process, refused here
    owned2.flags.writeable = True
    owned2[0] = -4.0
    assert k2.stride() == k.stride() and v2.data_ptr() - k2.data_ptr() == v.data_ptr() - k.data_ptr()
    assert a2.strides == a.strides and not frozen2.flags.writeable and not sealed2.flags.writeable
    k2.fill_(-1.0)
    a2[...] = -2.0
    frozen2.flags.writeable = True  # possible in one process too (its base is writeable): written back
    frozen2[...] = -3.0
    with pytest.raises(ValueError, match="WRITEABLE"):
        sealed2.flags.writeable = True  # impossible in one process: impossible here
    for index, buffer in enumerate(buffers):
        raw = buffer.numpy().tobytes() if isinstance(buffer, torch.Tensor) else buffer.tobytes()
        layouts.copy_back(index, raw)
    assert (k == -1).all() and (v >= 0).all() and (a == -2).all() and (frozen == -3).all()
    assert (base[:, 4:] >= 0).all() and np.array_equal(sealed, [0.0, 1.0, 2.0])
    assert owned.tolist() == [-4.0, 1.0, 2.0, 3.0] and not owned.flags.writeable
    with pytest.raises(wire.ProtocolError):
        layouts.copy_back(0, b"short")
    with pytest.raises(wire.ProtocolError):
        layouts.copy_back(2, b"")


# --------------------------------------------------------------------------- the worker stand-in


@pytest.fixture
def submission(tmp_path):
    """make(source, api, files=((name, text), ...), box={sandbox options}, **options): a stand-in for a
    student file holding ``source`` (with ``files`` beside it), its worker in a sandbox; closed after the test."""
    opened = []

    def make(source, api, files=(), box=None, **options):
        folder = tmp_path / f"files{len(opened)}"
        folder.mkdir(mode=0o755)
        for name, text in [("starter.py", source), *files]:  # files: the student's own modules beside it
            (folder / name).write_text(text)
            (folder / name).chmod(0o644)
        box = sandbox.Sandbox(folder, **(box or {}))
        opened.append(box)
        sub = standin.Submission(folder / "starter.py", api, box, **options)
        opened.append(sub)
        return sub

    yield make
    for thing in reversed(opened):
        thing.close()


SOURCE = """
import os
import numpy as np

SCALE = 2

def double(x):
    return x * SCALE

def fill(cache, value):
    cache[...] = value      # in place, like write_kv

def bump(a):
    a += 1                  # in place, and returned: the caller gets its own array back
    return a

def picky(n):
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return n

def hang():
    while True:
        pass

def die():
    os._exit(3)

def leave():
    raise SystemExit(0)

def not_in_the_api():
    return "extra"
"""
API = {name: "callable" for name in ("double", "fill", "bump", "picky", "hang", "die", "leave")} | {"SCALE": "value"}


@needs_bwrap
def test_submission_forwards_calls_and_copies_in_place_changes_back(submission):
    incidents = []
    sub = submission(SOURCE, API, call_timeout=5, on_incident=lambda kind, message: incidents.append(kind))
    assert sub.SCALE == 2
    np.testing.assert_array_equal(sub.double(np.arange(3)), [0, 2, 4])
    cache = np.zeros((2, 3))
    assert sub.fill(cache, 7.0) is None
    assert (cache == 7.0).all(), "an in-place change in the worker must reach the caller's array"
    assert sub.bump(cache) is cache and (cache == 8.0).all()
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):  # read-only in the worker too
        sub.fill(frozen, 1.0)
    assert (frozen == 0).all()
    with pytest.raises(ValueError, match="n must be >= 0"):
        sub.picky(-1)
    assert not hasattr(sub, "os"), "modules the submission imports are not part of its API"
    assert not hasattr(sub, "not_in_the_api"), "only the lab's API (its starter.py) is taken"
    assert incidents == []


WRITERS = """
import numpy as np

def fill_in(config):
    config.setdefault("num_key_value_heads", config["num_attention_heads"])   # the caller's dict, written
    return config["num_key_value_heads"]

def sort_pair(pair):
    pair.ids.sort()   # a list inside a named tuple the test passed

def sort_times(matrix):
    for entry in matrix["entries"]:
        entry["times_us"] = dict(sorted(entry["times_us"].items(), key=lambda kv: kv[1]))
        entry["tags"].append("sorted")

def take(ids, seen, queue, *, extra):
    ids.sort()
    seen.add(max(ids))
    queue.appendleft(-1)
    extra[0].append(len(ids))

def refuse(ids, out):
    ids.append(99)            # written before the refusal, as a half-finished call would
    out[0] = 5.0
    raise ValueError("refused after writing")

def keep(rows, arrays):
    rows.append(arrays[0])    # one of the caller's arrays, now in the caller's list
    arrays[0][0] = 3.0
"""


@needs_bwrap
def test_a_container_the_call_writes_into_is_written_for_the_caller(submission):
    """A test's dict, list, set or deque that the submission changes in place is changed for the test,
    as in one process: the writes come back into the test's own objects (nested ones kept), whether
    the call returns or raises; arrays inside stay the caller's. (Containers cross by value: without
    this, a solution that fills in the caller's config passed a test that exists to catch it.)"""
    sub = submission(WRITERS, {name: "callable" for name in ("fill_in", "sort_times", "sort_pair", "take", "refuse",
                                                            "keep")})
    config = {"num_attention_heads": 8}
    assert sub.fill_in(config) == 8
    assert config == {"num_attention_heads": 8, "num_key_value_heads": 8}
    entry = {"times_us": {"a": 3.0, "b": 1.0}, "tags": []}
    matrix = {"entries": [entry]}
    sub.sort_times(matrix)
    assert matrix["entries"][0] is entry, "a dict nested in the argument stays the test's own"
    assert list(entry["times_us"].items()) == [("b", 1.0), ("a", 3.0)] and entry["tags"] == ["sorted"]
    ids, seen, queue, extra = [3, 1, 2], {0}, collections.deque([5], maxlen=2), ([],)
    sub.take(ids, seen, queue, extra=extra)
    assert (ids, seen, list(queue), queue.maxlen, extra) == ([1, 2, 3], {0, 3}, [-1, 5], 2, ([3],))
    pair = collections.namedtuple("Pair", "ids tag")([2, 1], "x")
    sub.sort_pair(pair)
    assert pair.ids == [1, 2], "a list inside a named tuple, written"
    ids, out = [1], np.zeros(2)
    with pytest.raises(ValueError, match="refused after writing"):
        sub.refuse(ids, out)
    assert ids == [1, 99] and out.tolist() == [5.0, 0.0], "what a call wrote before it raised stays written"
    rows, arrays = [], [np.zeros(2)]
    sub.keep(rows, arrays)
    assert len(rows) == 1 and rows[0] is arrays[0] and arrays[0].tolist() == [3.0, 0.0]
    untouched = {"x": [1, 2]}
    inner = untouched["x"]
    sub.fill_in({"num_attention_heads": 1, "other": untouched})
    assert untouched == {"x": [1, 2]} and untouched["x"] is inner


def test_a_reply_names_at_most_64_returned_containers():
    """A result of many lists keeps the first 64 (the rest cross as copies); a reply naming more, each of
    which may rebuild a long tuple on the trusted side, is a protocol error."""
    from labkit.grader import containers

    lists = tuple([i] for i in range(1000))
    named = containers.Returned().keep(lists)
    assert len(named) == containers.KEPT_RETURNED and named[-1][1] == (containers.KEPT_RETURNED - 1,)
    decoded = tuple([i] for i in range(1000))
    with pytest.raises(wire.ProtocolError, match="more than 64"):
        containers.adopt_returned(decoded, [("k", (i,), 0) for i in range(1000)], {})
    assert containers.adopt_returned(decoded, named, {}) is decoded


def test_a_returned_container_that_holds_the_same_objects_is_unchanged_and_any_other_change_is_sent():
    """After each call the worker compares the containers it returned: first whether a flat one holds the
    very objects it held, in order (in C), then, where that fails, by its key. The quick check never hides
    a change: an equal value that is another object is no change, and everything else is one."""
    from labkit.grader import containers

    big = 10**20  # past the small ints CPython shares: an equal value may be another object
    flat, table, nested = [1, big, "a", 0.0], {"a": 1, "b": big}, [[1], [2]]
    queue, blocks = collections.deque([1, 2]), [object(), object()]
    returned = containers.Returned()
    numbers = {path: number for _, path, number in returned.keep((flat, table, nested, queue, blocks))}

    def sent():
        return sorted(next(path for path, n in numbers.items() if n == number)
                      for _, number, _ in returned.changes(lambda value: value))

    assert sent() == []
    flat[1], table["b"] = int(str(big)), int(str(big))  # equal values, other objects
    assert sent() == []
    flat[0] = True  # equal to 1 and another type
    assert sent() == [(0,)]
    flat[3] = -0.0  # equal to 0.0 and another sign
    table["b"] = table.pop("b")  # taken out and put back: the same items in the same order, no change
    assert sent() == [(0,)]
    table["a"] = 2
    assert sent() == [(1,)]
    nested[0].append(3)  # inside an item: the quick check is for flat containers only
    queue.rotate()
    blocks.reverse()
    assert sent() == [(2,), (3,), (4,)]
    assert sent() == []


def test_a_returned_container_whose_item_changed_class_is_sent():
    """The quick check compares the items' classes too: an object's class may be assigned in place (the
    same object, another type), and a named tuple or an int subclass crosses by value with its class's
    name, so in one process the test sees the new class; the key tells it, and so must the quick check."""
    from labkit.grader import containers

    class BlockId(int):
        __slots__ = ()

    class PageId(int):
        __slots__ = ()

    first, second = collections.namedtuple("First", "a b"), collections.namedtuple("Second", "x y")
    ids, pairs = [BlockId(1000), BlockId(1001)], [first(1, 2)]
    returned = containers.Returned()
    numbers = {number: path for _, path, number in returned.keep((ids, pairs))}

    def sent():
        return sorted(numbers[number] for _, number, _ in returned.changes(lambda value: value))

    assert sent() == []
    ids[0].__class__ = PageId
    pairs[0].__class__ = second
    assert sent() == [(0,), (1,)]
    assert sent() == []
    mixed, table = [BlockId(1002), 7], {"id": BlockId(2000)}  # keyed item by item: the key tells it too
    numbers.update({number: path for _, path, number in returned.keep((None, None, mixed, table))})
    assert sent() == []
    mixed[0].__class__ = PageId
    table["id"].__class__ = PageId
    assert sent() == [(2,), (3,)]
    assert sent() == []


def test_a_containers_key_tells_apart_what_equality_confuses():
    """The worker compares the containers a test passed, and those it was returned, before and after
    each call by a key (a flat one, of plain items, is compared in C): contents that ``==`` calls
    equal must still differ, and the same contents must have the same key, however the container is
    nested."""
    from labkit.grader.containers import container_key

    def key(value):
        return container_key(value, [])

    confused = [([1, 2], [True, 2]), ([0], [False]), (["a"], [b"a"]), ([1], [1.0]), ([0.0], [-0.0]),
                ({1: 2}, {True: 2}), ({1: 2}, {1: True}), ({1: 2, 3: 4}, {3: 4, 1: 2}), ((1, [2]), (1, [True])),
                ([1, 2], [1, [2]]), ([[1]], [[True]]), ([None], [0]), ({"a": [1]}, {"a": [True]})]
    for a, b in confused:
        assert key(a) != key(b), (a, b)
    for value in ([1, 2, "x", b"y", None, True], [[1, 2], (3, "a")], {"a": 1, 2: None}, {"a": [1, {2: 3}]},
                  [0.5, -0.0], list(range(5000))):
        assert key(value) == key(copy.deepcopy(value)), value
    a, b = object(), object()
    assert key([a, None]) == key([a, None]) and key([a]) != key([b]), "objects by identity"
    for one, other in (([a, b], [b, a]), ([a, None], [a, False]), ([a, 1], [a, True]), ([a], [a, a]),
                       ([a, [1]], [a, [True]]), ([a], [[a]])):
        assert key(one) != key(other), (one, other)


RETURNS_ITS_OWN = """
import numpy as np


class Pool:
    def __init__(self):
        self._handed = []  # one list, handed out by every take(): a classic mistake
        self.taken = 0
        self.stats = {"taken": 0, "ids": []}

    def take(self, n):
        self._handed.clear()
        self._handed.extend(range(self.taken, self.taken + n))
        self.taken += n
        self.stats["taken"] = self.taken
        self.stats["ids"].extend(self._handed)
        return self._handed

    def fresh(self, n):
        return list(range(n))

    def both(self):
        return self._handed, (self.stats, self._handed)

    def report(self):
        return self.stats


    def grow(self):
        self._handed.extend(range(5_000))  # past what is kept: the test's copy stays as last sent

    def spoil(self):
        self.stats["ids"].append(np.array([None], dtype=object))  # cannot cross: the copy stays as last sent


def huge():
    return list(range(10_000))
"""


RELAYS_ITS_ARGUMENTS = """
import numpy as np


def flat_to_heads(q, heads):
    q.shape = (heads, -1)   # numpy's reshape in place: the caller's array is reshaped
    return float(q[0].sum())


def as_ints(q):
    q.dtype = np.int64      # the caller's array reads its bytes as int64 from now on


def protect(q):
    q.flags.writeable = False


def batched(t):
    t.unsqueeze_(0)         # torch's in-place view ops change the caller's tensor
    return t.shape[0]


def flipped(t):
    t.t_()


def tail(t):
    t.set_(t.untyped_storage(), t.storage_offset() + 1, (2,), (1,))


def track(t):
    t.requires_grad_(True)
"""


@needs_bwrap
def test_what_a_call_changes_of_an_argument_arrays_layout_is_the_callers_too(submission):
    """In one process an argument array is the caller's object: a shape, a dtype or a writeable flag set on
    it (numpy), torch's in-place view ops (``unsqueeze_``, ``t_``, ``set_`` within its storage) and
    ``requires_grad_`` change the test's array, and a test that its inputs are left alone fails such a
    call (04-06 compares them with ``assert_close``, shape included). They changed only the worker's view:
    ``q.shape = (heads, -1)`` passed under ``labs grade`` what pytest fails. A layout outside the test's
    storage is a broken protocol (torch's ``set_`` checks no bounds)."""
    torch = pytest.importorskip("torch")
    api = {name: "callable" for name in ("flat_to_heads", "as_ints", "protect", "batched", "flipped", "tail",
                                         "track")}
    sub = submission(RELAYS_ITS_ARGUMENTS, api, call_timeout=10)
    q = np.arange(6.0)
    assert sub.flat_to_heads(q, 2) == 3.0 and q.shape == (2, 3) and q.strides == (24, 8)
    q = np.arange(6.0)
    sub.as_ints(q)
    assert q.dtype == np.int64 and q[1] == np.float64(1.0).view(np.int64)
    q = np.arange(6.0)
    sub.protect(q)
    assert not q.flags.writeable
    kv = torch.arange(12.0).reshape(3, 2, 2)
    k = kv[:, 0]  # a view of a fused pool
    assert sub.batched(k) == 1 and k.shape == (1, 3, 2) and k.stride() == (12, 4, 1)
    sub.flipped(k[0])  # a temporary: nothing of the test's changes but its own view
    t = torch.arange(6.0).reshape(2, 3)
    sub.flipped(t)
    assert t.shape == (3, 2) and t.stride() == (1, 3) and torch.equal(t, torch.arange(6.0).reshape(2, 3).T)
    t = torch.arange(3.0)
    sub.tail(t)
    assert torch.equal(t, torch.tensor([1.0, 2.0])) and t.untyped_storage().nbytes() == 12
    t = torch.zeros(2)
    sub.track(t)
    assert t.requires_grad and t.is_leaf
    layouts, small = values.Layouts(whole=True), torch.zeros(4)
    values.encode(small, layouts=layouts)
    with pytest.raises(wire.ProtocolError, match="outside"):
        layouts.relaid(0, ("pt", (4,), (1,), 1, "float32", False), [small])
    assert small.shape == (4,) and small.storage_offset() == 0


@needs_bwrap
def test_a_container_a_call_returns_is_the_same_object_when_returned_again_and_changes_with_it(submission):
    """In one process a result may be the submission's own list, which a later call changes: a pool
    that clears and refills one list at each call hands out the same list twice. Under grading too:
    the same object each time, refilled after each call, nested identity kept; fresh results stay
    apart, and a container too large to be kept is a copy."""
    sub = submission(RETURNS_ITS_OWN, {"Pool": "callable", "huge": "callable"}, call_timeout=5)
    pool = sub.Pool()
    first = pool.take(2)
    stats = pool.report()
    ids = stats["ids"]
    second = pool.take(1)
    assert second is first and first == [2], "the same list, as the submission changed it"
    assert pool.report() is stats and stats == {"taken": 3, "ids": [0, 1, 2]} and stats["ids"] is ids
    a, (s, b) = pool.both()
    assert a is first and b is first and s is stats
    one, two = pool.fresh(2), pool.fresh(2)
    assert one == two == [0, 1] and one is not two
    pool.take(3)
    assert one == [0, 1] and first == [3, 4, 5] and stats["taken"] == 6
    big = sub.huge()
    assert big == list(range(10_000)) and sub.huge() is not big
    pool.grow()
    pool.spoil()
    assert first == [3, 4, 5] and stats["ids"] == list(range(6)), "forgotten, never an error in a later call"
    assert pool.fresh(1) == [0]


RETURNS_ITS_OWN_SUBCLASS = """
import collections


class Ids(list):
    def __repr__(self):
        return f"Ids({list.__repr__(self)})"


_IDS, _SEEN = Ids(), collections.OrderedDict()


def take(n):
    _IDS[:] = range(n)  # one list of the student's own class, refilled at each call
    _SEEN[n] = True
    return _IDS, _SEEN
"""


@needs_bwrap
def test_a_container_of_a_subclass_a_call_returns_is_followed_as_its_plain_value(submission):
    """A list of the student's own class (with its own repr), or an OrderedDict, crosses as its plain
    value; one the submission refills at each call is the same object each time, changing with it, as
    in one process (02-01's get_new_blocks_reuses_one_list with a list subclass graded 32 of 32, where
    pytest gives it 30)."""
    sub = submission(RETURNS_ITS_OWN_SUBCLASS, {"take": "callable"}, call_timeout=10)
    first, seen = sub.take(2)
    assert type(first) is list and first == [0, 1] and type(seen) is dict
    second, again = sub.take(3)
    assert second is first and first == [0, 1, 2] and again is seen and list(seen) == [2, 3]


RETURNS_THE_STANDARD_LIBRARYS_WRAPPERS = """
import collections

_HANDED_OUT = collections.UserList()


def take(n):
    return collections.UserList(range(n)), collections.UserDict(ids=n)


def reused(n):
    _HANDED_OUT[:] = range(n)  # one UserList, refilled at each call
    return _HANDED_OUT
"""


@needs_bwrap
def test_a_userlist_or_userdict_a_call_returns_crosses_as_the_plain_container(submission):
    """A ``collections.UserList`` or ``UserDict`` equals the list or dict it holds, in one process: it crosses
    as that plain value (as a handle it equalled nothing a test compares it with: 02-01 handing out blocks in
    a UserList graded 25 of 32, "got [], expected []", where pytest passes it all), and one the submission
    refills at each call is followed as a returned list is."""
    sub = submission(RETURNS_THE_STANDARD_LIBRARYS_WRAPPERS, {"take": "callable", "reused": "callable"},
                     call_timeout=10)
    ids, table = sub.take(0)
    assert ids == [] and table == {"ids": 0} and sub.take(2)[0] == [0, 1]
    first = sub.reused(2)
    assert first == [0, 1] and sub.reused(3) is first and first == [0, 1, 2]


RETURNS_COUNTING_DICTS = """
import collections

MADE = []  # each default the student's own factory made, counted where it ran


def _next_default():
    MADE.append(1)
    return 10 * len(MADE)


def counts(words):
    return collections.Counter(words)


def grouped(pairs):
    groups = collections.defaultdict(list)
    for key, value in pairs:
        groups[key].append(value)
    return groups


def numbered(words):
    table = collections.defaultdict(_next_default)
    for word in words:
        table[word] = len(word)
    return table


def defaults_made():
    return len(MADE)


_SEEN = collections.Counter()


def seen(word):
    _SEEN[word] += 1  # one Counter, handed out at every call
    return _SEEN
"""


@needs_bwrap
def test_a_counter_or_defaultdict_a_call_returns_keeps_its_default(submission):
    """In one process a missing key of a returned Counter reads 0, and of a defaultdict its factory's value
    (inserted); crossed as a plain dict, either raised KeyError. A factory of the standard library's types
    runs in the grader; the student's own is called in the worker, never in the grader."""
    words = ["kv", "block", "kv", "page", "kv"]
    expected = {}
    for word in words:  # counted by hand, before any call
        expected[word] = expected.get(word, 0) + 1
    sub = submission(RETURNS_COUNTING_DICTS, {name: "callable" for name in ("counts", "grouped", "numbered",
                                                                           "defaults_made", "seen")}, call_timeout=10)
    counter = sub.counts(words)
    assert type(counter) is collections.Counter and counter == expected
    assert counter["missing"] == 0 and "missing" not in counter and counter.most_common(1) == [("kv", 3)]

    groups = sub.grouped([("a", 1), ("b", 2), ("a", 3)])
    assert type(groups) is collections.defaultdict and groups.default_factory is list
    assert groups == {"a": [1, 3], "b": [2]} and groups["c"] == [] and "c" in groups

    table = sub.numbered(["ab", "abc"])
    assert type(table) is collections.defaultdict and table == {"ab": 2, "abc": 3}
    assert table["x"] == 10 and table["y"] == 20 and table == {"ab": 2, "abc": 3, "x": 10, "y": 20}
    assert sub.defaults_made() == 2, "the student's factory ran in the worker, once per missing key"

    first = sub.seen("kv")
    assert first == {"kv": 1} and sub.seen("kv") is first and first == {"kv": 2}, "one Counter, followed"


RETURNS_EXACT_NUMBERS_AND_MAPPINGS = """
import collections.abc
import types
from decimal import Decimal
from fractions import Fraction


class Tokens(collections.abc.Mapping):  # only a mapping: equals the dict of its items
    def __init__(self, d):
        self._d = d

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


class Table(Tokens):  # a mapping with a method of its own: an object
    def total(self):
        return sum(self._d.values())


def exact(n, d):
    return Fraction(n, d), Decimal(n) / Decimal(d), Fraction(2 ** 5000, 3)


def mappings():
    return types.MappingProxyType({"a": [1]}), Tokens({"b": [2]}), Table({"c": 3})
"""


@needs_bwrap
def test_exact_numbers_and_plain_mappings_a_call_returns_cross_as_values(submission):
    """A ``Fraction`` or ``Decimal`` compares and computes with floats, and a ``MappingProxyType`` or a
    ``Mapping`` that is only that equals the dict of its items, in one process: they cross as values (as
    handles they equalled nothing: 02-03's ``max_concurrency`` as a Fraction graded 22 of 24, pytest 23;
    99-01's ``generate`` as either mapping 27 of 30, pytest 30). A mapping with methods of its own, and a
    Fraction past the bits that cross, stay handles."""
    sub = submission(RETURNS_EXACT_NUMBERS_AND_MAPPINGS, {"exact": "callable", "mappings": "callable"},
                     call_timeout=10)
    fraction, dec, huge = sub.exact(109, 2)
    assert fraction == pytest.approx(54.5) and type(fraction) is Fraction and fraction - 54 == 0.5
    assert dec == 54.5 and type(dec) is Decimal and str(dec) == "54.5"
    assert type(huge) is handles.Handle
    proxy, tokens, table = sub.mappings()
    assert proxy == {"a": [1]} and tokens == {"b": [2]} and type(tokens) is dict
    assert type(table) is handles.Handle and table.total() == 3


RETURNS_A_RECORD_THAT_ANSWERS_ITSELF = """
import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Out:
    values: np.ndarray

    @property
    def dtype(self):
        return self.values.dtype

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)

    def __len__(self):
        return 0


def attend(n):
    return Out(np.arange(float(n)))
"""


@needs_bwrap
def test_a_records_array_len_and_bool_are_its_classs_answers(submission):
    """A frozen dataclass whose class has ``__array__`` is an array to numpy in one process, and its
    ``len`` and ``bool`` are its class's: they cross with it, computed in the worker (04-01 with outputs so
    written graded 19 of 89, "setting an array element with a sequence", where pytest passes it all)."""
    sub = submission(RETURNS_A_RECORD_THAT_ANSWERS_ITSELF, {"attend": "callable"}, call_timeout=10)
    out = sub.attend(3)
    assert out.dtype == np.float64 and np.array_equal(np.asarray(out, dtype=np.float32), [0, 1, 2])
    np.testing.assert_allclose(out, [0.0, 1.0, 2.0])
    assert len(out) == 0 and not out


RETURNS_ITS_BUFFER = """
import numpy as np
import torch

_OUT = None
_T = torch.zeros(3)


def merge(a, b):
    global _OUT
    if _OUT is None:
        _OUT = np.empty(3)
    np.add(a, b, out=_OUT)  # one output buffer for every call: a classic mistake
    return 1.0, _OUT


def scaled(x):
    _T.copy_(x * 2)  # the same for a tensor
    return _T


def fresh(a):
    return np.array(a)


def big(n):
    global _OUT
    _OUT = np.zeros(n)
    return _OUT


def rebuild():
    _OUT.shape = (_OUT.size, 1)  # the same object, another shape: it can no longer be followed
    _OUT[:] = 7.0
    return None


_WORKSPACE = np.zeros(1 << 21)  # 16 MiB


def step(i):
    _WORKSPACE[...] = i  # every earlier result is a view of it, and changes
    return _WORKSPACE[i * 32768:(i + 1) * 32768]  # 256 KiB, a new view each call
"""


@needs_bwrap
def test_an_array_a_call_returns_is_the_same_object_when_returned_again_and_changes_with_it(submission):
    """In one process a result may be the submission's own output buffer, which a later call writes
    again: the test's earlier result changes under it. Under grading too, for numpy arrays and torch
    tensors reached through the result's tuples: the same object each time, given the new values
    after each call; fresh results stay apart, and an array too large to be followed is a copy."""
    torch = pytest.importorskip("torch")
    sub = submission(RETURNS_ITS_BUFFER, {name: "callable" for name in ("merge", "scaled", "fresh", "big",
                                                                        "rebuild", "step")}, call_timeout=10)
    _, first = sub.merge(np.ones(3), np.ones(3))
    first.flags.writeable = False  # the test's own look at it: the submission's writes still reach it
    _, second = sub.merge(np.zeros(3), np.full(3, 5.0))
    assert second is first and (first == 5).all(), "the same buffer, as the second call wrote it"
    t = sub.scaled(torch.ones(3))
    assert sub.scaled(torch.full((3,), 4.0)) is t and torch.equal(t, torch.full((3,), 8.0))
    one, two = sub.fresh([1.0, 2.0]), sub.fresh([1.0, 2.0])
    assert one is not two and (one == two).all()
    large = sub.big((1 << 20) // 8 + 1)  # one element past what is followed
    sub.rebuild()
    assert (large == 0).all(), "too large to follow: the test's copy stays as it was sent"
    small = sub.big(4)
    sub.rebuild()
    assert small.shape == (4,) and (small == 0).all(), "another shape: forgotten, never an error"
    assert sub.fresh([3.0]).tolist() == [3.0]
    # Results the test drops are kept as well, up to 4 MiB of arrays in all (the oldest forgotten past it):
    # 40 results of 256 KiB, each changed by every later call, never make a reply too large.
    steps = [sub.step(i) for i in range(40)]
    assert all((result == 39).all() for result in steps[-16:]), "the latest 4 MiB of results are followed"
    assert steps[0][0] < 39 and (steps[0] == steps[0][0]).all(), "the oldest forgotten: as last sent"


RETURNS_A_RECORD_IT_COMPUTES = """
import dataclasses


@dataclasses.dataclass(frozen=True)
class Budget:
    dynamic: int
    static: int
    total: int = dataclasses.field(init=False)  # computed, never passed

    def __post_init__(self):
        object.__setattr__(self, "total", self.dynamic + self.static)
        object.__setattr__(self, "spare", 49152 - self.total)  # not a field


@dataclasses.dataclass(frozen=True, init=False)
class Scaled:
    value: float

    def __init__(self, raw):
        object.__setattr__(self, "value", raw * 2)


def budget(dynamic, static):
    return Budget(dynamic, static)


def scaled(raw):
    return Scaled(raw)


def fits(b, limit):
    return type(b) is Budget and b.total <= limit and b.spare == 49152 - b.total


def value_of(s):
    return type(s) is Scaled and s.value
"""


@needs_bwrap
def test_a_record_passed_back_is_the_submissions_dataclass_whatever_its_init_takes(submission):
    """A frozen dataclass passed back is made again without its ``__init__`` (in one process it is the object
    itself): one whose ``field(init=False)`` values ``__post_init__`` computes, or with an ``__init__`` of its
    own, refused its own fields as keywords (04-05's budget so written graded 86 of 88, pytest 88). The
    public attributes ``__post_init__`` sets beyond its fields cross with it both ways (a budget's totals so
    written were missing: 78 of 88)."""
    sub = submission(RETURNS_A_RECORD_IT_COMPUTES, {name: "callable" for name in ("budget", "scaled", "fits",
                                                                                 "value_of")}, call_timeout=10)
    b = sub.budget(2048, 288)
    assert b.total == 2336 and b.spare == 49152 - 2336
    assert sub.fits(b, 2336) is True and sub.fits(b, 2335) is False
    assert sub.value_of(sub.scaled(1.5)) == 3.0
    with pytest.raises(Exception, match="not the submission's Budget"):  # fields its class does not have
        sub.fits(values.Record("Budget", {"dynamic": 1}), 10)


RETURNS_ITS_BUFFER_IN_A_RECORD = """
import collections
import dataclasses

import numpy as np

Pair = collections.namedtuple("Pair", "m acc")


@dataclasses.dataclass(frozen=True)
class Summary:
    m: float
    acc: object
    ids: list

    def __iter__(self):
        return iter((self.m, self.acc))


_OUT = np.zeros(3)
_IDS = []


def merge(a, b, how):
    np.add(a, b, out=_OUT)  # one output buffer for every call, however the result is wrapped
    _IDS[:] = [int(a[0])]
    if how == "named":
        return Pair(1.0, _OUT)
    return (Summary(1.0, _OUT, _IDS),)
"""


@needs_bwrap
def test_a_buffer_a_named_tuple_or_a_frozen_dataclass_returns_is_followed_too(submission):
    """A summary written as a named tuple or a frozen dataclass (which cross by value) holds the same
    reused output buffer as a plain tuple would: the test's earlier result changes with the next call,
    as in one process, and the same object comes back (04-04's merge_reuses_one_output_buffer so
    written graded 158 of 158, where pytest fails it)."""
    sub = submission(RETURNS_ITS_BUFFER_IN_A_RECORD, {"merge": "callable"}, call_timeout=10)
    first = sub.merge(np.ones(3), np.ones(3), "named")
    assert type(first).__name__ == "Pair" and (first.acc == 2).all()
    second = sub.merge(np.zeros(3), np.full(3, 5.0), "named")
    assert (first.acc == 5).all() and second.acc is first.acc and type(second).__name__ == "Pair"
    (summary,) = sub.merge(np.full(3, 2.0), np.ones(3), "record")
    m, acc = summary
    assert acc is summary.acc is first.acc and (acc == 3).all() and summary.ids == [2]
    sub.merge(np.full(3, 4.0), np.ones(3), "named")
    assert (summary.acc == 5).all() and summary.ids == [4], "a frozen dataclass's fields are followed"


RETURNS_ITS_BUFFER_OF_A_SUBCLASS = """
import numpy as np
import torch


class Buf(np.ndarray):
    pass


class Scratch(torch.Tensor):
    pass


_OUT = np.zeros(3).view(Buf)
_RAW = np.zeros(3)
_T = torch.zeros(3).as_subclass(Scratch)


def merge(a, b):
    np.add(a, b, out=_OUT)  # one output buffer of the student's own array class
    return 1.0, _OUT


def merge_view(a, b):
    np.add(a, b, out=_RAW)
    return _RAW.view(Buf)  # a new object of the subclass each call, over the same memory


def scaled(x):
    _T.copy_(x * 2)
    return _T
"""


@needs_bwrap
def test_a_buffer_of_an_array_subclass_a_call_returns_is_followed_as_its_plain_value(submission):
    """An output buffer of the student's own ``np.ndarray`` (or ``torch.Tensor``) subclass crosses as a plain
    array and is followed as one: the test's earlier result changes with the next call, as in one process
    (04-04's merge_reuses_one_output_buffer with such a buffer graded 158 of 158, where pytest fails it)."""
    torch = pytest.importorskip("torch")
    sub = submission(RETURNS_ITS_BUFFER_OF_A_SUBCLASS, {"merge": "callable", "merge_view": "callable",
                                                        "scaled": "callable"}, call_timeout=10)
    _, first = sub.merge(np.ones(3), np.ones(3))
    assert type(first) is np.ndarray and (first == 2).all()
    _, second = sub.merge(np.zeros(3), np.full(3, 5.0))
    assert second is first and (first == 5).all()
    view = sub.merge_view(np.ones(3), np.ones(3))
    sub.merge_view(np.zeros(3), np.full(3, 4.0))
    assert (view == 4).all(), "a fresh view of the subclass over the same memory changes too"
    t = sub.scaled(torch.ones(3))
    assert sub.scaled(torch.full((3,), 4.0)) is t and torch.equal(t, torch.full((3,), 8.0))


def test_a_returned_array_over_memory_no_flag_can_write_never_changes():
    """A worker that says a returned array over read-only bytes changed (an honest one cannot change it)
    broke the protocol: the trusted side never writes such memory (a bytes object of the test's)."""
    from labkit.grader import containers

    sealed = np.frombuffer(b"\0" * 8, np.uint8)
    with pytest.raises(wire.ProtocolError):
        containers.refill(sealed, np.full(8, 65, np.uint8))
    assert sealed.tobytes() == b"\0" * 8
    frozen = np.zeros(8, np.uint8)
    frozen.flags.writeable = False
    containers.refill(frozen, np.full(8, 65, np.uint8))  # a flag could make it writeable: written, as it could be
    assert (frozen == 65).all() and not frozen.flags.writeable


HONEST_STYLES = """
import collections
import dataclasses
import weakref

import _helper
import numpy as np

TABLE = list(range(600_000))  # a large public table of the student's own, which no test reads
SCALE = 3


class Key(bytes):
    def __repr__(self):
        return f"Key({self.hex()})"


class Keys(list):
    def __repr__(self):
        return f"Keys({list.__repr__(self)})"


class Pair(tuple):
    pass


def styled():
    return (Key(b"ab"), Keys([1, 2]), Pair((3, 4)), collections.OrderedDict(a=1),
            collections.defaultdict(list, b=[2]), collections.Counter("aab"), collections.deque([5], maxlen=2))


def weakly(obj):
    ref = weakref.ref(obj)
    return ref() is obj


@dataclasses.dataclass(frozen=True)
class Partial:  # a summary a test unpacks: m, acc = partial
    m: float
    acc: np.ndarray

    def __iter__(self):
        return iter((self.m, self.acc))


def summarize(x):
    return Partial(float(x.max()), x * 2)


def total(partial):
    return float(partial.m + partial.acc.sum())


def streamed(exp, x):
    out = np.empty_like(x)
    exp(x, out=out)  # a test's function, writing into the array it is given; its result unused
    return out


def refused_after_a_write(fill, x):
    out = np.zeros_like(x)
    try:
        fill(out)
    except ValueError:
        return out


class Table(np.ndarray):  # an array of the student's own class
    pass


def empty_table(n):
    return np.zeros((0, n), dtype=np.int64).view(Table)


def early():
    return _helper.VALUE


def late():
    import _helper as again  # at call time: the student's folder is no longer importable, as under pytest

    return again.VALUE


def __getattr__(name):  # names the module makes when first read (PEP 562)
    if name == "LIMIT":
        return 64
    if name == "lazy":
        return lambda x: x + 1
    raise AttributeError(name)


def refuse(n):
    err = ValueError("bad n")
    err.add_note(f"argument: {n}")
    raise err
"""
HONEST_STYLES_API = {name: "callable" for name in ("styled", "weakly", "refuse", "lazy", "summarize", "total",
                                                   "streamed", "refused_after_a_write", "empty_table", "early",
                                                   "late")} | \
    {"SCALE": "value", "LIMIT": "value"}


@needs_bwrap
def test_honest_styles_cross_as_they_would_in_one_process(submission):
    """Ways of writing a correct submission that once graded apart from pytest: a result of a subclass
    of bytes or of a container is its plain value (a handle is never equal to data), a large public
    table no test reads costs nothing at import, a test's object may be held weakly, an exception's
    notes reach ``pytest.raises(match=)``, names a module ``__getattr__`` makes are found, a frozen
    dataclass holding an array unpacks and goes back whole, what a test's function writes into the
    arrays the submission gives it (``np.exp(x, out=out)``) reaches them, returning or raising, an
    array of the student's own subclass is an array, and a module of the student's folder imported at
    call time is not found, as under pytest (whose loader drops the folder once the file is loaded)."""
    sub = submission(HONEST_STYLES, HONEST_STYLES_API, files=[("_helper.py", "VALUE = 1\n")], call_timeout=5)
    assert sub.SCALE == 3 and "TABLE" not in vars(sub)
    table = sub.empty_table(3)  # an array subclass of the student's: an array, even empty
    assert type(table) is np.ndarray and table.shape == (0, 3) and table.dtype == np.int64
    assert sub.early() == 1
    with pytest.raises(ModuleNotFoundError):  # as under pytest, whose loader drops the folder after the import
        sub.late()
    assert sub.LIMIT == 64 and sub.lazy(1) == 2
    partial = sub.summarize(np.arange(3.0))
    m, acc = partial  # its items cross with it; passed back, it is the submission's dataclass again
    assert m == 2.0 and np.array_equal(acc, [0.0, 2.0, 4.0]) and sub.total(partial) == 8.0

    def fill(out):
        out[...] = 7.0
        raise ValueError("refused, after writing")

    x = np.linspace(-1.0, 1.0, 5)  # a test's np.exp wrapper called with out=: the write reaches the submission
    assert np.array_equal(sub.streamed(lambda x, out=None: np.exp(x, out=out), x), np.exp(x))
    assert (sub.refused_after_a_write(fill, x) == 7.0).all()
    key, keys, pair, ordered, default, counter, dq = sub.styled()
    assert (key, keys, pair) == (b"ab", [1, 2], (3, 4))
    assert (ordered, default, counter) == ({"a": 1}, {"b": [2]}, {"a": 2, "b": 1})
    assert type(key) is bytes and type(keys) is list and dq == collections.deque([5]) and dq.maxlen == 2

    class Block:  # a test's object, lent: the submission may keep a weak reference to it
        pass

    assert sub.weakly(Block()) is True
    with pytest.raises(ValueError, match="argument: 7"):  # match= reads the notes, as in one process
        sub.refuse(7)


WARNS = """
def waste(n, b):
    blocks = -(-n // b)
    return blocks * b - n   # in a numpy block size's int32: wraps (to the right answer), with a RuntimeWarning
"""


@needs_bwrap
def test_a_warning_the_test_makes_an_error_raises_in_the_submission(submission):
    """A test's warning filters hold in the worker during its calls (those naming a built-in warning class):
    02-02 makes numpy's RuntimeWarning an error around ``internal_fragmentation``, so that an overflow in a
    numpy int32 is a wrong answer even where the wrap-around lands on the right one. Under ``labs grade`` the
    worker's own filters only printed it, and the call returned 1, as expected."""
    import warnings

    sub = submission(WARNS, {"waste": "callable"}, call_timeout=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match="overflow"):
            sub.waste(np.int32(2**31 - 1), np.int32(16))
        warnings.filterwarnings("ignore", "overflow", RuntimeWarning)  # the first filter that matches decides
        assert sub.waste(np.int32(2**31 - 1), np.int32(16)) == 1
    with pytest.warns(RuntimeWarning, match="overflow"):  # no filter of the test's: shown, as in one process
        assert sub.waste(np.int32(2**31 - 1), np.int32(16)) == 1


WARNS_BACK = """
import warnings

import numpy as np

class SlowPathWarning(UserWarning):  # a warning class of the student's own
    pass

def slow(n):
    warnings.warn(f"{n} blocks took the slow path", SlowPathWarning)
    return n

def deprecated():
    warnings.warn("use allocate_many", DeprecationWarning)
    return 1

def overflow(a, b):
    return a * b   # numpy int32: a RuntimeWarning, as numpy emits it

def flood(n):
    for i in range(n):
        warnings.warn(f"warning {i}", RuntimeWarning)
    return n
"""


@needs_bwrap
def test_a_warning_the_submission_emits_reaches_the_test(submission):
    """A warning the submission's code emits during a call is emitted again in the test, as in one process:
    ``pytest.warns`` sees it, with its category (a class of the student's own as a subclass of its built-in
    base, named as it is) and message, and the test's filters decide it; a flood sends back the first 64."""
    import warnings

    sub = submission(WARNS_BACK, {name: "callable" for name in ("slow", "deprecated", "overflow", "flood")},
                     call_timeout=30)
    with pytest.warns(UserWarning, match="^3 blocks took the slow path$") as record:
        assert sub.slow(3) == 3
    assert [type(w.message).__name__ for w in record] == ["SlowPathWarning"]
    with pytest.warns(DeprecationWarning, match="allocate_many"):
        assert sub.deprecated() == 1
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert sub.overflow(np.int32(2**30), np.int32(4)) == 0
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=UserWarning)  # the test's filters decide, as in one process
        assert sub.slow(4) == 4 and sub.flood(10_000) == 10_000
    assert [str(w.message) for w in record] == [f"warning {i}" for i in range(64)]


EMPTY = """
import torch

def fresh(n):
    return torch.empty(n)   # what an output allocated without zeroing holds

def modes():
    return torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory
"""


@needs_bwrap
def test_the_tests_deterministic_mode_holds_in_the_submission(submission):
    """torch's deterministic mode as the test set it holds in the worker during its calls: 04-03 and 04-06
    turn it on with ``fill_uninitialized_memory`` so that every ``torch.empty`` is NaN and an output row a
    kernel never writes shows every time. Under ``labs grade`` the worker's memory came back zero by luck,
    and a submission that left an empty sequence's row unwritten passed there the test pytest fails it on.
    After the test's block, the worker's own mode again."""
    torch = pytest.importorskip("torch")
    sub = submission(EMPTY, {"fresh": "callable", "modes": "callable"}, call_timeout=30)
    assert sub.modes() == (False, True)
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert torch.isnan(sub.fresh(1000)).all(), "torch.empty in the submission: NaN, as in the test's process"
        assert sub.modes() == (True, True)
        torch.utils.deterministic.fill_uninitialized_memory = False
        assert sub.modes() == (True, False)
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        torch.utils.deterministic.fill_uninitialized_memory = was[2]
    assert sub.modes() == (False, True)


ERRORS = """
class UnknownGPU(ValueError):
    pass

def refuse(gpu):
    raise UnknownGPU(f"{gpu!r} is not in the table")   # the class's name says gpu, the message does not

def undecodable():
    raise UnicodeDecodeError("utf-8", b"x", 0, 1, "invalid start byte")

class BadInput(LookupError, ValueError):  # two built-in bases: both a LookupError and a ValueError
    pass

def refuse_both(n):
    raise BadInput(f"no block {n}")
"""


@needs_bwrap
def test_an_exception_reads_as_its_message_whatever_its_class_is_called(submission):
    """str() of an exception the submission raised is its message, and it has no notes, as in one
    process: a test's ``match=`` (message and notes) or ``word in str(err)`` never reads the name of the
    student's class (an ``UnknownGPU`` raised with a message that names no gpu passed 04-02's "a
    ValueError naming gpu" under labs grade when the class's name was put before the message)."""
    sub = submission(ERRORS, {name: "callable" for name in ("refuse", "undecodable", "refuse_both")})
    with pytest.raises(ValueError) as caught:
        sub.refuse("H1000")
    assert str(caught.value) == "'H1000' is not in the table"
    assert "gpu" not in str(caught.value).lower() and not getattr(caught.value, "__notes__", None)
    assert type(caught.value).__name__ == "UnknownGPU"  # as in one process (the report shows it)
    with pytest.raises(AssertionError, match="did not match"):  # match= reads the message and the notes
        with pytest.raises(ValueError, match="GPU"):
            sub.refuse("H1000")
    with pytest.raises(ValueError):  # a built-in that takes more than a message is still a ValueError
        sub.undecodable()
    for expected in (ValueError, LookupError):  # every built-in base, as in one process
        with pytest.raises(expected, match="no block 3"):
            sub.refuse_both(3)


MISSING_KEYS = """
class Block:
    def __repr__(self):
        return "Block(3)"

class NoSuchBlock(KeyError):
    pass

def lookup(key):
    return {}[key]   # a KeyError holding the key

def lookup_object():
    raise KeyError(Block())

def lookup_own(key):
    raise NoSuchBlock(key)

def ask(lookup, key):
    try:
        lookup(key)   # a test's function, which raises KeyError
    except KeyError as err:
        return str(err), err.args
"""


@needs_bwrap
def test_a_key_error_reads_as_in_one_process(submission):
    """str() of a KeyError is its key's repr (``str(KeyError('a'))`` is ``'a'``, quotes included); a KeyError
    made again from that text in the grader read quoted twice (``"'a'"``), and a test's ``match=`` on it
    differed from pytest's; so did one a test's function raised, in the submission's code. A literal key
    comes back as itself; an object's repr as it was shown."""
    sub = submission(MISSING_KEYS, {name: "callable" for name in ("lookup", "lookup_object", "lookup_own", "ask")})
    for key in ("page", 7, (2, "kv"), -0.5):
        expected = KeyError(key)  # what one process raises, made here before the call
        with pytest.raises(KeyError) as caught:
            sub.lookup(key)
        assert str(caught.value) == str(expected) and caught.value.args == expected.args
    with pytest.raises(KeyError) as caught:
        sub.lookup_object()
    assert str(caught.value) == "Block(3)"
    with pytest.raises(KeyError, match=r"^'page'$") as caught:
        sub.lookup_own("page")
    assert type(caught.value).__name__ == "NoSuchBlock" and caught.value.args == ("page",)
    expected = KeyError("page")  # the other way: a test's function raised it, the submission reads it
    assert sub.ask(lambda key: {}[key], "page") == (str(expected), expected.args)


VIEWS = """
import torch

def layout(k, v):
    # What a kernel that takes pointers and strides sees of its arguments.
    return (tuple(k.stride()), tuple(v.stride()), k.is_contiguous(), v.data_ptr() - k.data_ptr(),
            k.untyped_storage().data_ptr() == v.untyped_storage().data_ptr())

def read_as_if_contiguous(k):
    # The classic mistake: k's elements read from its start as if it were contiguous.
    return torch.as_strided(k, (k.numel(),), (1,)).clone()

def write_k(k, v, value):
    k.fill_(value)            # through one view of the pool: the other half is unchanged

def write_past_the_end(out):
    torch.as_strided(out, (2 * out.numel(),), (1,)).fill_(-1.0)   # a kernel writing past out's end

def head(x):
    return x[:, :2]           # a view, returned

def np_layout(a):
    return a.strides, bool(a.flags.c_contiguous)

def np_fill(a, value):
    a[...] = value

def np_tail(a):
    return a[1:]              # a view of the argument, returned: the test's own memory, as in one process

def np_tail_copy(a):
    return a[1:].copy()

def np_unlock_fill(a, value):
    a.flags.writeable = True  # "assignment destination is read-only", unlocked: the caller's array is written
    a[...] = value

def np_fill_a_view_or_a_copy(a, value):
    view = a[...]
    try:
        view.flags.writeable = True  # numpy refuses it for a view of a read-only array that owns its memory
    except ValueError:
        view = view.copy()
    view[...] = value
    return float(view.sum())
"""
VIEWS_API = {name: "callable" for name in ("layout", "read_as_if_contiguous", "write_k", "write_past_the_end", "head",
                                           "np_layout", "np_fill", "np_tail", "np_tail_copy", "np_unlock_fill",
                                           "np_fill_a_view_or_a_copy")}


@needs_bwrap
def test_arrays_cross_as_the_views_a_test_made_and_writes_come_back_through_them(submission):
    """A kernel in the worker meets the layout the test made (K and V as halves of one fused pool, q
    sliced from a wider buffer): the strides, the memory beside a view, one storage shared by both
    halves; what it writes, through a view or past its end, reaches the test's storage. Under plain
    pytest a kernel that assumes contiguity reads the poison beside a view: under the grader too."""
    torch = pytest.importorskip("torch")
    from labkit.testing import contract

    sub = submission(VIEWS, VIEWS_API, call_timeout=30)
    k, v = torch.randn(3, 4, 2, 5), torch.randn(3, 4, 2, 5)
    kv_k, kv_v = contract.fused_pool(k, v)
    assert sub.layout(kv_k, kv_v) == (tuple(kv_k.stride()), tuple(kv_v.stride()), False,
                                       kv_v.data_ptr() - kv_k.data_ptr(), True)
    # Read as if contiguous, k's "elements" run into V's first block, as they do in one process.
    assert torch.equal(sub.read_as_if_contiguous(kv_k), torch.as_strided(kv_k, (kv_k.numel(),), (1,)))
    q = contract.qkv_slice(torch.randn(4, 3, 5), num_kv_heads=1)
    assert torch.isnan(sub.read_as_if_contiguous(q)).any(), "q's rows run into the NaN of qkv's K and V parts"

    v_before = kv_v.clone()
    sub.write_k(kv_k, kv_v, 7.0)
    assert (kv_k == 7).all() and torch.equal(kv_v, v_before), "a write through one view of a pool, and only it"

    storage = torch.zeros(8, 3)
    out = storage[:4]
    sub.write_past_the_end(out)
    assert (storage == -1).all(), "a write past a view's end lands in the storage beside it, as in one process"

    x = torch.arange(24.0).reshape(4, 6)
    got = sub.head(x)
    assert got.stride() == x[:, :2].stride() and torch.equal(got, x[:, :2]), "a view returned keeps its layout"
    got[0, 0] = -5.0  # a view of an argument is a view of the test's tensor: a test that the result is new fails
    assert x[0, 0] == -5.0 and got.data_ptr() == x.data_ptr(), "a returned view of an argument shares its memory"

    base = np.arange(48.0).reshape(6, 8)
    a, b = base[:, :3], base[::2, ::-1]
    assert sub.np_layout(a) == (a.strides, False) and sub.np_layout(b) == (b.strides, False)
    sub.np_fill(a, -2.0)
    assert (base[:, :3] == -2).all() and (base[:, 3:] != -2).all(), "numpy: written through the view alone"
    frozen = base[:, 4:]
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        sub.np_fill(frozen, 0.0)
    assert (base[:, 4:] != 0).all()
    tail, copy = sub.np_tail(base), sub.np_tail_copy(base)
    assert np.shares_memory(tail, base) and tail.ctypes.data == base[1:].ctypes.data and tail.flags.writeable
    assert not np.shares_memory(copy, base) and np.array_equal(copy, base[1:])
    assert np.shares_memory(sub.np_tail(frozen), base) and not sub.np_tail(frozen).flags.writeable

    # A read-only argument made writeable again and written: in one process the test's array changes (it
    # owns its memory, or its base is writeable), unless no flag can make it writeable (over read-only bytes).
    own = np.zeros(3)
    own.flags.writeable = False
    assert sub.np_fill_a_view_or_a_copy(own, 2.0) == 6.0 and (own == 0).all(), \
        "a view of a read-only owner cannot be made writeable: the submission wrote its own copy"
    sub.np_unlock_fill(own, 4.0)
    assert (own == 4).all(), "a read-only array the submission made writeable and wrote: written, as in one process"
    assert own.flags.writeable, "the flag is the test's array's in one process: it stays set after the call"
    sub.np_unlock_fill(frozen, 5.0)
    assert (base[:, 4:] == 5).all() and (base[:, :4] != 5).all(), "a read-only view of a writeable base, unlocked"
    assert frozen.flags.writeable
    sealed = np.frombuffer(np.arange(3.0).tobytes())
    with pytest.raises(ValueError, match="WRITEABLE"):
        sub.np_unlock_fill(sealed, 6.0)
    sealed_tail = sub.np_tail(sealed)
    assert np.array_equal(sealed_tail, [1.0, 2.0]) and not sealed_tail.flags.writeable
    assert np.shares_memory(sealed_tail, sealed), "a returned view of a sealed argument is still a view of it"


@needs_bwrap
def test_a_hang_times_out_and_a_crash_is_reported_then_the_next_call_works(submission):
    incidents = []
    sub = submission(SOURCE, API, call_timeout=1.0, on_incident=lambda kind, message: incidents.append(kind))
    start = time.monotonic()
    with pytest.raises(standin.SubmissionTimeout, match=r"hang\(\) did not return within 1.0 s"):
        sub.hang()
    assert time.monotonic() - start < 5
    with pytest.raises(standin.SubmissionCrashed, match="exited with code 3"):
        sub.die()
    with pytest.raises(standin.SubmissionCrashed, match="SystemExit"):
        sub.leave()
    assert sub.picky(4) == 4  # a fresh worker
    assert incidents == ["timeout", "crashed", "crashed"]


EXITS = """
import os
import signal

def exit_with(code):
    os._exit(code)

def killed_by(number):
    os.kill(os.getpid(), number)
"""


@needs_bwrap
@pytest.mark.parametrize("sandboxed", [True, False])
def test_an_exit_status_past_128_is_not_reported_as_a_signal(submission, sandboxed):
    """A worker that exits with 137 did not die of signal 9. Without the sandbox the two are told apart;
    bubblewrap reports both as 137, and the reason then names both, never the signal alone."""
    options = {} if sandboxed else {"enabled": False}
    sub = submission(EXITS, {"exit_with": "callable", "killed_by": "callable"}, call_timeout=10, box=options)
    with pytest.raises(standin.SubmissionCrashed, match="exited with code 137") as caught:
        sub.exit_with(137)
    assert ("signal 9" in str(caught.value)) is sandboxed
    with pytest.raises(standin.SubmissionCrashed, match="killed by signal 9") as caught:
        sub.killed_by(9)
    assert ("exited with code" in str(caught.value)) is sandboxed


LINGERING = """
import os, sys, time

def linger():  # the worker lets go of its pipe to the grader, and stays
    os.close(int(sys.argv[4]))
    time.sleep(60)

def ping():
    return 1
"""


@needs_bwrap
def test_a_worker_that_closes_its_pipe_and_stays_is_a_crash_within_the_calls_time_limit(submission):
    """The grader waits for a worker whose pipe closed, to say how it ended, only as long as the call has
    left: waiting 5 s more made each such call take 5 s, whatever --call-timeout said."""
    incidents = []
    sub = submission(LINGERING, {"linger": "callable", "ping": "callable"}, call_timeout=1.0,
                     on_incident=lambda kind, message: incidents.append(kind))
    start = time.monotonic()
    with pytest.raises(standin.SubmissionCrashed, match="closed its pipe"):
        sub.linger()
    assert time.monotonic() - start < 4, f"{time.monotonic() - start:.1f} s for a call with a 1 s limit"
    assert sub.ping() == 1 and incidents == ["crashed"]


DEAF = """
import time
from decimal import Decimal
from fractions import Fraction
from labkit.grader import wire

_recv, _requests = wire.recv, []


def _deaf(fd, *args, **kwargs):  # the worker reads its first request, then never another
    _requests.append(fd)
    if len(_requests) > 1:
        time.sleep(3600)
    return _recv(fd, *args, **kwargs)


wire.recv = _deaf


def ping():
    return 1


def take(x):
    return len(x)
"""


@needs_bwrap
def test_a_worker_that_stops_reading_cannot_hold_a_call_past_its_time_limit(submission):
    """A request larger than the pipe holds (64 KiB) is written as the worker reads it: one that stops
    reading times out at the call's limit, as one that stops answering does."""
    sub = submission(DEAF, {"ping": "callable", "take": "callable"}, call_timeout=2.0)
    assert sub.ping() == 1
    outcome = []

    def call():
        start = time.monotonic()
        try:
            sub.take(np.zeros(1 << 20))  # 8 MiB to send
        except BaseException as err:
            outcome.append((type(err), time.monotonic() - start))

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(30)
    if caller.is_alive():
        sub._worker.kill()  # unblock the writer, so that the test ends
        pytest.fail("the grader was still writing to the worker 30 s into a call with a 2 s limit")
    assert outcome and outcome[0][0] is standin.SubmissionTimeout and outcome[0][1] < 10, outcome


def test_timeouts_and_crashes_are_not_exceptions_a_test_could_swallow():
    # pytest.raises(Exception) in a lab's bad-input test must not turn a hang into a pass.
    assert not issubclass(standin.SubmissionTimeout, Exception)
    assert not issubclass(standin.SubmissionCrashed, Exception)


@needs_bwrap
def test_the_lab_deadline_stops_every_later_call(submission):
    sub = submission(SOURCE, API, call_timeout=30, deadline=time.time() + 3)
    with pytest.raises(standin.SubmissionTimeout, match="the lab's time limit"):
        sub.hang()
    with pytest.raises(standin.SubmissionTimeout, match="the lab's time limit was reached"):
        sub.picky(1)


FORGED_READY = """
import sys
import threading
from labkit.grader import values, wire

# The worker's own write end is in its command line: speak first, with a "ready" of our own.
_fd = int(sys.argv[4])
wire.send(_fd, ("ready", {
    "_call_timeout": ("value", values.encode(1e9)), "_deadline": ("value", values.encode(None)),
    "_api": ("value", values.encode({})), "__class__": ("value", values.encode(1)),
    "double": ("value", values.encode(5)), "SCALE": ("function", None),
}, ([], [], [], False)))

def double(x):
    while True:
        pass
"""


@needs_bwrap
def test_nothing_the_ready_message_says_sets_an_attribute_of_the_stand_in(submission):
    sub = submission(FORGED_READY, {"double": "callable", "SCALE": "value"}, call_timeout=2.0)
    assert sub._call_timeout == 2.0 and sub._deadline is None and type(sub) is standin.Submission
    assert sub._api == {}, "a name of the wrong kind (a value for a function) is not taken"
    with pytest.raises(AttributeError):
        sub.double()


OWN_HELPERS = """
def helper(x):
    return x + 1


class Node:
    def __init__(self, v):
        self.v = v


class Holder:
    def __init__(self):
        self.fn = helper  # a field that holds one of the module's functions


def get():
    return helper


def node_class():
    return Node


def holder():
    return Holder()


def apply(fn, x):
    return fn(x)


for _i in range(1001):
    exec(f"def many_{_i}(): pass")


def too_many():
    return [globals()[f"many_{i}"] for i in range(1001)]
"""
OWN_HELPERS_API = {name: "callable" for name in ("get", "node_class", "holder", "apply", "too_many")}


@needs_bwrap
def test_a_public_function_or_class_outside_the_api_crosses_as_the_submissions_own(submission):
    """An honest submission may hand back a function or class of its module that the lab does not
    declare (a helper a call returns, a function a field holds): it reaches the test as a stand-in that
    calls into the worker, the same one each time, and goes back as the student's own."""
    sub = submission(OWN_HELPERS, OWN_HELPERS_API, call_timeout=5)
    fn = sub.get()
    assert fn(2) == 3 and sub.get() is fn
    assert sub.holder().fn is fn, "a field's copy holds the same stand-in"
    assert sub.apply(fn, 4) == 5, "passed back, it is the student's own function"
    cls = sub.node_class()
    assert cls(7).v == 7 and sub.node_class() is cls
    assert "helper" not in vars(sub) and "Node" not in vars(sub), "nothing is added to the lab's names"
    with pytest.raises(standin.SubmissionCrashed, match="more than 1000 of the module's classes and functions"):
        sub.too_many()  # each stand-in costs the grader memory: their number is bounded


POISONED_COPY = """
from labkit.grader import snapshots

_leaf = snapshots.Snapshots.leaf


def _malformed(self, value, depth):
    if type(value) is str and value == "poison":  # this field's copy crosses as no value at all
        return (str, value), ("no such tag", 1)
    return _leaf(self, value, depth)


snapshots.Snapshots.leaf = _malformed


class Box:
    def __init__(self):
        self.n = 1
        self.bad = "poison"


def box():
    return Box()
"""


@needs_bwrap
def test_a_malformed_copy_of_a_field_is_a_crash_that_no_test_can_catch(submission):
    """Copies are decoded when a field is read: a worker that sent one malformed stops there, as with
    any malformed reply, with an error that ``pytest.raises(Exception)`` around the read cannot take."""
    sub = submission(POISONED_COPY, {"box": "callable"}, call_timeout=5)
    box = sub.box()
    assert box.n == 1
    with pytest.raises(standin.SubmissionCrashed, match="reading a field: unknown tag"):
        try:
            _ = box.bad
        except Exception:
            pytest.fail("a malformed copy was an exception the test could catch")
    assert sub.box().n == 1, "the next call starts a fresh worker"


PATCHABLE = """
import os

SCALE = 10

def inner(x):
    return x + 1

def outer(x):
    return inner(x) * SCALE

def die():
    os._exit(3)
"""
PATCHABLE_API = {"inner": "callable", "outer": "callable", "die": "callable", "SCALE": "value"}


@needs_bwrap
def test_the_stand_in_is_a_module_to_whatever_reads_or_patches_one(submission):
    """The lab's names are in the stand-in's own ``__dict__``; a patch made there, by any means, is what
    the submission's functions find, and undoing it restores the submission's own function, whether
    the old value was read with ``getattr`` (pytest 8), from ``__dict__`` (pytest 9) or by mock."""
    import inspect
    from unittest import mock

    sub = submission(PATCHABLE, PATCHABLE_API, call_timeout=5)
    own = sub.inner
    assert inspect.ismodule(sub) and {"inner", "outer", "die", "SCALE"} <= set(vars(sub))
    assert not [k for k in vars(sub) if k.startswith("_") and not k.startswith("__")], "its state is not a name"
    assert inspect.getattr_static(sub, "inner") is own and dict(inspect.getmembers(sub))["outer"] is sub.outer
    seen = []

    def recording(x):
        seen.append(x)
        return own(x)

    # The old value as pytest 8 reads it (getattr) and as pytest 9 does (from __dict__): one object.
    for how, old in (("getattr", sub.inner), ("__dict__", sub.__dict__.get("inner"))):
        sub.inner = recording
        assert sub.outer(1) == 20 and seen[-1] == 1, f"{how}: the patch reaches the worker"
        sub.inner = old  # the undo
        assert sub.inner is own and sub.outer(2) == 30 and seen == [1], f"{how}: the undo restores the function"
        seen.clear()
    with pytest.MonkeyPatch.context() as mp:  # the installed pytest's own monkeypatch
        mp.setattr(sub, "inner", recording)
        mp.setattr(sub, "SCALE", 100)
        assert sub.outer(1) == 200 and seen == [1]
        with pytest.raises(standin.SubmissionCrashed):
            sub.die()
        assert sub.outer(2) == 300 and seen == [1, 2], "the patch holds in the next worker too"
    assert sub.outer(3) == 40 and seen == [1, 2] and sub.SCALE == 10
    with mock.patch.object(sub, "inner", recording):
        assert sub.outer(4) == 50 and seen[-1] == 4
    sub.__dict__["inner"] = recording  # a write to __dict__ itself
    assert sub.outer(5) == 60 and seen[-1] == 5
    sub.__dict__["inner"] = own
    with pytest.MonkeyPatch.context() as mp:
        mp.delattr(sub, "inner")
        assert not hasattr(sub, "inner")
        with pytest.raises(NameError, match="inner"):
            sub.outer(6)
    assert sub.outer(6) == 70, "after the undo the submission has its function again"
    assert sub._call_timeout == 5 and sub.outer is dict(vars(sub))["outer"]


SKIPS_TEST = """
import pytest
from labkit.testing import seam


@pytest.fixture
def gpu():
    pytest.skip("no GPU: decided in the fixture, before the test's body")


def test_skipped_in_setup(gpu):
    pass


@pytest.mark.skipif(True, reason="a mark")
def test_marked():
    pass


def test_skip_here():
    seam.skip_here("this machine has no GPU")


def test_skip_in_the_body():
    answer = "not run"  # what a child process wrote, say
    pytest.skip(answer)


def test_xfail_in_the_body():
    pytest.xfail("said so")


def test_passes():
    pass
"""


def test_under_grading_a_skip_counts_only_where_the_machine_decided_it(tmp_path):
    """Skips decided before a test's body (a fixture, a mark) and ``seam.skip_here`` leave the total; a
    skip raised in the body otherwise (it may rest on what the submission sent) is a test not passed."""
    from labkit.course.runner import run_lab_tests

    (tmp_path / "test_skips.py").write_text(SKIPS_TEST)
    plain = run_lab_tests(tmp_path)
    assert {t.function: t.outcome for t in plain.tests} == {
        "test_skipped_in_setup": "skipped", "test_marked": "skipped", "test_skip_here": "skipped",
        "test_skip_in_the_body": "skipped", "test_xfail_in_the_body": "skipped", "test_passes": "passed"}
    graded = run_lab_tests(tmp_path, env={"LABS_GRADING": json.dumps({"file": str(tmp_path / "starter.py")})},
                           pytest_args=("-p", "labkit.grader.pytest_plugin"))
    outcomes = {t.function: t.outcome for t in graded.tests}
    assert outcomes == {**{t.function: t.outcome for t in plain.tests}, "test_skip_in_the_body": "failed",
                        "test_xfail_in_the_body": "failed"}, outcomes
    failure = next(t for t in graded.tests if t.function == "test_skip_in_the_body")
    assert "not run" in failure.message and "counts as not passed" in failure.message, failure.message
    verdict = grade.verdict_from_run("ann", _lab(), graded)
    assert (verdict.passed, verdict.total, verdict.status) == (1, 3, "failed"), verdict


CLAIMS_THE_MEMORY_LIMIT = """
import io, sys
import numpy as np
buffer = io.BytesIO()
np.save(buffer, np.zeros(3), allow_pickle=False)
sys.stdout.buffer.write(buffer.getvalue())
sys.stderr.write("\\n" + sys.argv[1])  # the grader's own words for a sandbox killed for memory
"""


@needs_bwrap
def test_a_childs_output_cannot_claim_that_its_sandbox_was_killed_for_memory(tmp_path):
    """Whether the kernel killed a sandbox for memory is the grader's to know (its cgroup), never read
    from what the child wrote: a child that answers, exits 0 and ends its stderr with the grader's words
    for a memory kill must not turn its test into a crash (a 'crashed' status, 'memory limit' as the reason)."""
    from labkit.grader.limits import Resources
    from labkit.grader.pytest_plugin import _Grader

    (tmp_path / "starter.py").write_text("X = 1\n")
    script = tmp_path / "_child.py"
    script.write_text(CLAIMS_THE_MEMORY_LIMIT)
    grader = _Grader({"file": str(tmp_path / "starter.py"), "deadline": time.time() + 120})
    try:
        code, out, err = grader.run_child(script, [sandbox.memory_limit(Resources())], {}, 60)
    finally:
        grader.pytest_unconfigure()
    assert code == 0 and np.load(io.BytesIO(out)).shape == (3,), err[-2000:]
    assert grader.take_incidents() == []


RESULTS_TEST = """
import os
import subprocess
import sys
import threading


def test_the_results_pipe_is_not_handed_on():
    assert "LABS_RESULTS_FD" not in os.environ and "LABS_RESULTS" not in os.environ
    # A process this test starts, even one that keeps every inheritable descriptor, gets none of ours.
    fds = subprocess.run([sys.executable, "-c", "import os; print(sorted(map(int, os.listdir('/proc/self/fd'))))"],
                         close_fds=False, capture_output=True, text=True).stdout
    assert eval(fds) == [0, 1, 2, 3], fds
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_results_reach_the_runner_through_a_pipe_no_other_process_holds(tmp_path):
    from labkit.course.runner import run_lab_tests

    (tmp_path / "test_pipe.py").write_text(RESULTS_TEST)
    run = run_lab_tests(tmp_path, cwd=tmp_path)
    assert [(t.name, t.outcome) for t in run.tests] == [("test_the_results_pipe_is_not_handed_on", "passed")], \
        run.output[-2000:]


# --------------------------------------------------------------------------- statuses without running anything


def _lab(lab_id="02-06"):
    return registry.get(lab_id)


def test_missing_syntax_error_and_links_are_decided_without_running_code(tmp_path):
    lab = _lab()
    folder = lambda student: tmp_path / student / lab.folder  # noqa: E731
    folder("carol").mkdir(parents=True)
    (folder("carol") / "starter.py").write_text("def build_slot_mapping(:\n")
    folder("mallory").mkdir(parents=True)
    (folder("mallory") / "starter.py").symlink_to(lab.path / "solution.py")  # the instructor's solution
    (tmp_path / "nobody").mkdir()
    result = grade.grade(tmp_path, [lab])
    verdicts, warnings = result.verdicts, result.warnings
    by_student = {v.student: v for v in verdicts}
    assert by_student["carol"].status == "syntax error" and "line 1" in by_student["carol"].first_failure
    assert by_student["mallory"].status == "refused", "a symbolic link is never followed"
    assert "symbolic link" in by_student["mallory"].first_failure
    assert by_student["nobody"].status == "missing"
    assert all(v.passed == 0 for v in verdicts) and warnings == []


def test_a_file_that_outlasts_the_compile_checks_cpu_limit_leaves_no_core_dump(tmp_path, monkeypatch):
    """The compile check runs outside any sandbox, in the grader's working folder. Stopped at its CPU limit
    (SIGXCPU, whose default action dumps core) it must write nothing there, whatever the grader's own core
    limit (``ulimit -c unlimited``, a container's default). A call with 80,000 keyword arguments (0.7 MB)
    keeps CPython's compiler busy for a minute, its check of repeated keywords being quadratic: it dumped
    56 MB of core into the grader's folder, as many times as students handed it in."""
    import resource

    starter = tmp_path / "files" / "starter.py"
    starter.parent.mkdir()
    starter.write_text("def never():\n    f(" + ", ".join(f"k{i}=0" for i in range(80_000)) + ")\n")
    (tmp_path / "grader").mkdir()
    monkeypatch.chdir(tmp_path / "grader")
    ours = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (ours[1], ours[1]))  # as large as the grader's may be
    try:
        error = grade._syntax_error(starter)
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, ours)
    assert error is not None and "could not be compiled" in error, error
    assert list((tmp_path / "grader").iterdir()) == []


def test_the_trusted_test_process_dumps_no_core(tmp_path):
    """The pytest process that runs a lab's tests under ``labs grade`` (``-p labkit.grader.pytest_plugin``)
    holds the expected answers and decodes what the submission sends: it sets its own core limit to 0,
    whatever the grader's (``ulimit -c unlimited``, a container's default), so that a crash of it leaves
    none of its memory in a core file."""
    import resource

    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        pytest.skip("this process may not raise its core limit: nothing to lower")
    (tmp_path / "test_core.py").write_text(
        "import resource\n\n\ndef test_core_limit():\n"
        "    assert resource.getrlimit(resource.RLIMIT_CORE)[0] == 0\n")
    env = dict(os.environ, LABS_GRADING=json.dumps({"file": str(tmp_path / "starter.py")}),
               PYTHONPATH=str(registry.ROOT))  # this checkout's labkit
    env.pop("PYTEST_ADDOPTS", None)
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                           "labkit.grader.pytest_plugin", str(tmp_path / "test_core.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (hard, hard)))  # the grader's
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


# --------------------------------------------------------------------------- submissions as files


def _record_grading(monkeypatch) -> dict:
    """grade_one replaced by a recorder: student name -> the files of the run folder it was given."""
    seen = {}

    def fake_grade_one(student, lab, work_file, limits, resources, sandbox, hide=(), cgroups=None):
        folder = work_file.parent if work_file is not None else None
        seen[student] = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder else None
        return grade.Verdict(student, lab.id, 1, 1, "ok" if work_file else "missing", "", 0.0)

    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    return seen


def test_every_component_of_a_submissions_path_is_opened_without_following_a_link(tmp_path, monkeypatch):
    """A link anywhere from the student's folder down (the student's folder, the phase, labs and lab
    folders, a file, a folder inside), a hard link, a FIFO: the submission is refused with the path,
    and nothing of it is graded; an honest classmate is graded on her own files."""
    lab = _lab()
    klass, outside = tmp_path / "class", tmp_path / "outside"
    outside.mkdir()
    (outside / "solution.py").write_text("SOLVED = True\n")
    phase, labs_dir, lab_dir = lab.folder.split("/")

    def folder(student):
        path = klass / student / lab.folder
        path.mkdir(parents=True)
        (path / "starter.py").write_text("X = 1\n")
        return path

    folder("ann")
    (folder("ann") if False else klass / "ann" / lab.folder / "helpers").mkdir()
    (klass / "ann" / lab.folder / "helpers" / "util.py").write_text("Y = 2\n")
    (klass / "bob").mkdir()
    (klass / "bob" / phase).symlink_to(klass / "ann" / phase)  # the phase folder: the issue's attack
    (klass / "cat" / phase).mkdir(parents=True)
    (klass / "cat" / phase / labs_dir).symlink_to(klass / "ann" / phase / labs_dir)
    (klass / "dan" / phase / labs_dir).mkdir(parents=True)
    (klass / "dan" / phase / labs_dir / lab_dir).symlink_to(klass / "ann" / lab.folder)
    (klass / "eve").symlink_to(klass / "ann")  # the student's folder itself
    folder("fay").joinpath("starter.py").unlink()
    (klass / "fay" / lab.folder / "starter.py").symlink_to(outside / "solution.py")
    folder("gus").joinpath("helpers").symlink_to(outside)
    folder("hal").joinpath("starter.py").unlink()
    os.link(outside / "solution.py", klass / "hal" / lab.folder / "starter.py")  # a hard link
    os.mkfifo(folder("ivy") / "pipe")  # opening it for reading would block
    (klass / "jo" / phase).mkdir(parents=True)
    (klass / "jo" / phase / labs_dir).write_text("a file where a folder should be\n")
    seen = _record_grading(monkeypatch)
    verdicts = {v.student: v for v in grade.grade(klass, [lab]).verdicts}
    assert verdicts["ann"].status == "ok" and seen["ann"] == ["helpers", "helpers/util.py", "starter.py"]
    expected = {"bob": f"bob/{phase} is a symbolic link", "cat": f"cat/{phase}/{labs_dir} is a symbolic link",
                "dan": f"dan/{lab.folder} is a symbolic link", "eve": "eve is a symbolic link",
                "fay": f"fay/{lab.folder}/starter.py is a symbolic link",
                "gus": f"gus/{lab.folder}/helpers is a symbolic link", "hal": "(a hard link)",
                "ivy": f"ivy/{lab.folder}/pipe is not a regular file", "jo": f"jo/{phase}/{labs_dir} is not a folder"}
    for student, why in expected.items():
        v = verdicts[student]
        assert (v.status, v.passed) == ("refused", 0) and why in v.first_failure, v
        assert v.total == 1, "a refused submission scores 0 of the lab's count"
        assert student not in seen, f"{student}: nothing of a refused submission is graded"


def test_a_submission_past_a_cap_is_refused_before_a_byte_is_read(tmp_path):
    """Caps on entries, bytes and depth are checked with stat alone, before the run folder exists;
    a file over the per-file limit is left out, not counted."""
    from labkit.grader import submissions as files

    lab = _lab()
    student = files.Student("s", "s")

    def attempt(make) -> tuple[str, Path]:
        root = tmp_path / f"class{len(list(tmp_path.iterdir()))}"
        where = root / "s" / lab.folder
        where.mkdir(parents=True)
        (where / "starter.py").write_text("X = 1\n")
        make(where)
        dest = root / "copy"
        try:
            files.copy_lab_folder(root, student, lab.folder, dest)
        except files.Refused as err:
            assert not dest.exists(), "refused before anything was copied"
            return str(err), dest
        return "", dest

    def sparse(where, n, size):
        for i in range(n):
            with open(where / f"data{i}.bin", "wb") as f:
                f.truncate(size)

    why, _ = attempt(lambda w: sparse(w, 700, files.MAX_FILE_BYTES))  # 1.4 GB of holes
    assert f"more than {files.MAX_BYTES >> 20} MiB" in why, why
    why, _ = attempt(lambda w: [(w / f"d{i}").mkdir() for i in range(files.MAX_ENTRIES + 500)])
    assert f"more than {files.MAX_ENTRIES:,} files and folders" in why, why

    def deep(where):
        for _ in range(files.MAX_DEPTH + 4):
            where = where / "d"
            where.mkdir()

    why, _ = attempt(deep)
    assert f"nest more than {files.MAX_DEPTH} deep" in why, why
    why, dest = attempt(lambda w: sparse(w, 1, files.MAX_FILE_BYTES + 1))  # one big file: left out
    assert why == "" and sorted(p.name for p in dest.iterdir()) == ["starter.py"]
    why, dest = attempt(lambda w: (w / "__pycache__").mkdir() or sparse(w / "__pycache__", 3000, 10))
    assert why == "" and sorted(p.name for p in dest.iterdir()) == ["starter.py"], "caches are never looked into"


def test_a_link_that_appears_after_the_count_is_refused(tmp_path, monkeypatch):
    """A folder swapped for a link between the count and the copy: each entry is opened without
    following a link, relative to its folder's descriptor, so the copy refuses it."""
    from labkit.grader import submissions as files

    lab = _lab()
    where = tmp_path / "class" / "s" / lab.folder
    (where / "helpers").mkdir(parents=True)
    (where / "starter.py").write_text("X = 1\n")
    (where / "helpers" / "util.py").write_text("Y = 2\n")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "util.py").write_text("SECRET = 1\n")
    scan = files._scan

    def scan_then_swap(fd, shown):
        listed = scan(fd, shown)
        shutil.rmtree(where / "helpers")
        (where / "helpers").symlink_to(tmp_path / "secret")
        return listed

    monkeypatch.setattr(files, "_scan", scan_then_swap)
    with pytest.raises(files.Refused, match="helpers is a symbolic link"):
        files.copy_lab_folder(tmp_path / "class", files.Student("s", "s"), lab.folder, tmp_path / "copy")
    assert not list((tmp_path / "copy").rglob("util.py")), "nothing was read through the link"


@pytest.mark.parametrize("twin", ["alice\x07", "Alice", "\uff41lice", "alice\u200b", " alice", b"alice\xff"],
                         ids=["control", "case", "fullwidth", "zero-width", "space", "not-utf-8"])
def test_student_names_that_are_one_once_escaped_are_refused_naming_both(tmp_path, twin):
    (tmp_path / "alice").mkdir()
    os.mkdir(os.path.join(os.fsencode(tmp_path), twin if isinstance(twin, bytes) else os.fsencode(twin)))
    with pytest.raises(grade.GradeError) as caught:
        grade.students(tmp_path)
    message = str(caught.value)
    assert "'alice'" in message and message.isprintable(), message
    assert grade.escape(repr(os.fsdecode(twin))) in message, message


def test_odd_names_and_messages_are_graded_sharded_merged_and_reported(tmp_path, monkeypatch):
    """A folder name that is not UTF-8, one with a bidirectional override, messages with lone
    surrogates and control characters: each row is written escaped, in every format, sharded and
    merged, never refused."""
    from labkit.cli import main

    lab = _lab()
    names = [b"ann", b"bob\xff\xfe", "carl\u202eevil".encode(), b"dee\x1b[2J"]
    for name in names:
        folder = os.path.join(os.fsencode(tmp_path / "class"), name, os.fsencode(lab.folder))
        os.makedirs(folder)
        with open(os.path.join(folder, b"starter.py"), "w") as f:
            f.write("X = 1\n")

    def fake_grade_one(student, lab, work_file, limits, resources, sandbox, hide=(), cgroups=None):
        return grade.Verdict(student, lab.id, 0, 3, "failed", f"test_x: ValueError: \udcff\ud800 \x1b[31m{student}",
                             0.1)

    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    whole = grade.grade(tmp_path / "class", [lab], out=tmp_path / "whole.json")
    shown = [v.student for v in whole.verdicts]
    assert sorted(shown) == ["ann", "bob\\xff\\xfe", "carl\\u202eevil", "dee\\x1b[2J"], shown
    for suffix in (".csv", ".json", ".md"):
        grade.grade(tmp_path / "class", [lab], out=tmp_path / f"report{suffix}")
        text = (tmp_path / f"report{suffix}").read_text(encoding="utf-8")  # strict UTF-8: it decodes
        assert text.isprintable() or all(ch.isprintable() or ch in "\n\t" for ch in text), suffix
        # the escapes as text; JSON and Markdown write a backslash as two
        assert ("\\xff\\ud800" if suffix == ".csv" else "\\\\xff\\\\ud800") in text, suffix
    shards = []
    for k in (1, 2):
        grade.grade(tmp_path / "class", [lab], out=tmp_path / f"shard{k}.json", shard=(k, 2))
        shards.append(str(tmp_path / f"shard{k}.json"))
    assert main(["grade", "merge", *shards, "--out", str(tmp_path / "merged.json")]) == 0
    assert (tmp_path / "merged.json").read_text() == (tmp_path / "whole.json").read_text()


def test_a_report_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    verdicts = [grade.Verdict("ann\udcff", "02-06", 1, 2, "failed", "lone \ud800 surrogate", 0.1)]
    out = tmp_path / "report.csv"
    out.write_text("the report of last week\n")
    out.chmod(0o640)

    def broken_render(*args):
        raise RuntimeError("disk full, say")

    monkeypatch.setattr(report, "render", broken_render)
    with pytest.raises(RuntimeError):
        report.write(report.Report(verdicts), out)
    assert out.read_text() == "the report of last week\n", "a failed write leaves the old report"
    monkeypatch.undo()
    report.write(report.Report(verdicts), out)
    assert "ann\\xff" in out.read_text() and oct(out.stat().st_mode)[-3:] == "640"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.csv"], "no temporary file is left"


def test_merging_refuses_a_row_that_would_stand_in_for_another(tmp_path):
    rows = [grade.Verdict("ann", "02-06", 1, 2, "failed", "", 0.1)]
    one = report.Report(rows, [], {"labs": "02-06", "shard": "1/2"})
    two = report.Report([grade.Verdict("ann", "02-06", 2, 2, "ok", "", 0.1)], [], {"labs": "02-06", "shard": "2/2"})
    with pytest.raises(report.ReportError, match="more than one row"):
        report.merge([one, two])


def test_run_folders_are_private_and_the_report_survives_a_failed_clean_up(tmp_path, monkeypatch):
    lab = _lab()
    for student in ("alice", "bob"):
        (tmp_path / "class" / student / lab.folder).mkdir(parents=True)
        (tmp_path / "class" / student / lab.folder / "starter.py").write_text("X = 1\n")
    seen = []

    def fake_grade_one(student, lab, work_file, limits, resources, sandbox, hide=(), cgroups=None):
        seen.append(work_file)
        return grade.Verdict(student, lab.id, 1, 1, "ok", "", 0.0)

    def broken_rmtree(path, *args, **kwargs):
        raise PermissionError(f"cannot remove {path}")

    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    monkeypatch.setattr(grade.shutil, "rmtree", broken_rmtree)
    out = tmp_path / "report.json"
    result = grade.grade(tmp_path / "class", [lab], jobs=1, out=out)
    verdicts, warnings = result.verdicts, result.warnings
    assert [v.status for v in verdicts] == ["ok", "ok"]
    assert json.loads(out.read_text())["results"][1]["student"] == "bob", "written before the clean-up"
    assert len(warnings) == 1 and "could not remove" in warnings[0]
    run_dirs = [p.parents[1] for p in seen]
    assert len(set(run_dirs)) == 2 and all(oct(p.stat().st_mode)[-3:] == "700" for p in run_dirs), \
        "each run gets its own mkdtemp folder (unpredictable name, mode 0700)"
    monkeypatch.undo()
    for p in seen:  # what the broken clean-up left behind
        shutil.rmtree(p.parents[2], ignore_errors=True)


ADD_KEY = {"x86_64": 248, "aarch64": 217}  # the add_key system call, to put a key where a login would
KEY_SEARCH = """
import ctypes, errno, sys
keyctl, libc = ctypes.c_long(int(sys.argv[1])), ctypes.CDLL(None, use_errno=True)
found = libc.syscall(keyctl, ctypes.c_long(10), ctypes.c_long(-3), b"user", sys.argv[2].encode(), ctypes.c_long(0))
if found < 0:  # KEYCTL_SEARCH of the session keyring (-3) found nothing: why
    print(errno.errorcode[ctypes.get_errno()])
else:  # KEYCTL_READ
    buffer = ctypes.create_string_buffer(4096)
    size = libc.syscall(keyctl, ctypes.c_long(11), ctypes.c_long(found), buffer, ctypes.c_long(4096))
    print(buffer.raw[:size].decode())
"""


@needs_bwrap
@pytest.mark.skipif(sandbox.KEYCTL.get(os.uname().machine) is None or os.uname().machine not in ADD_KEY,
                    reason="the keyctl system calls' numbers on this machine")
def test_no_sandbox_possesses_the_graders_session_keyring(tmp_path, monkeypatch):
    """A key in a session keyring (a login's Kerberos ticket, an ecryptfs or fscrypt key, a token kept with
    keyctl) can be read by any process that possesses that keyring, whatever its user: every process the
    grader starts inherits it, bubblewrap makes no keyring of its own, and a student's code in a sandbox read
    the grader's key (then free to write it into the messages the report shows). The grader leaves its
    session keyring for a new, empty one before it starts anything."""
    import ctypes

    libc, name = ctypes.CDLL(None, use_errno=True), f"labs-test-{os.getpid()}"
    added = libc.syscall(ctypes.c_long(ADD_KEY[os.uname().machine]), b"user", name.encode(), b"the instructor's secret",
                         ctypes.c_size_t(23), ctypes.c_long(-3))  # into this process's session keyring
    if added < 0:
        pytest.skip(f"add_key: {os.strerror(ctypes.get_errno())}")
    lab = _lab()
    (tmp_path / "class" / "ann" / lab.folder).mkdir(parents=True)
    (tmp_path / "class" / "ann" / lab.folder / "starter.py").write_text("X = 1\n")
    (tmp_path / "search.py").write_text(KEY_SEARCH)
    found = []

    def fake_grade_one(student, lab, work_file, limits, resources, sandbox_, hide=(), cgroups=None):
        with sandbox.Sandbox(work_file.parent) as box:  # what a worker of the student's would find
            code, out, err, _ = box.run(["script", box.add_script(tmp_path / "search.py"),
                                         str(sandbox.KEYCTL[os.uname().machine]), name], timeout=60)
        found.append(out.decode().strip() or err.decode()[-2000:])
        return grade.Verdict(student, lab.id, 1, 1, "ok", "", 0.0)

    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    grade.grade(tmp_path / "class", [lab], jobs=1)
    assert found == ["ENOKEY"], found


def test_the_fingerprint_sees_new_files(tmp_path, monkeypatch):
    lab = _lab()
    before = grade.fingerprint([lab])
    assert str(registry.ROOT / "pyproject.toml") in before and str(lab.path / "test_lab.py") in before
    assert not any(k.endswith("solution.py") for k in before)
    probe = registry.ROOT / "labkit" / "__pycache__" / "fingerprint-probe.pyc"
    probe.parent.mkdir(exist_ok=True)
    probe.write_bytes(b"new")
    try:
        after = grade.fingerprint([lab])
    finally:
        probe.unlink()
    assert set(after) - set(before) == {str(probe)}


def test_bad_input_is_a_grade_error(tmp_path):
    with pytest.raises(grade.GradeError, match="no such folder"):
        grade.students(tmp_path / "nope")
    with pytest.raises(grade.GradeError, match="no student folders"):
        grade.students(tmp_path)
    with pytest.raises(report.ReportError, match=r"\.csv, \.json, \.md"):
        report.check_path(Path("report.xlsx"))


def test_reports_in_three_formats():
    verdicts = [grade.Verdict("alice", "02-06", 33, 33, "ok", "", 1.0),
                grade.Verdict("bob", "02-06", 12, 33, "failed", "test_x: AssertionError: a | b", 2.0)]
    rows = list(csv.DictReader(io.StringIO(report.render(report.Report(verdicts), ".csv"))))
    assert rows[1]["status"] == "failed" and rows[1]["passed"] == "12" and rows[1]["first_failure"].endswith("a | b")
    data = json.loads(report.render(report.Report(verdicts, ["a warning"]), ".json"))
    assert data["results"][0]["student"] == "alice" and data["warnings"] == ["a warning"]
    md = report.render(report.Report(verdicts), ".md")
    assert "| bob | 02\\-06 | 12 | 33 | failed | test\\_x\\: AssertionError\\: a \\| b | 2.0 |" in md


HOSTILE_TEXT = "=HYPERLINK(\"http://evil\") <script>alert(1)</script> **bold** [x](y) |\x1b[2J\x07\nnext"


def test_a_students_text_is_shown_as_data_in_every_report():
    verdicts = [grade.Verdict("<b>eve</b>\x1b[31m", "02-06", 0, 3, "failed", HOSTILE_TEXT, 1.0)]
    for suffix in (".csv", ".json", ".md"):
        text = report.render(report.Report(verdicts, [HOSTILE_TEXT]), suffix)
        assert "\x1b" not in text and "\x07" not in text, suffix
    csv_text = report.render(report.Report(verdicts, [HOSTILE_TEXT]), ".csv")
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert rows[0]["first_failure"].startswith("'=HYPERLINK"), "a spreadsheet formula is defused"
    assert "<script>" not in csv_text and "&lt;script&gt;" in csv_text and "&lt;b&gt;eve" in csv_text
    md = report.render(report.Report(verdicts, [HOSTILE_TEXT]), ".md")
    assert "<script>" not in md and "<b>" not in md and "**bold**" not in md and "[x](y)" not in md
    assert md.count("\n|") == 2, "one header, one separator... and one row: the pipe and newline did not break it"


# --------------------------------------------------------------------------- the example class (slow)

EXPECTED = {
    # (student, lab): (status, passed is "all", "none" or "some")
    ("alice", "02-06"): ("ok", "all"),
    ("alice", "04-04"): ("ok", "all"),
    ("alice", "02-04"): ("ok", "all"),
    ("bob", "02-06"): ("failed", "some"),
    ("bob", "04-04"): ("failed", "none"),
    ("carol", "02-06"): ("syntax error", "none"),
    ("carol", "04-04"): ("ok", "all"),
    ("dave", "02-06"): ("timeout", "some"),
    ("dave", "04-04"): ("timeout", "none"),
    ("erin", "02-06"): ("crashed", "some"),
    ("erin", "04-04"): ("crashed", "none"),
    ("frank", "02-06"): ("failed", "none"),
    ("grace", "02-06"): ("ok", "all"),
}
# Each limit is reached by one student, so each costs the test its length: dave's hang costs a call's
# limit at each of the 4 tests of 02-06 that hand in an empty block table (when it hung on every empty
# sequence, 16 of them, that was most of the test's 110 s), his import loop the import limit. They are
# a few times what an honest student needs on a busy 2-core machine: 02-04's slowest call (a kernel
# through Triton's interpreter, offsets past 2**31) takes 2 s, an import of torch and Triton a few, the
# slowest lab (02-04's 152 tests) some 20 s under the grader.
LIMITS = grade.Limits(call=5.0, lab=120.0, imports=20.0)


def test_the_example_class_is_graded_right_within_the_time_limits(tmp_path):
    labs = [registry.get(i) for i in ("02-06", "04-04", "02-04")]
    missing = [lab.id for lab in labs if not (lab.path / "test_lab.py").is_file()]
    assert not missing, f"labs {missing} are not written yet"
    klass = make_class.write(tmp_path / "class")
    before = _tree(klass)
    start = time.monotonic()
    result = grade.grade(klass, labs, LIMITS, jobs=2)
    verdicts, warnings = result.verdicts, result.warnings
    elapsed = time.monotonic() - start

    got = {(v.student, v.lab): v for v in verdicts}
    for key, verdict in got.items():
        status, passed = EXPECTED.get(key, ("missing", "none"))
        assert verdict.status == status, f"{key}: {verdict}"
        assert verdict.total > 0, f"{key}: the lab's test count is unknown: {verdict}"
        expected_passed = {"all": verdict.total, "none": 0}.get(passed)
        if expected_passed is None:
            assert 0 < verdict.passed < verdict.total, f"{key}: {verdict}"
        else:
            assert verdict.passed == expected_passed, f"{key}: {verdict}"
    assert "SubmissionTimeout" in got["dave", "02-06"].first_failure
    assert "ModuleNotFoundError" in got["erin", "04-04"].first_failure
    assert warnings == []
    ran = [v for v in verdicts if v.status not in ("missing", "syntax error")]
    assert elapsed < LIMITS.lab * len(ran), f"{elapsed:.0f} s for {len(ran)} runs"
    # frank's files (a conftest.py, a results file) could land in his sandbox's /tmp only.
    assert _tree(klass) == before
    assert not (Path.cwd() / "results.jsonl").exists()


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")
            if p.is_file() and ".ruff_cache" not in p.parts and "__pycache__" not in p.parts}


def test_labs_grade_writes_the_report(tmp_path):
    make_class.write(tmp_path / "class", ["alice", "carol", "frank"])
    out = tmp_path / "report.csv"
    run = subprocess.run([sys.executable, "-m", "labkit.cli", "grade", str(tmp_path / "class"), "--labs", "02-06",
                          "--call-timeout", "5", "--lab-timeout", "60", "--out", str(out)],
                         capture_output=True, text=True, cwd=registry.ROOT, timeout=600)
    assert run.returncode == 0, run.stderr
    rows = {r["student"]: r for r in csv.DictReader(out.open())}
    assert rows["alice"]["status"] == "ok" and rows["alice"]["passed"] == rows["alice"]["total"]
    assert rows["frank"]["status"] == "failed" and rows["frank"]["passed"] == "0"
    assert rows["carol"]["status"] == "syntax error" and rows["carol"]["total"] == rows["alice"]["total"]


CONTIGUITY_BUGS = {  # lab -> (a gallery bug that is right only on contiguous arrays, the layout test that catches it)
    "02-04": ("offsets_as_if_contiguous", "test_cache_layouts_engines_pass"),
    "02-06": ("write_kv_through_a_flat_reshape", "test_write_and_attend_on_every_cache_layout"),
}


def test_a_kernel_that_assumes_contiguity_fails_the_layout_tests_under_labs_grade(references_and_bugs):
    """Lab 02-04's layout tests hand the kernel K and V as views of one fused pool (torch), lab 02-06's
    hand write_kv such views (numpy). Graded in the class of :func:`references_and_bugs`, the gallery's
    bugs that are right only on contiguous arrays (offsets from the shape, not the strides; writes
    through a reshape, which of a view is a copy) fail them, as they do under plain pytest, and the
    reference solutions pass every test: the views reach the worker as views (when arrays crossed as
    contiguous copies, both bugs graded ok)."""
    graded = references_and_bugs["graded"]
    for lab_id, (bug_name, layout_test) in CONTIGUITY_BUGS.items():
        reference, bug = graded[REFERENCE, lab_id], graded[f"{lab_id}-{bug_name}", lab_id]
        assert reference.status == "ok", reference
        assert bug.status == "failed" and bug.passed < bug.total == reference.total, (bug_name, bug)
        assert layout_test in bug.first_failure, (bug_name, bug.first_failure)


# --------------------------------------------------------------------------- the grader agrees with pytest (slow)

SPECIAL_BUGS = {"04-01": ["two_pass_gather"],
                # hands out one list that later calls change: caught only if the test's result changes too
                "02-01": ["remove_walks_the_queue", "get_new_blocks_reuses_one_list"],
                # returns one output buffer that later calls write again: caught only if the test's result changes too
                "04-04": ["merge_in_place", "drops_remainder_keys", "merge_unlocks_acc_in_place",
                          "merge_reuses_one_output_buffer"],
                # makes a read-only argument writeable again and writes it: caught only if the write reaches the test
                # (and, right only on contiguous arrays, the second: caught only if views reach the worker as views)
                "02-06": ["query_scaled_in_place", CONTIGUITY_BUGS["02-06"][0]],
                # writes into a dict the test passed: caught only if those writes reach the test
                "02-03": ["config_filled_in_place"], "04-02": ["unmeasured_popped_from_the_matrix"],
                # right only on contiguous arrays: caught only if the test's views reach the worker as views
                "02-04": [CONTIGUITY_BUGS["02-04"][0]],
                # an output that torch.empty_like leaves unzeroed: caught only if the test's deterministic mode
                # (NaN in fresh memory) reaches the worker
                "04-03": ["new_out_not_zeroed"]}


def _standalone(lab, bug) -> str | None:
    """The bug as a student would hand it in: the solution with the broken function(s) after it, or,
    for a bug written as an edit (EDIT/EDITS), the solution with the edit made. None for a bug that
    needs its lab folder (load_sibling, a helper module of bugs/, an edit of another file)."""
    from labkit.course import bugs as gallery

    if bug.edits:
        if bug.source != gallery.DEFAULT_SOURCE:
            return None
        return gallery.apply_edits((lab.path / bug.source).read_text(), bug)
    text = bug.path.read_text()
    if "load_sibling" in text or re.search(r"^from _\w+ import", text, re.M):
        return None
    text = re.sub(r"^from __future__ import annotations\n", "", text, flags=re.M)
    return (lab.path / "solution.py").read_text() + "\n\n# the classic mistake\n" + text


# Labs whose gallery's first bug is graded by default as well: one whose arrays cross and are written
# in place (02-06), one whose engine stays in the worker behind handles (99-01). With
# LABS_AGREEMENT=all, every lab's first bug is (CONTRIBUTING.md, "Continuous integration").
FIRST_BUG_LABS = ("02-06", "99-01")


def _agreement_cases():
    """The bugs graded beside the references: the special ones, and the first bug of FIRST_BUG_LABS
    (of every lab under LABS_AGREEMENT=all). How the grader counts a failed test does not depend on
    the lab; what crosses between test and submission does, and the special bugs are those that a
    wrong crossing would hide. Every lab's reference is graded too, by
    test_every_labs_reference_solution_grades_ok_with_pytests_count."""
    from labkit.course import bugs as gallery

    every_lab = os.environ.get("LABS_AGREEMENT", "").strip().lower() == "all"
    cases = []
    for lab in registry.LABS:
        if not (lab.path / "test_lab.py").is_file():
            continue
        bugs = [b for b in gallery.bugs_of(lab.path) if _standalone(lab, b) is not None]
        first = bugs[:1] if every_lab or lab.id in FIRST_BUG_LABS else []
        chosen = first + [b for b in bugs if b.name in SPECIAL_BUGS.get(lab.id, ()) and b not in first]
        cases += [(lab, bug) for bug in chosen]
    return cases


REFERENCE = "reference"  # the student whose files are the reference solutions (a bug's student is "<lab>-<bug>")


@pytest.fixture(scope="module")
def references_and_bugs(tmp_path_factory, request):
    """One class, graded once as an instructor would: every lab's ``solution.py`` handed in by the
    student "reference", and bugs from the galleries (:func:`_agreement_cases`), each by a student of
    its own; beside it, pytest's own counts of the same files. One grading, not one for the
    references and one for the bugs: a lab's wave then holds its reference and its bugs together, so
    that they share the cores (under ``LABS_AGREEMENT=all``, 99-02's reference and bug, one and a half
    to two minutes each under the grader; by default its wave holds its reference alone).

    {"graded": {(student, lab id): Verdict}, "counted": {(student, lab id): LabRun}, "labs", "cases",
    "warnings"}."""
    from labkit.course import warm
    from labkit.course.runner import clean_env, run_lab_tests

    labs = [lab for lab in registry.LABS if (lab.path / "test_lab.py").is_file()]
    cases = _agreement_cases()
    assert cases
    klass = tmp_path_factory.mktemp("agreement") / "class"
    for lab in labs:
        folder = klass / REFERENCE / lab.folder
        folder.mkdir(parents=True)
        shutil.copy(lab.path / "solution.py", folder / "starter.py")
    for lab, bug in cases:
        folder = klass / f"{lab.id}-{bug.name}" / lab.folder
        folder.mkdir(parents=True)
        (folder / "starter.py").write_text(_standalone(lab, bug))
        for helper in lab.path.glob("_*.py"):  # the lab's given modules (99-01's _runner.py), as a student has them
            shutil.copy(helper, folder / helper.name)
    # pytest's counts. Tests marked ungraded (the course's given code, a subclass of the learner's class) are
    # left out by the grader for everyone: the count to agree with is pytest's without them. A reference's
    # count is the one this checkout's plain `pytest` kept, while nothing it depends on has changed
    # (labkit/course/suite_record.py; CI runs the README's `pytest` first), less the ungraded tests. The
    # others run one at a time, each forked from an interpreter that imported pytest, numpy and torch once
    # where the system can, while the class is graded, on a core the grader's waves leave idle at times
    # (99-02's wave holds one student, whose worker and test take turns). Two at a time, they took half
    # the cores from the grader's first waves.
    # The grader's limits are ones no lab reaches: these tests compare counts, not speed. The slowest lab,
    # 99-02, takes one and a half to two minutes under the grader on an idle 2-core machine (its
    # reference and add_request_returns_nothing alike; 7.5 minutes when the worker compared every watched
    # object after each request, 2.5 when a read after a call waited for a comparison of its own, or when
    # its tests read the stream's whole log at every step), and longer beside other work.
    cache = getattr(request.config, "cache", None)
    counted = {(REFERENCE, lab.id): suite_record.recorded(cache, lab, graded_only=True) for lab in labs}
    runs = [(REFERENCE, lab, "solution") for lab in labs if counted[REFERENCE, lab.id] is None]
    runs += [(f"{lab.id}-{bug.name}", lab, f"bugs/{bug.name}") for lab, bug in cases]
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(warm.WarmPool(1, registry.ROOT, clean_env(None))) if warm.available() else None
        threads = stack.enter_context(concurrent.futures.ThreadPoolExecutor(1))
        plain = threads.map(lambda run: run_lab_tests(run[1].path, impl=run[2], warm=pool, timeout=1800,
                                                      pytest_args=("-m", "not ungraded")), runs)
        result = grade.grade(klass, labs, grade.Limits(call=120, lab=1800, imports=300), jobs=2)
        counted |= {(student, lab.id): run for (student, lab, _), run in zip(runs, plain, strict=True)}
    graded = {(v.student, v.lab): v for v in result.verdicts if v.status != "missing"}
    return {"graded": graded, "counted": counted, "labs": labs, "cases": cases, "warnings": result.warnings}


def test_the_grader_agrees_with_pytest_on_the_bug_galleries(references_and_bugs):
    """Bugs from the galleries (:func:`_agreement_cases`), handed in as students' files: the grader's
    count of passed tests is pytest's count under LAB_IMPL=bugs/<name>."""
    graded, counted = references_and_bugs["graded"], references_and_bugs["counted"]
    wrong = []
    for lab, bug in references_and_bugs["cases"]:
        verdict, run = graded[f"{lab.id}-{bug.name}", lab.id], counted[f"{lab.id}-{bug.name}", lab.id]
        # A bug caught only by GPU tests passes everything on a CPU: then "ok" is the agreement.
        status = "failed" if run.passed < run.total else "ok"
        if (verdict.passed, verdict.total) != (run.passed, run.total) or verdict.status != status:
            wrong.append(f"{lab.id} {bug.name}: pytest {run.passed}/{run.total}, grader {verdict}")
    assert not wrong, "\n".join(wrong)


def test_every_labs_reference_solution_grades_ok_with_pytests_count(references_and_bugs):
    """Each lab's ``solution.py``, handed in alone as a student's ``starter.py``, grades ``ok``: every
    test that pytest runs on it on this machine, and only those, passed under the grader."""
    graded, counted, labs = (references_and_bugs[k] for k in ("graded", "counted", "labs"))
    wrong = []
    for lab in labs:
        verdict, plain = graded[REFERENCE, lab.id], counted[REFERENCE, lab.id]
        assert plain.all_passed, f"pytest on {lab.id}'s reference: {plain.first_problem()}"
        if (verdict.status, verdict.passed, verdict.total) != ("ok", plain.passed, plain.passed):
            wrong.append(f"{lab.id}: pytest passes {plain.passed}, the grader gives {verdict}")
    assert not wrong, "\n".join(wrong)
    assert references_and_bugs["warnings"] == []


# --------------------------------------------------------------------------- objects that stay in the worker

CLASSES = """
import random


class Block:
    def __init__(self, block_id):
        self.block_id, self.next = block_id, None

    def bump(self, by=1):
        self.block_id += by
        return self


class Chain:
    def __init__(self, blocks):
        self.blocks = list(blocks)
        for a, b in zip(self.blocks, self.blocks[1:]):
            a.next = b
        self.head = self.blocks[0] if self.blocks else None

    def __len__(self):
        return len(self.blocks)

    def __iter__(self):
        return iter(self.blocks)

    def ids(self):
        return [b.block_id for b in self.blocks]


class Engine:
    '''A capstone-like engine: built from a config dict and a seed, stepped by method calls.'''

    def __init__(self, config, seed=0):
        self.vocab, self.rng = config["vocab"], random.Random(seed)

    def step(self, n):
        return [self.rng.randrange(self.vocab) for _ in range(n)]


def crash():
    import os
    os._exit(1)
"""
CLASSES_API = {"Block": "callable", "Chain": "callable", "Engine": "callable", "crash": "callable"}


class _TestsBlock:
    """A test's own duck-typed block, lent to the submission: it counts reads of ``next`` here."""

    def __init__(self, block_id, counts):
        self._counts, self.block_id, self.next = counts, block_id, None

    def __getattribute__(self, name):
        if name == "next":
            object.__getattribute__(self, "_counts")["next"] += 1
        return object.__getattribute__(self, name)


class _Linked:
    """A submission's object that no snapshot holds a copy of (no ``__dict__``, no public slot), in a
    cycle: it dies only when the garbage collector runs, which it may do at any allocation of the worker's."""

    __slots__ = ("_me", "__weakref__")


def test_objects_that_die_while_the_worker_compares_snapshots_are_forgotten_in_order():
    """The garbage collector running inside the worker's own bookkeeping (here made to run in the
    middle of its walk over the watched objects' numbers) frees objects of that walk: each death is
    noted, and the grader told of it once, never a "dictionary changed size" error reported as the
    call's (lab 02-01's gallery bug that walks the free queue on every removal met it under labs grade)."""
    from labkit.grader.handles import ObjectTable
    from labkit.grader.snapshots import Snapshots

    table = ObjectTable()
    snapshots = Snapshots(table, lambda obj: None)
    table.on_death = snapshots.died
    gone, threshold = [], gc.get_threshold()
    gc.collect()
    gc.disable()  # from here the objects are young, and the collector's count of new objects is known
    try:
        # More than the 2,000 pairs CPython keeps for reuse: walking their numbers allocates new ones,
        # which the collector counts. Named 200 a reply (under PREFETCH), as a test's calls would.
        objects = [_Linked() for _ in range(3000)]
        numbers = []
        for start in range(0, len(objects), 200):
            for obj in objects[start : start + 200]:
                obj._me = obj  # a cycle: only the garbage collector frees it
                numbers.append(snapshots.reference(obj, hold=False)[1])
            snapshots.updates(list(snapshots.sent))
        assert sorted(snapshots.sent) == sorted(numbers)
        del objects, obj  # not freed yet
        # The next collection comes 20 allocations in: inside the walk over the objects' numbers.
        gc.set_threshold(gc.get_count()[0] + 20)
        gc.enable()
        gone += snapshots.updates(list(snapshots.sent))[2]
    finally:
        gc.set_threshold(*threshold)
        gc.enable()
    gc.collect()
    gone += snapshots.updates(list(snapshots.sent))[2]
    assert sorted(gone) == sorted(numbers) and not snapshots.sent, "each dead object is reported gone, once"


class _Watched:
    """A submission's plain object, for the worker's snapshots alone."""

    def __init__(self, size):
        self.size = size


def test_a_class_changed_while_an_object_was_not_compared_is_seen_when_it_is():
    """The worker compares only the objects the grader is about to read. A property set on a class
    while one of its objects was not among them must still stop that object's quick check (the same
    field objects as last time) when it is compared later: its field is no longer what a read gives."""
    from labkit.grader.handles import ObjectTable
    from labkit.grader.snapshots import Snapshots

    cls = type("Block", (_Watched,), {})
    table = ObjectTable()
    snapshots = Snapshots(table, lambda obj: None)
    a, b = cls(1), cls(2)
    na, nb = snapshots.reference(a, hold=True)[1], snapshots.reference(b, hold=True)[1]
    snapshots.updates()
    assert sorted(snapshots.sent) == sorted([na, nb])
    assert snapshots.updates([na, nb])[1] == [], "nothing changed: nothing is sent"
    cls.size = property(lambda self: 99)  # reads of .size no longer give the __dict__ entry
    assert [n for n, _ in snapshots.updates([na])[1]] == [na]  # a is compared, b is not
    changed = snapshots.updates([nb])[1]
    assert [n for n, _ in changed] == [nb] and all(name != "size" for name, _ in changed[0][1]), changed



class _Sized:
    """A descriptor of the student's that only reads (no ``__set__``): a field of the same name wins."""

    def __get__(self, obj, owner=None):
        return 99


def test_a_classs_layout_is_looked_up_again_only_when_what_it_reads_changed(monkeypatch):
    """The worker looks up each class's data descriptors after every call that ran the student's code,
    but in full only where a class's namespaces, its MRO or the classes of its attributes changed
    (looking up all of them took 99-02's worker 40% of its time). Each change that makes a field read
    differently is still seen: a descriptor class of the student's that gains a ``__set__``, a
    descriptor given such a class, new bases that bring a property, a name bound to a property, a
    slot's name bound to another class's member."""
    from labkit.grader import snapshots as snapshots_module
    from labkit.grader.handles import ObjectTable
    from labkit.grader.snapshots import Snapshots

    lookups = []
    layout = snapshots_module._layout
    monkeypatch.setattr(snapshots_module, "_layout", lambda cls: lookups.append(cls) or layout(cls))
    descriptor = type("Sized", (_Sized,), {})
    cls = type("Block", (_Watched,), {"size": descriptor()})
    snapshots = Snapshots(ObjectTable(), lambda obj: None)
    block = cls(1)
    n = snapshots.reference(block, hold=True)[1]
    assert snapshots.updates()[1] == [(n, [("size", ("v", 1))])], "the field wins over a reading descriptor"
    lookups.clear()
    assert snapshots.updates([n])[1] == [] and lookups == [], "nothing changed: no class is looked up again"
    descriptor.__set__ = lambda self, obj, value: None  # now a data descriptor: reads of .size give 99
    assert snapshots.updates([n])[1] == [(n, [])] and lookups == [cls], "a descriptor that gains __set__"
    del descriptor.__set__
    assert snapshots.updates([n])[1] == [(n, [("size", ("v", 1))])]
    vars(cls)["size"].__class__ = type("Setting", (_Sized,), {"__set__": lambda self, obj, value: None})
    assert snapshots.updates([n])[1] == [(n, [])], "a descriptor whose class becomes a data descriptor's"
    vars(cls)["size"].__class__ = descriptor
    assert snapshots.updates([n])[1] == [(n, [("size", ("v", 1))])]
    del cls.size
    assert snapshots.updates([n])[1] == []
    cls.__bases__ = (type("Base", (_Watched,), {"size": property(lambda self: 99)}),)  # its property answers
    assert snapshots.updates([n])[1] == [(n, [])], "new bases that bring a property"
    cls.__bases__ = (_Watched,)
    assert snapshots.updates([n])[1] == [(n, [("size", ("v", 1))])]
    cls.size = property(lambda self: 99)
    assert snapshots.updates([n])[1] == [(n, [])], "a name bound to a property"
    # A name bound again to another object of the same class: a slot's own member, then another class's.
    slotted = type("Block", (_SlottedBlock,), {"__slots__": ()})
    block = slotted()
    block.block_id = 3
    m = snapshots.reference(block, hold=True)[1]
    assert snapshots.updates()[1] == [(m, [("block_id", ("v", 3))])]
    slotted.block_id = vars(_SlottedBlock)["block_id"]  # still read as the slot
    assert snapshots.updates([m])[1] == []
    slotted.block_id = vars(type("Other", (), {"__slots__": ("block_id",)}))["block_id"]
    assert snapshots.updates([m])[1] == [(m, [])], "a member of another class is asked for"
    # A class is checked when it is used after the student's code may have run, compared or not: what a
    # read of a field runs is decided from a checked layout (the worker calls code_ran at each request).
    quiet = type("Block", (_Watched,), {})
    snapshots.reference(quiet(2), hold=True)
    snapshots.updates()
    assert "size" not in snapshots.shadowed(quiet)
    quiet.size = property(lambda self: 99)
    snapshots.code_ran()
    assert "size" in snapshots.shadowed(quiet), "a class not compared since it changed"


class _SlottedBlock:
    """A submission's object written with ``__slots__``: no ``__dict__`` to copy."""

    __slots__ = ("block_id", "ref_cnt", "_prev", "__weakref__")


def test_a_slotted_objects_fields_are_in_its_snapshot_and_kept_current():
    """An engine written with ``__slots__`` everywhere had no snapshots (no ``__dict__``), so every
    field read was a request: lab 02-01's reference with slots graded five times slower than without.
    A slot is read through the member descriptor ``__slots__`` made, which runs no code: its value
    is in the snapshot; unset, it is left out (a read asks, and raises as in one process); shadowed
    later by a property, it leaves the snapshot; a member descriptor of an unrelated class set on the
    class is never read through (it would raise) but asked for, like a property."""
    from labkit.grader.handles import ObjectTable
    from labkit.grader.snapshots import Snapshots

    unrelated = type("Other", (), {"__slots__": ("x",)})
    cls = type("Block", (_SlottedBlock,), {"__slots__": (), "stolen": vars(unrelated)["x"]})
    table = ObjectTable()
    snapshots = Snapshots(table, lambda obj: None)
    block = cls()
    block.block_id, block._prev = 3, None  # ref_cnt unset; _prev private
    n = snapshots.reference(block, hold=True)[1]
    types, snaps, _ = snapshots.updates()
    assert types[0][3] == ["stolen"], "slots are fields; only what a slot of another class answers is asked for"
    assert snaps == [(n, [("block_id", ("v", 3))])], snaps
    assert snapshots.updates([n])[1] == [], "nothing changed: nothing is sent"
    block.ref_cnt = 1
    assert snapshots.updates([n])[1] == [(n, [("block_id", ("v", 3)), ("ref_cnt", ("v", 1))])]
    del block.ref_cnt
    assert snapshots.updates([n])[1] == [(n, [("block_id", ("v", 3))])], "an unset slot leaves the snapshot"
    cls.block_id = property(lambda self: 99)  # reads of .block_id no longer give the slot
    assert snapshots.updates([n])[1] == [(n, [])], "a slot a property shadows leaves the snapshot"

@needs_bwrap
def test_objects_stay_in_the_worker_behind_handles(submission):
    sub = submission(CLASSES, CLASSES_API, call_timeout=5)
    blocks = [sub.Block(i) for i in range(3)]
    chain = sub.Chain(blocks)
    assert chain.head is blocks[0] and chain.head.next is blocks[1], "one handle per worker object"
    assert isinstance(blocks[0], sub.Block) and not isinstance(blocks[0], sub.Chain)
    assert len(chain) == 3 and [b.block_id for b in chain] == [0, 1, 2] and chain.ids() == [0, 1, 2]
    assert blocks[1].bump(by=5) is blocks[1] and chain.ids() == [0, 6, 2], "a call's effect is seen at once"
    blocks[2].block_id = 9
    assert chain.blocks[2].block_id == 9 and chain.ids() == [0, 6, 9]
    assert blocks[0] != 0 and blocks[0] == blocks[0], "a handle equals only handles, never data"
    with pytest.raises(AttributeError):
        blocks[0].__dict__  # noqa: B018
    with pytest.raises(TypeError, match="cannot be subclassed"):
        type("Mine", (sub.Block,), {})
    # The capstone's pattern: an engine built in the worker from a config dict, stepped by method calls.
    engine = sub.Engine({"vocab": 50}, seed=3)
    tokens = engine.step(4) + engine.step(2)
    assert len(tokens) == 6 and all(type(t) is int and 0 <= t < 50 for t in tokens)
    assert sub.Engine({"vocab": 50}, seed=3).step(6) == tokens, "the same seed gives the same tokens"


@needs_bwrap
def test_copies_read_recently_are_compared_in_a_calls_reply_and_others_in_one_sync(submission, monkeypatch):
    """Comparing every watched object after each call cost a walk of up to 4,096 objects a call (most
    of the grading time of lab 99-02's tests, which step an engine thousands of times), and a round trip
    before each read after a call cost as much again. Each request names the copies the test read in the
    last ``RECENT`` calls, and the worker compares them in the reply of a call that ran the student's
    code: reads after a call of what was read after the last one need no comparison of their own. After
    more calls than that with no read, one comparison covers every copy read before. Every read is current."""
    from labkit.grader import snapshots

    syncs = []
    real_sync = standin.Submission._sync
    monkeypatch.setattr(standin.Submission, "_sync", lambda self, n: (syncs.append(n), real_sync(self, n))[-1])
    sub = submission(CLASSES, CLASSES_API, call_timeout=5)
    blocks = [sub.Block(i) for i in range(3)]
    chain = sub.Chain(blocks)
    assert [b.block_id for b in chain.blocks] == [0, 1, 2] and chain.head is blocks[0]
    syncs.clear()
    for step in range(1, 51):
        blocks[1].bump()
        assert [b.block_id for b in chain.blocks] == [0, 1 + step, 2], "a read after a call is current"
        assert chain.head.next.block_id == 1 + step
    assert syncs == [], f"{len(syncs)} comparisons asked for; the reads after each call were compared in its reply"
    for _ in range(snapshots.RECENT + 10):
        blocks[1].bump()
    assert syncs == [], "calls alone ask for no comparison"
    assert chain.head.next.block_id == 51 + snapshots.RECENT + 10
    assert [b.block_id for b in chain.blocks] == [0, 51 + snapshots.RECENT + 10, 2]
    assert len(syncs) == 1, "one comparison, of every copy read before, for the reads after many calls"
    blocks[2].block_id = 7  # a write is the submission's to run (its class may define __setattr__)
    assert blocks[2].block_id == 7 and chain.blocks[2].block_id == 7 and len(syncs) == 1
    blocks[0].bump(by=3)  # a method call looks the method up in the worker
    assert chain.ids() == [3, 51 + snapshots.RECENT + 10, 7] and chain.head.block_id == 3 and len(syncs) == 1


STATUSES = """
import enum


class Status(enum.Enum):
    WAITING = 1
    RUNNING = 2


class Lying(enum.Enum):
    A = 1

    @property
    def name(self):
        return "renamed"


class Request:
    def __init__(self, prompt):
        self.prompt, self.output, self.status = list(prompt), [], Status.WAITING

    @property
    def all_token_ids(self):
        return self.prompt + self.output

    def run(self):
        self.status = Status.RUNNING
        self.output.append(len(self.output))
"""
STATUSES_API = {"Status": "callable", "Request": "callable", "Lying": "callable"}


@needs_bwrap
def test_an_enums_name_and_value_are_read_from_copies_and_a_property_is_one_request(submission, monkeypatch):
    """``request.status.name`` is read at every step of an engine: an Enum member's ``name`` and
    ``value`` (the enum module's own properties, which return its ``_name_`` and ``_value_``) are held in
    its copy, and a property of the student's (``all_token_ids``) is asked for, one request, with no
    comparison before it (no copy can answer it). An enum whose class defines its own ``name`` is asked."""
    ops, syncs = [], []
    real_op, real_sync = standin.Submission._op, standin.Submission._sync
    monkeypatch.setattr(standin.Submission, "_op", lambda self, op, subject, *a, **k: (
        ops.append((op, a[:1])), real_op(self, op, subject, *a, **k))[-1])
    monkeypatch.setattr(standin.Submission, "_sync", lambda self, n: (syncs.append(n), real_sync(self, n))[-1])
    sub = submission(STATUSES, STATUSES_API, call_timeout=5)
    req = sub.Request([5, 6])
    assert (req.status.name, req.status.value) == ("WAITING", 1)
    ops.clear(), syncs.clear()
    for step in range(1, 21):
        req.run()
        assert (req.status.name, req.status.value, req.output) == ("RUNNING", 2, list(range(step)))
        assert req.all_token_ids == [5, 6, *range(step)]
    assert ops.count(("getattr", ("all_token_ids",))) == 20 and syncs == [], (ops[:5], syncs)
    assert [op for op in ops if op != ("getattr", ("all_token_ids",)) and op[0] != "method"] == [], ops[:5]
    assert sub.Lying.A.name == "renamed", "a name the class computes its own way is asked for"


LIVES = """
import gc


class Graph:
    def __init__(self, fn):
        self.fn = fn


class Runner:
    '''Holds graphs whose functions refer back to it: a cycle through a field's value.'''

    def __init__(self):
        self.graphs = {size: Graph(lambda size=size: (self, size)) for size in (1, 2, 4)}


class Queue:
    def __init__(self):
        self.items = [1, 2, 3]

    def __iter__(self):
        return iter(self.items)  # a list iterator: no weak reference to it can be made

    def poke(self):
        return len(self.items)


class Slot:
    __slots__ = ("v",)  # no __weakref__: its death could not be heard of

    def __init__(self, v):
        self.v = v


class Holder:
    def __init__(self):
        self.item = Slot(5)

    def poke(self):
        return self.item.v


def alive(name):
    gc.collect()
    return sum(type(o).__name__ == name for o in gc.get_objects())
"""
LIVES_API = {"Runner": "callable", "Queue": "callable", "Holder": "callable", "alive": "callable"}


@needs_bwrap
def test_objects_a_test_lets_go_of_die_in_the_worker(submission):
    """Objects nothing in the worker holds any more die there, as in one process, or their snapshots
    fill the worker's watch list and every later read becomes a request (lab 99-02's tests went from
    one request a step to dozens): an iterator the test made and dropped (no weak reference to it can
    be made: it is let go with its handle), and objects whose fields refer back to them (the worker's
    record of a snapshot's field values, which holds them, is dropped once unused for a while)."""
    from labkit.grader import snapshots

    sub = submission(LIVES, LIVES_API, call_timeout=5)
    queue = sub.Queue()
    for _ in range(20):
        assert list(iter(queue)) == [1, 2, 3]
    for _ in range(20):
        runner = sub.Runner()
        assert sorted(runner.graphs) == [1, 2, 4] and runner.graphs[2].fn() == (runner, 2)
    del runner
    gc.collect()  # the handles in the test's own cycles, if any
    for _ in range(2 * snapshots.RAW_KEEP):  # the record is dropped within twice that many replies
        queue.poke()
    assert sub.alive("list_iterator") == 0
    assert sub.alive("Runner") == 0 and sub.alive("Graph") == 0
    holder = sub.Holder()
    item = holder.item  # a handle to an object a snapshot names: dropping the handle must not free it
    del item
    gc.collect()
    assert holder.poke() == 5 and holder.item.v == 5, "an object a copy names stays in the worker"


@needs_bwrap
def test_a_tests_own_objects_are_lent_and_handles_die_with_their_worker(submission):
    sub = submission(CLASSES, CLASSES_API, call_timeout=5)
    counts = {"next": 0}
    mine = [_TestsBlock(i, counts) for i in range(3)]
    chain = sub.Chain(iter(mine))  # an iterator the test passes is read item by item, in the worker
    assert chain.head is mine[0] and mine[0].next is mine[1], "the worker linked the test's own objects"
    assert chain.ids() == [0, 1, 2] and counts["next"] == 1  # the test's own read; the worker's writes
    assert chain.blocks[0] is mine[0], "a lent object comes back as itself"
    old = sub.Block(1)
    with pytest.raises(standin.SubmissionCrashed):
        sub.crash()
    with pytest.raises(standin.SubmissionCrashed, match="died with it"):
        old.bump()
    assert sub.Block(2).block_id == 2, "a fresh worker"


# --------------------------------------------------------------------------- snapshots are never stale

STATEFUL = """
class Node:
    def __init__(self, x, child=None):
        self.x, self.child, self.items, self.table = x, child, [], {}

    def poke(self, other, value):
        other.x = value             # another object than the one called changes
        return None

    def half_then_fail(self):
        self.x += 1                 # changed, then an exception: the test sees the change
        raise ValueError("half done")

    def grow(self):
        self.items.append(len(self.items))   # a container changed in place
        self.table[len(self.table)] = self.child

    def kinds(self, n):
        self.x = [1, True, 0.0, -0.0, 1.0][n]   # values that == would confuse

    def tell_twice(self, watcher):
        watcher.seen(self)          # the test's code reads this object, in a callback...
        self.x += 10                # ...then this object changes...
        watcher.again()             # ...and the test reads it again, in the same call
        return self.x


def build():
    shared = Node(0)
    return Node(1, shared), Node(2, shared)
"""
STATEFUL_API = {"Node": "callable", "build": "callable"}


class _Watcher:
    """A test's object lent to the submission: records what it reads of the node it is shown."""

    def __init__(self):
        self.log, self.node = [], None

    def seen(self, node):
        self.node = node
        self.log.append(node.x)

    def again(self):
        self.log.append(self.node.x)


def _stateful_scenario(lab) -> list:
    """What a test observes of STATEFUL's objects; the same list in one process and under the grader."""
    seen = []
    a, b = lab.build()
    seen += [a.x, b.x, a.child is b.child, a.child.x]
    a.poke(b.child, 5)  # b.child is a.child: one object, two paths
    seen += [a.child.x, b.child.x]
    try:
        b.half_then_fail()
    except ValueError as err:
        seen.append(str(err))
    seen.append(b.x)
    for _ in range(3):
        a.grow()
    seen += [a.items, sorted(a.table), a.table[2] is a.child]
    for n in range(5):
        a.kinds(n)
        seen.append((type(a.x).__name__, repr(a.x)))
    a.x = 7
    watcher = _Watcher()
    seen += [a.tell_twice(watcher), watcher.log, a.x]
    child = a.child
    del a, child  # handles dropped, then the same objects reached again through another path
    gc.collect()
    seen += [b.child.x, b.child.child]
    return seen


def _import_as_module(source: str, tmp_path: Path):
    path = tmp_path / "one_process.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("one_process", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_bwrap
def test_what_a_test_reads_is_what_one_process_would_read(submission, tmp_path):
    """Snapshots are never stale: a change through another path (two handles, one object), an
    exception after a change, a container changed in place, values that == confuses (1 and True,
    0.0 and -0.0), a change between two callbacks of one call (the generation-counter design read the
    second from a snapshot taken in the first), handles dropped and found again."""
    expected = _stateful_scenario(_import_as_module(STATEFUL, tmp_path))
    got = _stateful_scenario(submission(STATEFUL, STATEFUL_API, call_timeout=5))
    assert got == expected


SHAPESHIFTER = '''
class _Lazy:
    @property
    def count(self):
        return 999

class _Locked:
    def __getattribute__(self, name):
        return 999 if name == "count" else object.__getattribute__(self, name)

class _D(dict):
    pass

class Pool:
    def __init__(self):
        self.count = 1
    def become_lazy(self):  # another class, whose property shadows the field: __dict__ unchanged
        self.__class__ = type("Pool", (Pool, _Lazy), {})
    def become_locked(self):  # another class, which reads attributes its own way
        self.__class__ = type("Pool", (_Locked, Pool), {})
    def swap_dict(self):  # a dict subclass as __dict__, with another count
        self.__dict__ = _D(count=2)

class Late:
    def __init__(self):
        self.count = 1
    def go_lazy(self):  # the class itself gains a property named like the field
        type(self).count = property(lambda s: 999)
'''


@needs_bwrap
def test_an_object_whose_class_or_dict_changes_is_read_as_one_process_would(submission, tmp_path):
    """The worker's quick check of a snapshot (the same field objects as last time) counts the class
    and the class's data descriptors too, and an object that stops being read from its ``__dict__``
    loses its copy: before, each of these kept answering ``count == 1`` from the grader's copy, where
    one process reads 999, 999, 2, 999 (a property set on the class after its object was copied)."""
    def reads(lab):
        seen = []
        for method in ("become_lazy", "become_locked", "swap_dict"):
            pool = lab.Pool()
            seen.append(pool.count)
            getattr(pool, method)()
            seen.append(pool.count)
        late = lab.Late()
        seen.append(late.count)
        late.go_lazy()
        return seen + [late.count]

    expected = reads(_import_as_module(SHAPESHIFTER, tmp_path))
    assert expected == [1, 999, 1, 999, 1, 2, 1, 999]
    assert reads(submission(SHAPESHIFTER, {"Pool": "callable", "Late": "callable"}, call_timeout=5)) == expected


# --------------------------------------------------------------------------- the grader's memory stays bounded

BOMBS_SOURCE = '''
import struct
from labkit.grader import wire

_send, _kind = wire.send, []
_NUMBER = [10**6]


def arm(kind):
    _kind.append(kind)


def ping():
    return None


def _frame(payload):
    return struct.pack("<Q", len(payload)) + payload


def _snapshots(n, text):
    snaps = []
    for _ in range(n):
        _NUMBER[0] += 1
        snaps.append((_NUMBER[0], [(f"f{i}", ("v", text)) for i in range(64)]))
    return snaps


def _bomb(fd, message):
    kind = _kind[-1] if _kind else None
    if kind == "dicts":  # the most Python objects per byte there is, up to the item limit
        n = __MAX_ITEMS__ - 10
        payload = b"l" + struct.pack("<Q", n) + (b"d" + bytes(8)) * n
    elif kind == "more dicts":  # the whole size limit of them: refused at the item limit
        n = (__MAX_REPLY__ - 9) // 9
        payload = b"l" + struct.pack("<Q", n) + (b"d" + bytes(8)) * n
    elif kind == "text":  # one string of nearly the size limit, in a well-formed reply
        payload = wire.pack(("ok", ("v", "x" * (__MAX_REPLY__ - 100)), [], ([], [], [], False)))
        _kind.clear()
    elif kind == "snapshots" and type(message) is tuple and message[:1] == ("ok",):  # copies, reply after reply
        payload = wire.pack(message[:3] + ((message[3][0], _snapshots(40, "y" * 4000), [], False),))
    elif kind == "types" and type(message) is tuple and message[:1] == ("ok",):
        _NUMBER[0] += 300
        types = [(_NUMBER[0] + i, "T" * 80, [f"m{j}" * 20 for j in range(400)], []) for i in range(300)]
        payload = wire.pack(message[:3] + ((types, [], [], False),))
    else:
        return _send(fd, message)
    view = memoryview(_frame(payload))
    while view:
        view = view[__import__("os").write(fd, view):]


wire.send = _bomb
'''

MEASURE = '''
import json, sys
from pathlib import Path
from labkit.grader import sandbox, standin

def peak():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) * 1024

folder = Path(sys.argv[1])
box = sandbox.Sandbox(folder)
sub = standin.Submission(folder / "starter.py", {"arm": "callable", "ping": "callable"}, box, call_timeout=60)
sub.ping()
before, seen = peak(), {}
for kind in ("dicts", "more dicts", "text", "snapshots", "types"):
    try:
        sub.arm(kind)
        for _ in range(20):
            sub.ping()
        seen[kind] = "answered"
    except standin.SubmissionCrashed as err:
        seen[kind] = str(err)[:200]
print(json.dumps({"growth": peak() - before, "seen": seen}))
sub.close()
box.close()
'''


def test_the_graders_memory_stays_bounded_whatever_a_reply_holds(tmp_path):
    """Reply bombs within every limit: the most Python objects per byte (empty dicts) up to the item
    limit and past it, a string of the size limit, snapshots and classes reply after reply. The
    trusted process grows by less than 150 MiB over all of them (one reply just under the old
    256 MiB limit, 29 million empty dicts, grew it by 800 MiB)."""
    folder = tmp_path / "files"
    folder.mkdir(mode=0o755)
    source = BOMBS_SOURCE.replace("__MAX_ITEMS__", str(standin.MAX_ITEMS)).replace("__MAX_REPLY__",
                                                                                    str(standin.MAX_REPLY))
    (folder / "starter.py").write_text(source)
    for path in (folder, folder / "starter.py"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    run = subprocess.run([sys.executable, "-c", MEASURE, str(folder)], capture_output=True, text=True, timeout=600,
                         cwd=registry.ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.splitlines()[-1])
    seen = found["seen"]
    assert "too many items" in seen["more dicts"] and "items in the snapshots" in seen["snapshots"], seen
    assert "too many types" in seen["types"] and seen["text"] == "answered", seen
    assert found["growth"] < 150 << 20, f"the grader grew by {found['growth'] >> 20} MiB: {seen}"


# --------------------------------------------------------------------------- waves and shards

def _labs_with_tests():
    return [lab for lab in registry.LABS if (lab.path / "test_lab.py").is_file()]


def test_a_lab_is_graded_in_a_wave_after_every_lab_whose_reference_its_sandbox_holds():
    from labkit.grader import references, schedule

    labs = _labs_with_tests()
    waves = schedule.waves(labs)
    wave_of = {lab.id: i for i, wave in enumerate(waves) for lab in wave}
    assert sorted(wave_of) == sorted(lab.id for lab in labs)
    for lab in labs:
        for held in references.needed(lab.path):
            assert wave_of[held] < wave_of[lab.id], f"{lab.id}'s sandbox holds {held}'s reference"
    assert all([lab.id for lab in wave] == [lab.id for lab in labs if wave_of[lab.id] == i]
               for i, wave in enumerate(waves)), "a wave keeps the labs' order"
    assert wave_of["99-01"] < wave_of["99-02"] < wave_of["99-03"] == len(waves) - 1, \
        "the capstone, then the engine built on it, then its fused model, last"


def _fake_class(folder: Path, labs, students=("ann", "ben", "cat", "dan", "eve", "fay", "gus")):
    """Students with a starter.py for every lab but one each (a missing file), and one syntax error."""
    for i, student in enumerate(students):
        for j, lab in enumerate(labs):
            if (i + j) % len(labs) == 0 and i % 2:
                continue  # missing
            path = folder / student / lab.folder / "starter.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("def broken(:\n" if (i, j) == (2, 1) else "X = 1\n")
    return folder


def test_no_sandbox_holding_a_labs_reference_runs_beside_that_labs_submissions(tmp_path, monkeypatch):
    """The runs of grade(), recorded: while any submission of lab X is graded, no run whose sandbox
    holds X's reference is going (``--jobs 3``, labs given in an order that would mix them)."""
    from labkit.grader import references

    labs = [registry.get(i) for i in ("99-01", "02-05", "02-06", "02-01", "04-03")]
    runs, lock = [], threading.Lock()

    def fake_grade_one(student, lab, work_file, limits, resources, sandbox, hide=(), cgroups=None):
        start = time.monotonic()
        time.sleep(0.05)
        with lock:
            runs.append((lab.id, set(references.needed(lab.path)), start, time.monotonic()))
        return grade.Verdict(student, lab.id, 1, 1, "ok", "", 0.0)

    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    result = grade.grade(_fake_class(tmp_path / "class", labs), labs, jobs=3)
    assert len(runs) == sum(v.status == "ok" for v in result.verdicts) > 20
    for lab_id, _, start, end in runs:
        beside = [other for other, held, s, e in runs if lab_id in held and s < end and start < e]
        assert not beside, f"a run of {lab_id} overlapped runs holding its reference: {beside}"
    assert result.header["waves"] == "02-06 02-01 | 02-05 04-03 | 99-01"


def test_a_class_graded_in_shards_merges_to_one_machines_report(tmp_path, monkeypatch):
    from labkit.cli import main

    labs = [registry.get(i) for i in ("02-06", "04-04", "02-01")]
    klass = _fake_class(tmp_path / "class", labs)

    def fake_grade_one(student, lab, work_file, limits, resources, sandbox, hide=(), cgroups=None):
        if work_file is None:
            return grade.Verdict(student, lab.id, 0, 0, "missing", "no file", 0.0)
        total = {"02-06": 60, "04-04": 33, "02-01": 27}[lab.id]
        passed = (len(student) * 7 + len(lab.id)) % (total + 1)
        return grade.Verdict(student, lab.id, passed, total, "failed", f"{student} {lab.id}", 0.5)

    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    grade.grade(klass, labs, out=tmp_path / "whole.json")
    shards = []
    for k in (1, 2, 3):
        result = grade.grade(klass, labs, out=tmp_path / f"shard{k}.json", shard=(k, 3))
        assert result.header["shard"] == f"{k}/3"
        shards.append(tmp_path / f"shard{k}.json")
    sizes = [len(json.loads(p.read_text())["results"]) for p in shards]
    assert all(sizes) and sum(sizes) == 7 * 3, f"every student in exactly one shard: {sizes}"
    assert main(["grade", "merge", *map(str, shards), "--out", str(tmp_path / "merged.json")]) == 0
    assert (tmp_path / "merged.json").read_text() == (tmp_path / "whole.json").read_text()
    # A shard missing, twice, or graded differently is refused.
    assert main(["grade", "merge", *map(str, shards[:2]), "--out", str(tmp_path / "x.json")]) == 2
    assert main(["grade", "merge", *map(str, shards[:2] + shards[1:2]), "--out", str(tmp_path / "x.json")]) == 2
    other = json.loads(shards[2].read_text())
    other["header"]["instructor files"] = "sha256 0000"
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert main(["grade", "merge", *map(str, shards[:2]), str(tmp_path / "other.json"), "--out",
                 str(tmp_path / "x.json")]) == 2
    assert not (tmp_path / "x.json").exists()


def test_a_students_shard_depends_on_the_name_alone():
    from labkit.grader import schedule

    names = [f"student{i:03d}" for i in range(300)]
    for n in (1, 2, 5):
        split = [[s for s in names if schedule.in_shard(s, (k, n))] for k in range(1, n + 1)]
        assert sorted(sum(split, [])) == names and all(len(part) > 300 / n / 2 for part in split)
    assert schedule.parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "2", "a/b"):
        with pytest.raises(ValueError, match="--shard"):
            schedule.parse_shard(bad)


def test_the_trusted_process_of_a_lab_is_held_to_its_memory_limit(tmp_path, monkeypatch):
    """Each reply is bounded, but a test may keep what it gets: the trusted pytest process of each
    student's lab runs in a cgroup of its own, and past its limit the verdict is crashed, "memory limit"."""
    from labkit.grader import limits

    if limits.find()[0] is None:
        pytest.skip("no cgroup can be made on this machine")
    lab = registry.get("02-06")
    (tmp_path / "class" / "ann" / lab.folder).mkdir(parents=True)
    (tmp_path / "class" / "ann" / lab.folder / "starter.py").write_text((lab.path / "solution.py").read_text())
    monkeypatch.setattr(grade, "TRUSTED_MEMORY", 2 << 20)  # less than pytest needs to run the tests
    verdict = grade.grade(tmp_path / "class", [lab]).verdicts[0]
    assert verdict.status == "crashed" and "memory limit: the grader's process" in verdict.first_failure, verdict


def test_the_labs_given_modules_come_from_the_course_whatever_the_student_hands_in(tmp_path):
    """A lab's given modules (02-06's ``_checks.py``) are the course's: a student who hands in
    starter.py alone is graded, and one whose folder holds an ``_checks.py`` of their own (here one that
    refuses to load) is graded against the course's, never theirs."""
    lab = registry.get("02-06")
    solution = (lab.path / "solution.py").read_text()
    for student in ("alone", "shadow"):
        (tmp_path / "class" / student / lab.folder).mkdir(parents=True)
        (tmp_path / "class" / student / lab.folder / "starter.py").write_text(solution)
    (tmp_path / "class" / "shadow" / lab.folder / "_checks.py").write_text(
        "raise ImportError(\"the student's own _checks.py was imported\")\n")
    verdicts = {v.student: v for v in grade.grade(tmp_path / "class", [lab]).verdicts}
    for student in ("alone", "shadow"):
        verdict = verdicts[student]
        assert verdict.status == "ok" and verdict.passed == verdict.total > 0, verdict
