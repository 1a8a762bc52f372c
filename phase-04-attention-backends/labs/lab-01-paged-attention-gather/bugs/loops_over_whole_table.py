"""The loop visits every entry of the block table instead of the blocks that cover seq_len.

Symptom: right whenever the table holds exactly ceil(seq_len / block_size) entries. Past the last
block, valid = seq_len - start turns negative and numpy's slice [:valid] quietly means "all but
the last few rows": padding blocks of a batched table (the null block, poisoned in the tests)
join the softmax.
"""

CAUGHT_BY = ["test_matches_dense_partial_last_block", "test_many_block_sizes"]

EDIT = (
    "    for start in range(0, seq_len, block_size):\n",
    "    for start in range(0, len(block_table) * block_size, block_size):  # every entry of the table\n",
)
