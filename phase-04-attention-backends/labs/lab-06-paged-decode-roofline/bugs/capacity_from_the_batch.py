"""The default split count is asked for a table of ``block_tables.shape[0]`` blocks: the batch, not
the table's width.

Symptom: the right answer, at the wrong speed: ``choose_num_splits`` plans for a table as long as
the batch is wide, so a few long sequences are not split (the GPU mostly idle) and a wide batch of
short ones is split for nothing (a needless reduce).
"""

CAUGHT_BY = ["test_one_split_launches_one_kernel_and_more_launch_two"]

EDIT = (
    "    if num_splits is None:\n        capacity = block_tables.shape[1] * block_size\n",
    "    if num_splits is None:\n        capacity = block_tables.shape[0] * block_size  # BUG: the batch\n",
)
