"""Logical block i is read from physical block i: the block table is never consulted.

Symptom: right only for the identity table [0, 1, 2, ...]; any scattered placement reads other
blocks (in the tests: poisoned ones).
"""

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_paging_invariance", "test_many_block_sizes"]

EDIT = (
    "        physical = block_table[start // block_size]\n",
    "        physical = start // block_size  # should be block_table[start // block_size]\n",
)
