"""The bytes on the pipe between the grader and a worker: one plain value per message, after its 8-byte
length, in a small tagged format (no back-references). The receiver refuses an oversized length before
reading, and bounds items, nesting, keys that hash alike and decoding time. Standard library only:
staged into the sandbox."""

from __future__ import annotations

import os
import select
import struct
import time

MAX_DEPTH = 64
# Keys of one dict or set that may hash alike. Python's hash of an int is not random (k * (2**61 - 1)
# hashes to 0 for every k), and building a table of keys that hash alike takes time quadratic in their
# number: 60,000 such ints held a call 44 s past a 10 s limit. Honest keys hash alike a few at a time.
MAX_SAME_HASH = 64
_LEN = struct.Struct("<Q")
_INT = struct.Struct("<q")
_FLOAT = struct.Struct("<d")


class ProtocolError(Exception):
    """Malformed, oversized or late data on the pipe."""


# --------------------------------------------------------------------------- values <-> bytes


def pack(value) -> bytes:
    """``value`` (None, bool, int, float, str, bytes, and tuples, lists, dicts of them) as bytes."""
    out: list[bytes] = []
    _pack(value, out, 0)
    return b"".join(out)


def _pack(value, out: list, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise TypeError("nested too deeply")
    kind = type(value)
    if value is None:
        out.append(b"N")
    elif kind is bool:
        out.append(b"T" if value else b"F")
    elif kind is int:
        if -(2**63) <= value < 2**63:
            out += [b"i", _INT.pack(value)]
        else:
            # Two's complement, little-endian: linear both ways (a decimal text is not, and Python refuses
            # one of more than 4,300 digits, an int a submission may well compute).
            data = value.to_bytes(value.bit_length() // 8 + 1, "little", signed=True)
            out += [b"I", _LEN.pack(len(data)), data]
    elif kind is float:
        out += [b"f", _FLOAT.pack(value)]
    elif kind is str:
        data = value.encode("utf-8", "surrogatepass")
        out += [b"s", _LEN.pack(len(data)), data]
    elif kind is bytes:
        out += [b"b", _LEN.pack(len(value)), value]
    elif kind in (tuple, list):
        out += [b"t" if kind is tuple else b"l", _LEN.pack(len(value))]
        for item in value:
            _pack(item, out, depth + 1)
    elif kind is dict:
        out += [b"d", _LEN.pack(len(value))]
        for key, item in value.items():
            _pack(key, out, depth + 1)
            _pack(item, out, depth + 1)
    else:
        raise TypeError(f"a {kind.__qualname__} is not a plain value")


def unpack(data, deadline: float | None = None, max_items: int | None = None):
    """The value in ``data`` (bytes, or any buffer: it is read in place); ProtocolError if it is
    malformed, has bytes left over or holds more than ``max_items`` items; TimeoutError if it is still
    being decoded at ``deadline`` (a ``time.monotonic()`` value)."""
    reader = _Reader(data if type(data) in (bytes, bytearray) else bytes(data), deadline, max_items)
    value = reader.value(0)
    if reader.pos != len(data):
        raise ProtocolError(f"{len(data) - reader.pos} bytes after the value")
    return value


# The tags as byte values (indexing bytes gives ints): one comparison each, no slicing.
_N, _T, _F, _i, _I, _f, _s, _b, _t, _l, _d = b"NTFiIfsbtld"


class _Reader:
    """Reads one value from ``data`` at ``pos``. Every read is checked against the end first;
    tags are compared as byte values, numbers read with ``struct.unpack_from``, in place."""

    def __init__(self, data: bytes | bytearray, deadline: float | None, max_items: int | None):
        self.data, self.pos, self.deadline = data, 0, deadline
        self.view = memoryview(data)  # strings and bytes are copied out of it, one at a time
        self.items_left = max_items if max_items is not None else len(data)  # an item takes a byte at least

    def length(self) -> int:
        """A length or count; never more than the bytes left (each item takes at least one)."""
        data, pos = self.data, self.pos
        if pos + 8 > len(data):
            raise ProtocolError("truncated message")
        (n,) = _LEN.unpack_from(data, pos)
        self.pos = pos = pos + 8
        if n > len(data) - pos:
            raise ProtocolError(f"a length of {n} with {len(data) - pos} bytes left")
        return n

    def chunk(self) -> memoryview:
        n = self.length()
        start = self.pos
        self.pos = start + n
        return self.view[start : start + n]

    def value(self, depth: int):
        data, pos = self.data, self.pos
        if pos >= len(data):
            raise ProtocolError("truncated message")
        tag = data[pos]
        self.pos = pos = pos + 1
        self.items_left -= 1
        if self.items_left < 0:
            raise ProtocolError("too many items in one message")
        if tag == _N:
            return None
        if tag == _i or tag == _f:
            if pos + 8 > len(data):
                raise ProtocolError("truncated message")
            self.pos = pos + 8
            return (_INT if tag == _i else _FLOAT).unpack_from(data, pos)[0]
        if tag == _s:
            try:
                return str(self.chunk(), "utf-8", "surrogatepass")
            except UnicodeDecodeError:
                raise ProtocolError("malformed text") from None
        if tag == _t or tag == _l or tag == _d:
            if depth > MAX_DEPTH:
                raise ProtocolError("nested too deeply")
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise TimeoutError("still decoding at the deadline")  # the call's time is up, not the protocol broken
            n = self.length()
            if tag == _d:
                items, hashes = {}, HashCount()
                for _ in range(n):
                    key = self.value(depth + 1)
                    if type(key) not in (str, int, bool, type(None), float, bytes):
                        raise ProtocolError("a dict key that is not a plain value")
                    hashes.add(key)
                    items[key] = self.value(depth + 1)
                return items
            items = [self.value(depth + 1) for _ in range(n)]
            return tuple(items) if tag == _t else items
        if tag == _T or tag == _F:
            return tag == _T
        if tag == _b:
            return bytes(self.chunk())
        if tag == _I:
            return int.from_bytes(self.chunk(), "little", signed=True)
        raise ProtocolError(f"unknown tag {bytes([tag])!r}")


class HashCount:
    """How many keys of one dict or set hash alike: ProtocolError past :data:`MAX_SAME_HASH` (a hash
    flood), before the table that holds them is built."""

    def __init__(self):
        self.counts: dict[int, int] = {}  # hash -> keys seen with it (hashes of ints hash as themselves)

    def add(self, key) -> None:
        h = hash(key)
        n = self.counts.get(h, 0) + 1
        if n > MAX_SAME_HASH:
            raise ProtocolError(f"more than {MAX_SAME_HASH} keys of one dict or set hash alike")
        self.counts[h] = n


# --------------------------------------------------------------------------- framing


def send(fd: int, value, deadline: float | None = None) -> None:
    """Write ``value`` as one message on ``fd``. With a ``deadline`` (``time.monotonic()``; ``fd`` is
    then non-blocking), TimeoutError once it passes with the message not all written: a reader that
    stops reading cannot hold the writer past it."""
    data = pack(value)
    view = memoryview(_LEN.pack(len(data)) + data)
    while view:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([], [fd], [], wait)[1]:
                raise TimeoutError
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:  # the pipe filled between the select and the write
            continue


def recv(fd: int, deadline: float | None = None, limit: int | None = None, max_items: int | None = None):
    """The next message on ``fd``, decoded. TimeoutError when the message has not fully arrived
    by ``deadline`` (``time.monotonic()``); EOFError when the other end closed; ProtocolError for a
    message announced larger than ``limit`` bytes (refused before reading it), holding more than
    ``max_items`` items, or malformed."""
    (size,) = _LEN.unpack(_read_exactly(fd, _LEN.size, deadline))
    if limit is not None and size > limit:
        raise ProtocolError(f"a message of {size} bytes (the limit is {limit})")
    return unpack(_read_exactly(fd, size, deadline), deadline, max_items)


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytearray:
    """``size`` bytes from ``fd``, read straight into one buffer of that size."""
    buf = bytearray(size)
    view, done = memoryview(buf), 0
    while done < size:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        n = os.readv(fd, [view[done : done + (1 << 20)]])
        if not n:
            raise EOFError
        done += n
    return buf
