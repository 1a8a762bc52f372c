"""Gathers seq_len + 1 rows (an off-by-one in the loop bound, `<= seq_len`).

Symptom: the first unused slot (poisoned) joins every head's softmax; when seq_len
fills its blocks exactly, the extra row needs a block the table does not have and
numpy raises IndexError.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_partial_tail_block_is_masked", "test_paged_matches_dense_exactly", "test_chunked_prefill_write_path"]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table, dtype=np.int64)
    num_heads, head_dim = q.shape
    out = np.zeros((num_heads, v_cache.shape[3]))
    if seq_len == 0:
        return out
    t = np.arange(seq_len + 1)  # BUG: one row past the end
    k = k_cache[block_table[t // block_size], t % block_size]
    v = v_cache[block_table[t // block_size], t % block_size]
    group = num_heads // k_cache.shape[2]
    for h in range(num_heads):
        scores = k[:, h // group, :] @ q[h] / np.sqrt(head_dim)
        weights = np.exp(scores - scores.max())
        out[h] = (weights / weights.sum()) @ v[:, h // group, :]
    return out


globals().update(solution_with(__file__, paged_attention=paged_attention))
