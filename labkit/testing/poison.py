"""Poison for the labs' tests: make every cache slot that holds no valid token loud.

A kernel that reads past ``seq_len``, through a wrong block id or through the table's padding
must fail, not "almost work" on small garbage. No single poison catches every such read:

- ``"huge"``: a large finite value (1e6; 3e4 in float16). Read as a key it makes a score that
  swamps the softmax; read as a value it swamps the output.
- ``"nan"`` and ``"inf"``: a read that is then multiplied by a zero weight (a masked score that
  still feeds ``p @ v``) leaves a huge finite poison at exactly zero, but ``0 * NaN`` and
  ``0 * inf`` are NaN.

Tests parametrize over :data:`POISON_KINDS` so that each kind of careless read fails somewhere.
Memory a call allocates is poisoned too, under :func:`uninitialized_memory_is_nan`.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from labkit.testing.reference import to_f64

POISON_KINDS = ("huge", "nan", "inf")


def poison_value(dtype, kind: str = "huge") -> float:
    """The poison of ``kind`` for ``dtype`` (numpy or torch): ``"huge"`` is 1e6, or 3e4 where the
    type cannot hold 1e6 (float16's largest value is 65504); ``"nan"``, ``"inf"`` are themselves."""
    if kind == "nan":
        return math.nan
    if kind == "inf":
        return math.inf
    if kind != "huge":
        raise ValueError(f"unknown poison {kind!r}; the kinds are {POISON_KINDS}")
    name = str(dtype).removeprefix("torch.")
    return 3.0e4 if name in ("float16", "half") else 1.0e6


def valid_slot_mask(num_blocks: int, block_size: int, block_tables, seq_lens) -> np.ndarray:
    """``[num_blocks, block_size]`` booleans: True where some sequence keeps a valid token.

    ``block_tables``/``seq_lens`` are one table and one length, or a batch of each.
    """
    tables = np.asarray(to_f64(block_tables), dtype=np.int64)
    lens = np.atleast_1d(np.asarray(seq_lens, dtype=np.int64))
    if tables.ndim == 1:
        tables = tables[None]
    valid = np.zeros((num_blocks, block_size), dtype=bool)
    for table, seq_len in zip(tables, lens, strict=True):
        for t in range(int(seq_len)):
            valid[table[t // block_size], t % block_size] = True
    return valid


def poison_unused_slots(cache, block_tables, seq_lens, value: float | None = None, kind: str = "huge"):
    """Overwrite, in place, every slot of ``cache`` ``[num_blocks, block_size, ...]``
    that holds none of the valid tokens: the tail of each last block, every block
    no sequence uses. ``kind`` picks the poison (:data:`POISON_KINDS`), ``value`` overrides it.
    Works on numpy arrays and torch tensors; returns ``cache``."""
    num_blocks, block_size = cache.shape[0], cache.shape[1]
    unused = ~valid_slot_mask(num_blocks, block_size, block_tables, seq_lens)
    value = poison_value(cache.dtype, kind) if value is None else value
    if hasattr(cache, "detach"):  # torch
        import torch

        cache[torch.from_numpy(unused).to(cache.device)] = value
    else:
        cache[unused] = value
    return cache


@contextlib.contextmanager
def uninitialized_memory_is_nan():
    """While it lasts, ``torch.empty``, ``new_empty`` and ``empty_like`` return floats full of NaN (torch's
    ``fill_uninitialized_memory``, which deterministic mode turns on; ``warn_only``, so that no other
    operation is refused): a deterministic stand-in for whatever an allocator hands back, which is often
    zero by luck (fresh pages), so that an output row a kernel never writes shows every time. Restores
    torch's settings on the way out. (``labs grade`` carries the mode to the submission's calls.)"""
    import torch

    was_on = torch.are_deterministic_algorithms_enabled()
    was_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    was_filling = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.utils.deterministic.fill_uninitialized_memory = was_filling
        torch.use_deterministic_algorithms(was_on, warn_only=was_warn_only)
