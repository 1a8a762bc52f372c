"""The block-id check counts a sequence's blocks with a floor division: its last, partly filled
block is never checked.

Symptom: an id outside the pool in that block reaches the kernel, which reads outside the cache (on
a GPU an illegal memory access, or another sequence's keys) instead of a ValueError naming
paged_decode.
"""

CAUGHT_BY = ["test_a_block_id_outside_the_pool_in_a_sequences_last_block_is_refused"]

SOURCE = "_host.py"  # the input checks are given: they live in _host.py

EDIT = (
    "        used = torch.arange(block_tables.shape[1]) < ((lens + block_size - 1) // block_size)[:, None]\n",
    "        used = torch.arange(block_tables.shape[1]) < (lens // block_size)[:, None]\n",
)
