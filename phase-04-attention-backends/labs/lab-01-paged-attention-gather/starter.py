"""Lab 04-01, your work: paged attention in one streaming pass (online softmax).

Implement ``dense_attention`` first (README step 1), then ``paged_online_attention``
(steps 2-4), and run ``labs check 04-01 --impl starter`` (or
``LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-01-paged-attention-gather``).

Scores are ``q . k / sqrt(d)``; caches are ``[num_blocks, block_size, d]`` and logical token ``t``
lives at ``cache[block_table[t // block_size], t % block_size]``.

The input checks at the bottom are written for you and already called at the top of each
function: keep those calls, so bad input gets a clear message.
"""

from __future__ import annotations

import numpy as np


def dense_attention(q, k, v):
    """Attention of one query ``q [d]`` over keys ``k [n, d]`` and values ``v [n, d]``, all at once.

    Returns a new float64 array ``[d]``: ``softmax(scores) @ v`` with ``scores = k @ q / sqrt(d)``,
    finite even when the scores are far outside ``exp``'s range (+-1000); zeros when ``n`` is 0.
    Modifies no input.
    """
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    _check_dense(q, k, v)
    raise NotImplementedError(
        "dense_attention: not implemented yet (README step 1: softmax(k @ q / sqrt(d)) @ v, "
        "max subtracted before exp, zeros when n == 0)"
    )


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    """Attention of ``q [d]`` over the first ``seq_len`` tokens of a paged cache, in one streaming pass.

    The result equals ``dense_attention`` over those tokens in logical order (to rounding): a new
    float64 array ``[d]`` whatever the dtypes of ``q`` and the caches (float16, float32 or float64);
    zeros when ``seq_len`` is 0. The pass visits the logical blocks that cover ``[0, seq_len)`` in
    order, each once, and never exponentiates more than one block's scores at a time. Slots past
    ``seq_len`` (the rest of the last block, table entries past the sequence's end) must not change
    the result. Finite for scores far past ``exp``'s range (+-1000). Modifies no input.
    """
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table)
    _check_paged(q, k_cache, v_cache, block_table, seq_len, block_size)
    raise NotImplementedError(
        "paged_online_attention: not implemented yet (README steps 2-4: loop over the logical blocks of "
        "[0, seq_len) through block_table, update m, denom, acc with the correction factor, return acc / denom)"
    )


# --- input checks (given in the starter too): a clear message instead of an IndexError from inside
# numpy, or worse, a silent wrong answer (numpy reads a negative block id from the end of the cache).


def _check_dense(q, k, v):
    if q.ndim != 1:
        raise ValueError(f"q must be [d], got shape {q.shape}")
    if k.ndim != 2 or k.shape[1] != q.shape[0]:
        raise ValueError(f"k must be [n, d] with d = {q.shape[0]}, got shape {k.shape}")
    if v.ndim != 2 or v.shape[0] != k.shape[0]:
        raise ValueError(f"v must be [n, d] with n = {k.shape[0]} (one row per key), got shape {v.shape}")


def _check_paged(q, k_cache, v_cache, block_table, seq_len, block_size):
    if q.ndim != 1:
        raise ValueError(f"q must be [d], got shape {q.shape}")
    if np.ndim(k_cache) != 3 or np.ndim(v_cache) != 3:
        raise ValueError("k_cache and v_cache must be [num_blocks, block_size, d]")
    if k_cache.shape[2] != q.shape[0]:
        raise ValueError(f"q has d={q.shape[0]}, the key cache d={k_cache.shape[2]}")
    if int(block_size) < 1 or k_cache.shape[1] != block_size:
        raise ValueError(f"block_size={block_size} but the caches hold blocks of {k_cache.shape[1]} tokens")
    if int(seq_len) < 0:
        raise ValueError(f"seq_len must be >= 0, got {seq_len}")
    needed = -(-int(seq_len) // int(block_size))
    if block_table.ndim != 1 or (block_table.size and not np.issubdtype(block_table.dtype, np.integer)):
        raise ValueError(f"block_table must be a 1-D integer array, got shape {block_table.shape}")
    if needed > len(block_table):
        raise ValueError(f"seq_len={seq_len} needs {needed} blocks of {block_size}; block_table has {len(block_table)}")
    used = block_table[:needed]
    if used.size and (used.min() < 0 or used.max() >= k_cache.shape[0]):
        raise ValueError(f"block_table {used.tolist()} names a block outside the cache's 0..{k_cache.shape[0] - 1}")
