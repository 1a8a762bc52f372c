"""Lab 04-01, your work: paged attention in one streaming pass (online softmax).

Implement ``dense_attention`` first (README step 1), then ``paged_online_attention``
(steps 2-4), and run
``LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-01-paged-attention-gather``.

Scores are ``q . k / sqrt(d)``; caches are ``[num_blocks, block_size, d]`` and
logical token ``t`` lives at ``cache[block_table[t // block_size], t % block_size]``.
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (you will need it)


def dense_attention(q, k, v):
    """Attention of one query ``q [d]`` over keys ``k [n, d]`` and values ``v [n, d]``, all at once.

    Returns float64 ``[d]``; zeros when ``n`` is 0.

    Recipe: scores = k @ q / sqrt(d); subtract their max; exp; divide by the sum; weight v.
    """
    raise NotImplementedError(
        "dense_attention: not implemented yet (README step 1: softmax(k @ q / sqrt(d)) @ v, "
        "max subtracted before exp, zeros when n == 0)"
    )


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    """Attention of ``q [d]`` over the first ``seq_len`` tokens of a paged cache, streamed block by block.

    One pass over the logical blocks covering ``[0, seq_len)``; only one block's
    scores exist at a time. Returns float64 ``[d]``; zeros when ``seq_len`` is 0.

    Recipe: m = -inf, denom = 0, acc = zeros(d); for each logical block read the
    valid rows through the block table, then update (m, denom, acc) with the
    correction factor corr = exp(m - m_new); finally acc / denom.
    """
    raise NotImplementedError(
        "paged_online_attention: not implemented yet (README steps 2-4: loop over logical blocks, read "
        "min(block_size, seq_len - start) rows via block_table, update m/denom/acc with corr = exp(m - m_new))"
    )
