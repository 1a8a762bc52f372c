"""The block-id check reads every entry of the tables, padding included.

Entries past a sequence's blocks are padding: the kernel never reads them, and engines fill them
with anything (-1, say). Symptom: a batch whose tables are padded with -1 is refused with "block_tables
holds block ids outside the cache's [0, num_blocks)".
"""

SOURCE = "labkit/block_table.py"  # the block-id check the given input checks call

# The value checks run for CPU tensors only: on a GPU they would cost a synchronization per call.
SHOWS_ON = ["cpu"]

CAUGHT_BY = ["test_kernel_table_padding_is_never_checked"]

EDIT = (
    "    return block_tables[columns < blocks_needed(lens, block_size)[:, None]]\n",
    "    return block_tables.flatten()  # BUG: the padding checked too\n",
)
