"""Lab 02-06, your work: one engine step's data path through a paged KV cache, in numpy.

Implement the three functions in order (README "Steps" 1-3), then run
``python -m labkit.cli check 02-06 --impl starter`` (or
``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-06-paged-attention-numpy``).

Layout: a cache is ``[num_blocks, block_size, num_kv_heads, head_dim]``; a sequence's block table
lists its physical block ids in logical order, and logical token ``t`` lives at
``cache[block_table[t // block_size], t % block_size]``. Flattening the first two axes of the
cache, that position is the single row (the token's *slot*)
``slot(t) = block_table[t // block_size] * block_size + t % block_size``.

The input checks at the bottom are written for you and already called at the top of each
function: keep those calls, so bad input gets a clear message.
"""

from __future__ import annotations

import numpy as np


def build_slot_mapping(block_table, block_size, start, num_tokens):
    """The slot of each logical token ``start, start + 1, ..., start + num_tokens - 1``.

    ``block_table``: a 1-D integer array or list of physical block ids (int32 like vLLM's, or
    int64). Returns a numpy int64 array ``[num_tokens]`` whose entry ``i`` is ``slot(start + i)``
    (the formula above); an empty array when ``num_tokens`` is 0. ``start`` can be anywhere in the
    sequence, mid-block included (a decode step writes one token at ``start = seq_len``). The
    table is only read.
    """
    block_table = _as_block_table(block_table)
    _check_token_range(block_table, block_size, start, num_tokens)
    raise NotImplementedError(
        "build_slot_mapping: not implemented yet (README step 1: the slot of each token "
        "t = start .. start + num_tokens - 1, as an int64 array)"
    )


def write_kv(k_cache, v_cache, new_k, new_v, slot_mapping):
    """Store row ``i`` of ``new_k`` and ``new_v`` (``[num_tokens, num_kv_heads, head_dim]``) at slot
    ``slot_mapping[i]`` of ``k_cache`` and ``v_cache``; returns ``None``.

    The write lands in the very arrays the caller passed (the engine keeps them). A negative slot
    (vLLM's ``PAD_SLOT_ID = -1``) is a padding row and writes nothing. Every slot not named in
    ``slot_mapping`` keeps its value; ``new_k``, ``new_v`` and ``slot_mapping`` are only read.
    """
    slot_mapping = _check_write(k_cache, v_cache, new_k, new_v, slot_mapping)
    raise NotImplementedError(
        "write_kv: not implemented yet (README step 2: store new_k[i], new_v[i] at slot slot_mapping[i] "
        "of the caller's caches, in place; negative slots write nothing)"
    )


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    """Attention of one decode query ``q [num_heads, head_dim]`` over the first ``seq_len`` tokens of
    a sequence stored in the paged caches through ``block_table``.

    Query head ``h`` attends with KV head ``h // (num_heads // num_kv_heads)`` (grouped-query
    attention); scores are ``q . k / sqrt(head_dim)``. Returns a new float64 array
    ``[num_heads, head_dim]``: dense softmax attention over the sequence's tokens in logical order,
    whatever the caches' dtype; zeros when ``seq_len`` is 0. Slots past ``seq_len`` (the rest of the
    last block, table entries past the sequence's end) hold no token of this sequence and must not
    change the result. Finite for scores far past ``exp``'s range (+-1000). Modifies no input.
    """
    q = np.asarray(q, dtype=np.float64)
    block_table = _as_block_table(block_table)
    _check_attention(q, k_cache, v_cache, block_table, seq_len, block_size)
    raise NotImplementedError(
        "paged_attention: not implemented yet (README step 3: gather the seq_len tokens through "
        "block_table, then softmax(K q / sqrt(head_dim)) @ V for each query head)"
    )


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
