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
from _checks import _as_block_table, _check_attention, _check_slot_blocks, _check_token_range, _check_write


def build_slot_mapping(block_table, block_size, start, num_tokens):
    """The flat cache slot of each logical token ``start .. start + num_tokens - 1``.

    ``block_table`` is any 1-D integer array (or list) of physical block ids. Returns an int64
    array ``[num_tokens]``: a decode step is ``start = seq_len, num_tokens = 1``; a prefill chunk
    is its whole range, starting mid-sequence (often mid-block). The entries those tokens use are
    ids >= 0 whose slots fit in int64 (ValueError otherwise).
    """
    block_table = _as_block_table(block_table)
    _check_token_range(block_table, block_size, start, num_tokens)
    _check_slot_blocks(block_table, block_size, start, num_tokens)
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
    ``q . k / sqrt(head_dim)``. ``q`` and the caches are float16, float32 or float64; the result is
    float64 ``[num_heads, head_dim]`` whatever their dtypes; zeros when ``seq_len`` is 0. Reads
    only, and only the sequence's tokens.
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
