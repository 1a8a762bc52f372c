"""Lab 04-01, reference solution: paged attention in one streaming pass (online softmax).

``dense_attention`` is the slow truth: every score at once, an ordinary softmax.
``paged_online_attention`` visits the sequence's logical blocks in order, reading
each through the block table, and keeps only three running quantities:

- ``m``: the largest score seen so far,
- ``denom``: the sum of ``exp(score - m)`` over the tokens seen so far,
- ``acc``: the sum of ``exp(score - m) * v`` over the same tokens (not yet divided).

When a block raises the maximum, the history was summed on the old scale; the
correction factor ``corr = exp(m_old - m_new)`` moves it onto the new one. The
answer is ``acc / denom``. Scores are ``q . k / sqrt(d)``; caches are
``[num_blocks, block_size, d]`` and logical token ``t`` lives at
``cache[block_table[t // block_size], t % block_size]``.
"""

from __future__ import annotations

import numpy as np
from _checks import _check_dense, _check_paged  # given: the input checks, in _checks.py


def dense_attention(q, k, v):
    """Attention of one query ``q [d]`` over keys ``k [n, d]`` and values ``v [n, d]``, all at once.

    Returns float64 ``[d]``; zeros when ``n`` is 0. The slow, obvious truth the streaming
    version must agree with.
    """
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    _check_dense(q, k, v)
    if k.shape[0] == 0:
        return np.zeros(v.shape[1])
    scores = k @ q / np.sqrt(q.shape[0])  # [n]
    weights = np.exp(scores - scores.max())  # max first: every exponent <= 0
    return (weights / weights.sum()) @ v


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    """Attention of ``q [d]`` over the first ``seq_len`` tokens of a paged cache, streamed block by block.

    One pass over the logical blocks covering ``[0, seq_len)``; only one block's scores exist at
    a time. ``q`` and the caches are float16, float32 or float64; the result is float64 ``[d]``
    whatever their dtypes; zeros when ``seq_len`` is 0.
    """
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table)
    _check_paged(q, k_cache, v_cache, block_table, seq_len, block_size)
    scale = 1.0 / np.sqrt(q.shape[0])

    m = -np.inf  # running max: nothing seen yet
    denom = 0.0  # running sum of exp(score - m)
    acc = np.zeros(v_cache.shape[2])  # running sum of exp(score - m) * v

    for start in range(0, seq_len, block_size):
        physical = block_table[start // block_size]
        valid = min(block_size, seq_len - start)  # the last block may be partial
        k_block = np.asarray(k_cache[physical, :valid], dtype=np.float64)
        v_block = np.asarray(v_cache[physical, :valid], dtype=np.float64)

        s = k_block @ q * scale  # this block's scores, [valid]
        m_new = max(m, s.max())
        # History was summed relative to m; rescale it to m_new. On the first block there is
        # no history (m = -inf): corr is 0 by definition. (exp(-inf - m_new) is 0 anyway while
        # m_new is finite; a kernel's masked block can have m_new = -inf too, and then
        # exp(-inf - (-inf)) is NaN: bugs/first_block_corr_nan.py.)
        corr = np.exp(m - m_new) if m != -np.inf else 0.0
        p = np.exp(s - m_new)  # weights of this block's tokens, relative to m_new
        acc = acc * corr + p @ v_block
        denom = denom * corr + p.sum()
        m = m_new

    if seq_len == 0:
        return acc  # nothing attended: zeros, not 0/0
    return acc / denom
