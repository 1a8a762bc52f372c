"""The block-id check counts a sequence's blocks with a floor division: its last, partly filled
block is never checked.

Symptom: an id outside the pool in that block reaches the kernel, which reads outside the cache (on
a GPU an illegal memory access, or another sequence's keys) instead of a ValueError naming
paged_decode.
"""

CAUGHT_BY = ["test_a_block_id_outside_the_pool_in_a_sequences_last_block_is_refused"]

SOURCE = "labkit/block_table.py"  # the block-id check the given input checks call

EDIT = (
    "    return block_tables[columns < blocks_needed(lens, block_size)[:, None]]\n",
    "    return block_tables[columns < (lens // block_size)[:, None]]\n",
)
