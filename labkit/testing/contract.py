"""Cases drawn from what an API promises to accept: every memory layout, length, group size and
pattern of scores its docstring allows, each with a name that a failing test repeats.

The labs' first tests use the inputs their authors had in mind: contiguous tensors, lengths in the
middle of a block, moderate scores. An implementation can pass them all and still be wrong on what
the docstring accepts and real engines pass. This module builds those inputs, for any lab:

- **Layouts.** :data:`CACHE_LAYOUTS`, :data:`Q_LAYOUTS` and :data:`TABLE_LAYOUTS` map a short id to
  a :class:`Layout`, whose ``apply`` returns the same values laid out in memory as an engine lays them out: K and V as
  the two halves of one fused pool (``kv[:, 0]``, ``kv[:, 1]``), a pool whose heads sit outside the
  slots, ``q`` as a slice of a fused ``qkv`` projection, a block table that is a column slice of a
  wider one or every other row of a taller one. What lies beside each view in memory is wrong for it:
  the other cache's blocks, NaN in the K and V parts of ``qkv``, a poisoned block's id in a table's
  extra columns or rows; so a kernel that computes offsets as if the tensor were contiguous reads
  it and fails loudly. Torch tensors and numpy arrays alike.
- **Lengths.** :func:`boundary_lengths`: 0, 1, each side of a block boundary, each side of the
  algorithm's own inner unit (a split, a chunk, a tile: ``segment``), and the table's capacity.
- **Scores.** :data:`SCORE_PATTERNS` and :func:`score_levels` say what each key's score should be
  near; :func:`steer_scores` moves ``q`` and the cached keys so that they are: flat near +1000 or
  -1000, one peak in the first or the last segment, the mass clustered in one segment, one segment
  far below the rest, neighbours in a batch a couple of thousand apart.

Everything is seeded and deterministic, and every case has a name: a test parametrized over these
dictionaries gets ids such as ``[kv_pool_views]``, and its failure message repeats the layout's
description (``what=f"paged_decode, {layout.describe}"``). CONTRIBUTING.md says how a lab uses
them, and why they are enumerated rather than drawn by Hypothesis (one call of a kernel through
Triton's interpreter costs a tenth of a second or more).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Layout:
    """One way to lay a tensor out in memory: ``describe`` goes into failure messages, ``apply``
    returns the same values laid out that way (a view into a larger buffer)."""

    describe: str
    apply: Callable


# --------------------------------------------------------------------------- memory layouts


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _filled(like, shape, value):
    """A new array (or tensor) of ``like``'s type, dtype and device, of ``shape``, filled with ``value``."""
    if _is_torch(like):
        import torch

        return torch.full(shape, value, dtype=like.dtype, device=like.device)
    return np.full(shape, value, dtype=like.dtype)


def _permuted(x, dims):
    return x.permute(*dims) if _is_torch(x) else x.transpose(dims)


def _nan_or_zero(x):
    """NaN for a floating array, else 0: what the memory around a view holds."""
    floating = x.is_floating_point() if _is_torch(x) else np.issubdtype(x.dtype, np.floating)
    return float("nan") if floating else 0


def fused_pool(k_cache, v_cache):
    """``kv[:, 0], kv[:, 1]`` of one ``[num_blocks, 2, block_size, num_kv_heads, head_dim]`` pool
    (FlashInfer's layout, and vLLM's for its FlashInfer backend): each view's block stride is twice a
    block, and a block of K sits between two blocks of V."""
    num_blocks, *rest = k_cache.shape
    kv = _filled(k_cache, (num_blocks, 2, *rest), _nan_or_zero(k_cache))
    kv[:, 0], kv[:, 1] = k_cache, v_cache
    return kv[:, 0], kv[:, 1]


def heads_outside_slots(k_cache, v_cache):
    """The caches stored ``[num_blocks, 2, num_kv_heads, block_size, head_dim]`` (heads outside the
    slots, vLLM's "HND" layout), viewed as ``[num_blocks, block_size, num_kv_heads, head_dim]``: the
    slot stride is ``head_dim`` and the head stride ``block_size * head_dim``."""
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    kv = _filled(k_cache, (num_blocks, 2, num_kv_heads, block_size, head_dim), _nan_or_zero(k_cache))
    kv[:, 0], kv[:, 1] = _permuted(k_cache, (0, 2, 1, 3)), _permuted(v_cache, (0, 2, 1, 3))
    return _permuted(kv[:, 0], (0, 2, 1, 3)), _permuted(kv[:, 1], (0, 2, 1, 3))


# Keys are short test ids; each value's ``apply(k_cache, v_cache)`` returns ``(k_cache, v_cache)``.
CACHE_LAYOUTS = {
    "contiguous": Layout("contiguous caches", lambda k, v: (k, v)),
    "kv_pool_views": Layout("k_cache, v_cache as views kv[:, 0], kv[:, 1] of one fused [num_blocks, 2, block_size, "
                            "num_kv_heads, head_dim] pool", fused_pool),
    "heads_outside_slots": Layout("k_cache, v_cache as views of a pool stored [num_blocks, 2, num_kv_heads, "
                                  "block_size, head_dim] (heads outside the slots)", heads_outside_slots),
}


def qkv_slice(q, num_kv_heads: int):
    """``q [rows, num_heads, head_dim]`` as ``qkv[:, :num_heads]`` of the fused projection ``qkv [rows,
    num_heads + 2 * num_kv_heads, head_dim]`` (one matmul gives Q, K and V; engines split it by
    views): the row stride is ``(num_heads + 2 * num_kv_heads) * head_dim``. The K and V parts hold NaN."""
    rows, num_heads, head_dim = q.shape
    qkv = _filled(q, (rows, num_heads + 2 * num_kv_heads, head_dim), _nan_or_zero(q))
    qkv[:, :num_heads] = q
    return qkv[:, :num_heads]


# ``apply(q, num_kv_heads)`` returns ``q``.
Q_LAYOUTS = {
    "contiguous": Layout("contiguous q", lambda q, num_kv_heads: q),
    "q_slice_of_qkv": Layout("q as a view qkv[:, :num_heads] of a fused [rows, num_heads + 2 * num_kv_heads, "
                             "head_dim] projection", qkv_slice),
}


def wider_table(block_tables, filler: int, extra_columns: int = 3):
    """``block_tables [batch, max_blocks]`` as the first ``max_blocks`` columns of a table ``extra_columns``
    wider (an engine's table sized for its longest allowed sequence, cut to this step's): the row
    stride is ``max_blocks + extra_columns``. The extra columns hold ``filler``, a poisoned block's id."""
    batch, width = block_tables.shape
    wide = _filled(block_tables, (batch, width + extra_columns), filler)
    wide[:, :width] = block_tables
    return wide[:, :width]


def every_other_row(block_tables, filler: int):
    """``block_tables`` as rows 0, 2, 4... of a table twice as tall (the rows of this step's sequences
    among those of a persistent batch): the row stride is two rows. The rows between hold ``filler``."""
    batch, width = block_tables.shape
    tall = _filled(block_tables, (2 * batch, width), filler)
    tall[::2] = block_tables
    return tall[::2]


# ``apply(block_tables, filler)`` returns ``block_tables``; ``filler`` is a poisoned block's id.
TABLE_LAYOUTS = {
    "contiguous": Layout("contiguous block_tables", lambda tables, filler: tables),
    "table_column_slice": Layout("block_tables as a view wide[:, :max_blocks], a column slice of a wider table",
                                 wider_table),
    "table_every_other_row": Layout("block_tables as a view tall[::2], every other row of a taller table",
                                    every_other_row),
}


def is_contiguous(x) -> bool:
    return x.is_contiguous() if _is_torch(x) else bool(x.flags.c_contiguous)


# --------------------------------------------------------------------------- lengths


def boundary_lengths(block_size: int, *, segment: int | None = None, capacity: int | None = None) -> dict[str, int]:
    """Sequence lengths at the edges an implementation can get wrong, by name.

    0 and 1; ``block_size - 1``, ``block_size``, ``block_size + 1``; with ``segment`` (the
    algorithm's own unit: a split's partition, a tile of keys) ``segment - 1``, ``segment + 1`` and
    a length that is no whole number of segments nor of blocks; with ``capacity`` (the block
    table's length in tokens) the capacity itself, a full table. Lengths past ``capacity`` are
    left out; equal lengths appear once, under their first name.

    ``block_size`` is whatever unit the code under test cuts its input by: a cache block, the number
    of partitions ``np.array_split`` deals keys into (fewer keys than partitions, one each, one
    more), the rows one program of a kernel takes.
    """
    named = {"0": 0, "1": 1, "block_size - 1": block_size - 1, "block_size": block_size,
             "block_size + 1": block_size + 1}
    if segment is not None:
        named |= {"segment - 1": segment - 1, "segment + 1": segment + 1,
                  "2 segments + 3": 2 * segment + 3}
    if capacity is not None:
        named["capacity (a full table)"] = capacity
    seen, out = set(), {}
    for name, n in named.items():
        if n >= 0 and (capacity is None or n <= capacity) and n not in seen:
            seen.add(n)
            out[name] = n
    return out


# --------------------------------------------------------------------------- score patterns

# Each pattern gives every key of a sequence a target score (before the noise of a few units that
# steer_scores leaves): where the largest scores sit relative to the algorithm's inner boundaries.
SCORE_PATTERNS = {
    "flat near +1000": "every score near +1000: exp of a raw score overflows",
    "flat near -1000": "every score near -1000: exp(score - 0) underflows to 0 (a max that starts at 0)",
    "one peak in the first segment": "one key of the first segment 100 above the rest (near 0): a running "
                                     "max that forgets the earlier segments overflows",
    "one peak in the last segment": "one key of the last segment 100 above the rest (near 0): a max taken "
                                    "from the first segment only overflows",
    "mass clustered in one segment": "the keys of one middle segment 8 above the rest: most of the weight, "
                                     "not all of it",
    "one segment far below": "the keys of the first segment near -1000, the rest near 0: that segment's "
                             "weight underflows to exactly 0",
    "neighbours far apart": "even sequences of the batch near +1000, odd ones near -1000: a max shared "
                            "across the batch",
}


def score_levels(pattern: str, seq_len: int, segment: int, index: int = 0) -> np.ndarray:
    """The target score of each of the ``seq_len`` keys of sequence ``index`` of a batch, for a
    pattern of :data:`SCORE_PATTERNS`; ``segment`` is the algorithm's inner unit (split, chunk, tile)."""
    if pattern not in SCORE_PATTERNS:
        raise ValueError(f"unknown score pattern {pattern!r}; one of {sorted(SCORE_PATTERNS)}")
    levels = np.zeros(seq_len)
    segments = max(1, math.ceil(seq_len / segment))
    if pattern == "flat near +1000":
        levels[:] = 1000.0
    elif pattern == "flat near -1000":
        levels[:] = -1000.0
    elif pattern == "one peak in the first segment" and seq_len:
        levels[min(segment, seq_len) // 2] = 100.0  # the middle of the first segment
    elif pattern == "one peak in the last segment" and seq_len:
        first = (segments - 1) * segment
        levels[(first + seq_len) // 2] = 100.0  # the middle of the last segment
    elif pattern == "mass clustered in one segment":
        middle = segments // 2
        levels[middle * segment : (middle + 1) * segment] = 8.0
    elif pattern == "one segment far below":
        levels[:segment] = -1000.0
    elif pattern == "neighbours far apart":
        levels[:] = 1000.0 if index % 2 == 0 else -1000.0
    return levels


def steer_scores(q, k_cache, block_tables, seq_lens, levels, *, seed: int = 0):
    """In place, before rounding to a test's dtype: move ``q`` and the keys in ``k_cache`` so that
    ``q[r, h] . k_t / sqrt(head_dim)`` is near ``levels[b][t]`` (plus a spread of a few units) for
    every key ``t`` of sequence ``b``, whichever row ``r`` of ``q`` and head ``h`` look at it.

    ``q [rows, num_heads, head_dim]`` (any rows: one per sequence for decode, one per token for
    prefill); ``k_cache [num_blocks, block_size, num_kv_heads, head_dim]``; ``block_tables`` one row
    per sequence; ``levels`` one array per sequence (:func:`score_levels`). Each KV head gets a unit
    direction ``u``; every query head of its group becomes ``2 sqrt(head_dim) u`` plus 5% of what it
    was, and key ``t`` gains ``levels[t] / 2`` along ``u``. float tensors or arrays.
    """
    num_kv_heads, head_dim = k_cache.shape[2], k_cache.shape[3]
    group = q.shape[1] // num_kv_heads
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((num_kv_heads, head_dim))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    like = (lambda a: q.new_tensor(a)) if _is_torch(q) else (lambda a: a)
    q[:] = like(2.0 * math.sqrt(head_dim) * np.repeat(u, group, axis=0)[None]) + 0.05 * q
    block_size = k_cache.shape[1]
    tables = np.asarray(block_tables.tolist() if _is_torch(block_tables) else block_tables)
    for b, n in enumerate(int(x) for x in seq_lens):
        t = np.arange(n)
        blocks, slots = tables[b][t // block_size].astype(np.int64), t % block_size  # distinct slots: no clash
        if _is_torch(k_cache):
            import torch

            blocks, slots = torch.from_numpy(blocks).to(k_cache.device), torch.from_numpy(slots).to(k_cache.device)
        k_cache[blocks, slots] += like(0.5 * np.asarray(levels[b])[:, None, None] * u[None])
