"""Lab 02-06, given: the input checks of the three functions.

Written once, here; ``starter.py`` and ``solution.py`` both import them and call them first. Each
gives a clear ValueError instead of an IndexError from inside numpy or, worse, a silent wrong answer
(numpy reads a negative block id from the end of the cache). The block ids a sequence uses are
checked by ``labkit.block_table.check_block_ids``, given code the later paged labs call too.
"""

from __future__ import annotations

import numpy as np

from labkit.block_table import check_block_ids


def _as_block_table(block_table):
    table = np.asarray(block_table)
    if table.size == 0:
        return table.reshape(0).astype(np.int64)
    if table.ndim != 1 or not np.issubdtype(table.dtype, np.integer):
        raise ValueError(
            f"block_table must be a 1-D array of integer block ids, got shape {table.shape} dtype {table.dtype}"
        )
    return table.astype(np.int64)


def _check_token_range(block_table, block_size, start, num_tokens):
    if int(block_size) < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    if int(start) < 0 or int(num_tokens) < 0:
        raise ValueError(f"start and num_tokens must be >= 0, got start={start}, num_tokens={num_tokens}")
    needed = -(-(int(start) + int(num_tokens)) // int(block_size))
    if needed > len(block_table):
        raise ValueError(
            f"tokens {start}..{int(start) + int(num_tokens) - 1} need {needed} blocks of {block_size}, "
            f"but block_table has {len(block_table)}"
        )


def _check_slot_blocks(block_table, block_size, start, num_tokens):
    # The table entries that tokens start .. start + num_tokens - 1 use (the caller has checked that
    # the table is long enough): a negative id would make negative slots, which write_kv skips as
    # padding, and an id whose slots pass int64 would wrap around to some other slot.
    if int(num_tokens) == 0:
        return
    last_token = int(start) + int(num_tokens) - 1
    ids = block_table[int(start) // int(block_size): last_token // int(block_size) + 1]
    low, high = int(ids.min()), int(ids.max())
    if low < 0:
        raise ValueError(f"block_table holds block id {low} for tokens {start}..{last_token}: a block id is never "
                         "negative (its slots would be taken for padding)")
    if (high + 1) * int(block_size) - 1 > np.iinfo(np.int64).max:
        raise ValueError(f"block_table holds block id {high} for tokens {start}..{last_token}: with block_size "
                         f"{block_size} its slots pass the largest int64")


def _check_same_shape(k_cache, v_cache):
    # The value of a token sits at the same (block, offset, head) as its key, and has its size: a
    # value cache of another shape is read at the wrong rows, or past its end.
    if np.shape(v_cache) != np.shape(k_cache):
        raise ValueError(f"v_cache has shape {np.shape(v_cache)} but k_cache {np.shape(k_cache)}: the two caches "
                         "must have one shape [num_blocks, block_size, num_kv_heads, head_dim]")


def _check_write(k_cache, v_cache, new_k, new_v, slot_mapping):
    for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(cache, np.ndarray) or cache.ndim != 4:
            raise ValueError(f"{name} must be a numpy array [num_blocks, block_size, num_kv_heads, head_dim]")
    _check_same_shape(k_cache, v_cache)
    slots = np.asarray(slot_mapping)
    if slots.ndim != 1 or (slots.size and not np.issubdtype(slots.dtype, np.integer)):
        raise ValueError(f"slot_mapping must be a 1-D integer array, got shape {slots.shape} dtype {slots.dtype}")
    for name, new, cache in (("new_k", new_k, k_cache), ("new_v", new_v, v_cache)):
        expected = (len(slots), *cache.shape[2:])
        if np.shape(new) != expected:
            raise ValueError(f"{name} has shape {np.shape(new)}, expected {expected} (one row per slot)")
    num_slots = k_cache.shape[0] * k_cache.shape[1]
    if slots.size and slots.max() >= num_slots:
        raise ValueError(f"slot {slots.max()} is past the cache's {num_slots} slots")
    return slots.astype(np.int64)


def _check_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    if q.ndim != 2:
        raise ValueError(f"q must be [num_heads, head_dim], got shape {q.shape}")
    for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
        if np.ndim(cache) != 4:
            raise ValueError(f"{name} must be [num_blocks, block_size, num_kv_heads, head_dim]")
    _check_same_shape(k_cache, v_cache)
    if k_cache.shape[1] != block_size:
        raise ValueError(f"block_size={block_size} but the caches hold blocks of {k_cache.shape[1]} tokens")
    num_heads, num_kv_heads = q.shape[0], k_cache.shape[2]
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads={num_heads} is not a multiple of num_kv_heads={num_kv_heads}")
    if k_cache.shape[3] != q.shape[1]:
        raise ValueError(f"q has head_dim {q.shape[1]}, the key cache {k_cache.shape[3]}")
    _check_token_range(block_table, block_size, 0, seq_len)
    check_block_ids(block_table, seq_len, int(block_size), k_cache.shape[0], "block_table")
