"""Each block is softmax-normalized on its own and the block outputs are averaged.

Symptom: every block gets the same total weight, however well its keys match the
query; exact only when there is a single block, wrong for any longer sequence.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_running_max_rises_and_falls", "test_many_block_sizes"]


def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    q = np.asarray(q, dtype=np.float64)
    scale = 1.0 / np.sqrt(q.shape[0])
    outputs = []
    for start in range(0, seq_len, block_size):
        physical = block_table[start // block_size]
        valid = min(block_size, seq_len - start)
        s = k_cache[physical, :valid] @ q * scale
        p = np.exp(s - s.max())
        outputs.append((p / p.sum()) @ v_cache[physical, :valid])  # BUG: normalized per block
    return np.mean(outputs, axis=0) if outputs else np.zeros(v_cache.shape[2])


globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))
