"""Lab 02-06, reference solution: one decode step's data path through a paged KV cache.

Three functions, in the order an engine step uses them:

1. ``build_slot_mapping``: the write map, a flat cache row for each new token.
2. ``write_kv``: scatter the new keys and values to those rows, in place.
3. ``paged_attention``: gather every valid token back through the block table
   and attend over it, one query head at a time (grouped-query aware).

Layout: a cache is ``[num_blocks, block_size, num_kv_heads, head_dim]`` and
logical token ``t`` of a sequence lives at
``cache[block_table[t // block_size], t % block_size]``; flattening the first two
axes, that is row ``slot(t) = block_table[t // block_size] * block_size + t % block_size``.
"""

from __future__ import annotations

import numpy as np


def build_slot_mapping(block_table, block_size, start, num_tokens):
    """The flat cache slot of each logical token ``start .. start + num_tokens - 1``.

    ``block_table`` is any 1-D integer array (or list) of physical block ids. Returns an int64
    array ``[num_tokens]``: a decode step is ``start = seq_len, num_tokens = 1``; a prefill chunk
    is its whole range, starting mid-sequence (often mid-block).
    """
    block_table = _as_block_table(block_table)
    _check_token_range(block_table, block_size, start, num_tokens)
    t = np.arange(start, start + num_tokens, dtype=np.int64)
    # Which block (t // block_size) and where inside it (t % block_size).
    return block_table[t // block_size] * block_size + t % block_size


def write_kv(k_cache, v_cache, new_k, new_v, slot_mapping):
    """Scatter ``new_k``/``new_v`` ``[num_tokens, num_kv_heads, head_dim]`` into the caches, in place.

    Row ``i`` goes to flat slot ``slot_mapping[i]``. A negative slot is padding (vLLM's
    ``PAD_SLOT_ID = -1``) and writes nothing; numpy would otherwise read it as "count from the
    end" and overwrite the last slot of the cache.
    """
    slot_mapping = _check_write(k_cache, v_cache, new_k, new_v, slot_mapping)
    keep = slot_mapping >= 0
    slots = slot_mapping[keep]
    block_size = k_cache.shape[1]
    # Split the flat slot back into (block, offset): this indexes the caches
    # themselves, so the write lands in the caller's arrays (no reshaped copy).
    blocks, offsets = slots // block_size, slots % block_size
    k_cache[blocks, offsets] = np.asarray(new_k)[keep]
    v_cache[blocks, offsets] = np.asarray(new_v)[keep]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    """Attention of one query ``[num_heads, head_dim]`` over the first ``seq_len`` tokens of a paged cache.

    Query head ``h`` reads KV head ``h // (num_heads // num_kv_heads)``. Scores are
    ``q . k / sqrt(head_dim)``. Returns float64 ``[num_heads, head_dim]`` whatever the caches'
    dtype; zeros when ``seq_len`` is 0. Reads only, and only the sequence's tokens.
    """
    q = np.asarray(q, dtype=np.float64)
    block_table = _as_block_table(block_table)
    _check_attention(q, k_cache, v_cache, block_table, seq_len, block_size)
    num_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[2]
    out = np.zeros((num_heads, v_cache.shape[3]))
    if seq_len == 0:
        return out  # nothing to attend to: zeros, not 0/0 = NaN

    # The gather: exactly seq_len rows, never len(block_table) * block_size,
    # because the tail of the last block holds no token of this sequence.
    t = np.arange(seq_len)
    blocks, offsets = block_table[t // block_size], t % block_size
    # Float64 copies, whatever the caches hold (a half-precision cache is read, never computed in).
    k = np.asarray(k_cache[blocks, offsets], dtype=np.float64)  # [seq_len, num_kv_heads, head_dim]
    v = np.asarray(v_cache[blocks, offsets], dtype=np.float64)

    group = num_heads // num_kv_heads  # query heads per KV head
    scale = 1.0 / np.sqrt(head_dim)
    for h in range(num_heads):
        kv_head = h // group
        scores = k[:, kv_head, :] @ q[h] * scale  # [seq_len]
        weights = np.exp(scores - scores.max())  # max first: exp never overflows
        out[h] = (weights / weights.sum()) @ v[:, kv_head, :]
    return out


# --- input checks (given in the starter too): a clear message instead of an IndexError from inside
# numpy, or worse, a silent wrong answer (numpy reads a negative block id from the end of the cache).


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


def _check_write(k_cache, v_cache, new_k, new_v, slot_mapping):
    for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(cache, np.ndarray) or cache.ndim != 4:
            raise ValueError(f"{name} must be a numpy array [num_blocks, block_size, num_kv_heads, head_dim]")
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
    if k_cache.shape[1] != block_size:
        raise ValueError(f"block_size={block_size} but the caches hold blocks of {k_cache.shape[1]} tokens")
    num_heads, num_kv_heads = q.shape[0], k_cache.shape[2]
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads={num_heads} is not a multiple of num_kv_heads={num_kv_heads}")
    if k_cache.shape[3] != q.shape[1]:
        raise ValueError(f"q has head_dim {q.shape[1]}, the key cache {k_cache.shape[3]}")
    _check_token_range(block_table, block_size, 0, seq_len)
    used = block_table[: -(-int(seq_len) // int(block_size))]
    if used.size and (used.min() < 0 or used.max() >= k_cache.shape[0]):
        raise ValueError(f"block_table {used.tolist()} names a block outside the cache's 0..{k_cache.shape[0] - 1}")
