"""Kernel: sequence ``s`` finds its block table at ``block_tables + s``, not ``+ s * stride``.

The table is a 2-D tensor: row ``s`` starts ``s * max_blocks`` entries in. Without the row
stride, every sequence but the first reads a window of the first row (and the next rows' start):
other sequences' blocks. Right for a batch of one.
"""

CAUGHT_BY = ["test_kernel_ragged_batch", "test_kernel_one_token_chunks_are_decode_steps"]

EDIT = (
    "    table = block_tables_ptr + seq.to(tl.int64) * stride_table\n",
    "    table = block_tables_ptr + seq  # BUG: the row stride forgotten\n",
)
