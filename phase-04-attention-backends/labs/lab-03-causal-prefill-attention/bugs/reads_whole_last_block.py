"""The last block is read to its end instead of to ``start + M``; the mask is left to hide it.

The extra rows are future positions, so the causal mask gives them weight exp(-inf) = 0. With a
huge finite value there, 0 * 1e6 = 0 and nothing shows; with NaN or inf, 0 * NaN = NaN and the
output is NaN. Masking the scores is not masking the reads.
"""

CAUGHT_BY = ["test_future_positions_are_poisoned", "test_chunked_equals_one_shot"]

EDIT = (
    "        valid = min(block_size, seq_len - block_start)  # the last block may be partial\n",
    "        valid = block_size  # BUG: the whole last block, its future slots included\n",
)
