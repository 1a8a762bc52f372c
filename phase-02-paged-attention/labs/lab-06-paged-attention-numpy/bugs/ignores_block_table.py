"""Reads the cache as if it were contiguous: logical block i taken from physical block i.

Symptom: right only when the block table is the identity [0, 1, 2, ...] (as in a freshly
started engine, or a test that never shuffles); any real table gathers other sequences' blocks
or unused (poisoned) ones.
"""

CAUGHT_BY = ["test_paged_matches_dense_exactly", "test_indirection_is_the_identity", "test_gqa_matches_dense"]

EDIT = (
    "    blocks, offsets = block_table[t // block_size], t % block_size\n",
    "    blocks, offsets = t // block_size, t % block_size  # the block table is never consulted\n",
)
