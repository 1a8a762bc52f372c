"""Not streaming: gathers every key and value through the table first, then runs an
ordinary softmax over the whole score row.

Symptom: the numbers are right (this is lab 02-06's algorithm), but the full score
row exists at once, which is exactly what the online recurrence avoids: on a GPU
that row would live in slow memory for long contexts. Only the streaming check
notices.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_streams_block_by_block"]


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    if seq_len == 0:
        return np.zeros(v_cache.shape[2])
    t = np.arange(seq_len)
    block_table = np.asarray(block_table)
    k = k_cache[block_table[t // block_size], t % block_size]
    v = v_cache[block_table[t // block_size], t % block_size]
    scores = k @ q / np.sqrt(q.shape[0])  # BUG: the whole row at once
    weights = np.exp(scores - scores.max())
    return (weights / weights.sum()) @ v


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
