"""No special case for seq_len == 0: the softmax runs over an empty row.

Symptom: fine for every non-empty sequence; a request with nothing cached yet
crashes (numpy: "zero-size array to reduction operation maximum") where it should
return zeros. Kernels that skip the max instead return 0/0 = NaN.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_empty_sequence_gives_zeros"]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table, dtype=np.int64)
    num_heads, head_dim = q.shape
    out = np.zeros((num_heads, v_cache.shape[3]))
    # BUG: no `if seq_len == 0: return out`
    t = np.arange(seq_len)
    k = k_cache[block_table[t // block_size], t % block_size]
    v = v_cache[block_table[t // block_size], t % block_size]
    group = num_heads // k_cache.shape[2]
    for h in range(num_heads):
        scores = k[:, h // group, :] @ q[h] / np.sqrt(head_dim)
        weights = np.exp(scores - scores.max())
        out[h] = (weights / weights.sum()) @ v[:, h // group, :]
    return out


globals().update(solution_with(__file__, paged_attention=paged_attention))
