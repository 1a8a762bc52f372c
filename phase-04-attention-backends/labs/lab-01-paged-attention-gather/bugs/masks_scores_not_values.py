"""Reads whole blocks and masks only the tail's scores: the tail's values still get multiplied.

The scores past seq_len get -inf (weight 0), the way a kernel that loads full tiles might mask
them.

The weights are right, but the tail's values still enter p @ v_block, multiplied by 0. A huge
finite poison times 0 is 0, so the 1e6 poison cannot see this; NaN or inf in the tail make
0 * NaN = NaN. Real memory past the end usually holds finite garbage, which is why this bug ships.
(vLLM's CUDA kernel reads whole blocks too, and replaces the tail's values by zeros before
weighting them, for this very reason.)
"""

CAUGHT_BY = ["test_matches_dense_partial_last_block", "test_many_block_sizes"]

EDITS = [
    ("        valid = min(block_size, seq_len - start)  # the last block may be partial\n",
     "        valid = block_size  # whole blocks: the scores past seq_len are masked below\n"),
    ("        s = k_block @ q * scale  # this block's scores, [valid]\n",
     "        s = np.where(start + np.arange(block_size) < seq_len, k_block @ q * scale, -np.inf)  # scores only\n"),
]
