"""A vectorized softmax normalized over the head axis instead of the token axis.

Symptom: scores are computed as one [num_heads, seq_len] matrix and the max/sum run
over axis 0, so each token's weights sum to 1 across heads instead of each head's
weights summing to 1 across tokens: outputs of the wrong magnitude.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_paged_matches_dense_exactly", "test_gqa_matches_dense", "test_indirection_is_the_identity"]


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    block_table = np.asarray(block_table, dtype=np.int64)
    num_heads, head_dim = q.shape
    out = np.zeros((num_heads, v_cache.shape[3]))
    if seq_len == 0:
        return out
    t = np.arange(seq_len)
    kv_of_head = np.arange(num_heads) // (num_heads // k_cache.shape[2])
    k = k_cache[block_table[t // block_size], t % block_size][:, kv_of_head]  # [seq_len, num_heads, d]
    v = v_cache[block_table[t // block_size], t % block_size][:, kv_of_head]
    scores = np.einsum("thd,hd->ht", k, q) / np.sqrt(head_dim)
    weights = np.exp(scores - scores.max(axis=0, keepdims=True))  # BUG: axis=0 is the head axis
    weights /= weights.sum(axis=0, keepdims=True)
    return np.einsum("ht,thd->hd", weights, v)


globals().update(solution_with(__file__, paged_attention=paged_attention))
