"""Lab 02-02, given: a request stream's input checks and the timeline a replay returns.

Written once, here; ``starter.py`` and ``solution.py`` both import it. The checks turn bad input into
a ValueError that names the argument; ``_timeline`` and ``_as_arrays`` build the dict that
``serve_contiguous`` and ``serve_paged`` return (README, "The step model").
"""

from __future__ import annotations

import numpy as np

import labkit
from labkit.integers import as_int

# Lab 02-01's reference allocator (never the learner's file): block 0 is its null block.
BlockPool = labkit.load_reference("02-01").BlockPool


def _check_positive(name: str, value) -> int:
    return as_int(value, name, low=1)  # an int or a numpy integer, never a bool (labkit.integers)


def _check_lengths(lengths) -> list[int]:
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or (lengths.size and lengths.dtype.kind not in "iu") or np.any(lengths < 1):
        raise ValueError(f"lengths must be a 1-D list of positive token counts, got {lengths!r}")
    return [int(n) for n in lengths]


def _check_stream(stream) -> np.ndarray:
    """The stream as an int64 array [num_requests, 3]: (arrival step, prompt_len, output_len), each
    value below 2**62."""
    stream = np.asarray(stream)
    if stream.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if stream.ndim != 2 or stream.shape[1] != 3 or stream.dtype.kind not in "iu":
        raise ValueError(f"stream must be integers of shape [num_requests, 3] (arrival, prompt_len, output_len), "
                         f"got shape {stream.shape} and dtype {stream.dtype}")
    # Every value below 2**62 (asked before the cast, which wraps a uint64 of 2**63 around to a negative):
    # then prompt_len + output_len fits in int64, where a longer request would wrap around to a small or
    # negative sum and pass the max_len and peak checks. No request comes near 2**62 tokens.
    if stream.max() >= 2**62:
        raise ValueError(f"stream: arrival steps and lengths must be below 2**62, got {stream.max()}")
    stream = stream.astype(np.int64)
    if np.any(stream[:, 0] < 0) or np.any(stream[:, 1:] < 1):
        raise ValueError("stream: arrival steps must be >= 0, prompt_len and output_len >= 1")
    return stream


def _timeline(num_requests):
    """Empty per-step and per-request records of one replay."""
    n = num_requests
    return {
        "used": [], "reserved": [], "running": [], "waiting": [],
        "admitted_at": np.full(n, -1, dtype=np.int64), "finished_at": np.full(n, -1, dtype=np.int64),
        "preemptions": 0,
    }


def _as_arrays(timeline):
    for key in ("used", "reserved", "running", "waiting"):
        timeline[key] = np.array(timeline[key], dtype=np.int64)
    return timeline
