"""Gathers len(block_table) * block_size rows instead of seq_len.

The unused tail of the last block, and any padding entries of the table, join the softmax.

Symptom: right whenever seq_len fills its blocks exactly and the table has no spare entries;
off by orders of magnitude (or NaN) as soon as the tail holds poison.
"""

CAUGHT_BY = ["test_partial_tail_block_is_masked", "test_paged_matches_dense_exactly", "test_gqa_matches_dense"]

EDIT = (
    "    t = np.arange(seq_len)\n",
    "    t = np.arange(len(block_table) * block_size)  # every slot the table names\n",
)
