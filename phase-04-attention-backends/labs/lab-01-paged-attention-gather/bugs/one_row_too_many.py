"""An off-by-one in the valid count: min(block_size, seq_len - start + 1).

Symptom: full blocks are unaffected (the min caps them), but a partial last block contributes one
extra row, the first unused slot (poisoned in the tests).
"""

CAUGHT_BY = ["test_matches_dense_partial_last_block", "test_many_block_sizes", "test_seq_len_one"]

EDIT = (
    "        valid = min(block_size, seq_len - start)  # the last block may be partial\n",
    "        valid = min(block_size, seq_len - start + 1)  # + 1: one row too many\n",
)
