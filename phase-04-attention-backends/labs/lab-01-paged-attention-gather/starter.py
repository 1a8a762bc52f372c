"""Lab 04-01, your work: paged attention in one streaming pass (online softmax).

Implement ``dense_attention`` first (README step 1), then ``paged_online_attention``
(steps 2-4), and run ``labs check 04-01 --impl starter`` (or
``LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-01-paged-attention-gather``).

Scores are ``q . k / sqrt(d)``; caches are ``[num_blocks, block_size, d]`` and logical token ``t``
lives at ``cache[block_table[t // block_size], t % block_size]``.

The input checks are given (``_check_dense``, ``_check_paged``, in ``_checks.py``) and already
called at the top of each function: keep those calls, so bad input gets a clear message.
"""

from __future__ import annotations

import numpy as np
from _checks import _check_dense, _check_paged  # given: the input checks, in _checks.py


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
    the result. Finite for scores far past ``exp``'s range (+-1000). ``seq_len`` and ``block_size``
    are Python or numpy integers (unsigned ones too). Modifies no input.
    """
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table)
    _check_paged(q, k_cache, v_cache, block_table, seq_len, block_size)
    raise NotImplementedError(
        "paged_online_attention: not implemented yet (README steps 2-4: loop over the logical blocks of "
        "[0, seq_len) through block_table, update m, denom, acc with the correction factor, return acc / denom)"
    )
