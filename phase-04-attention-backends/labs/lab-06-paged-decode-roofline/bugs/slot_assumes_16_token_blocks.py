"""The slot within a block is computed as token % 16, as if every block held 16 tokens.

Symptom: right with vLLM's default block size of 16, wrong with blocks of 32 or 128 (the rows of
a block's second half are read from its first half).
"""

CAUGHT_BY = ["test_block_sizes_and_head_dims"]

EDIT = (
    "(token % BLOCK_SIZE) * stride_slot",
    "(token % 16) * stride_slot",
)
