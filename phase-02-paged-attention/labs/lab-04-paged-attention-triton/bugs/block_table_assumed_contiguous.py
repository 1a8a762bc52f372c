"""The kernel is handed ``block_table`` as it came: ``block_table_ptr + logical`` assumes a stride of 1.

Symptom: right for a table of its own, wrong for a 1-D view with another stride (a column of a 2-D
tensor, every other entry of a longer table): the kernel reads the entries beside the view's, ids of
blocks the sequence does not use, and their NaN reaches the output.
"""

CAUGHT_BY = ["test_block_table_of_any_strides"]

EDIT = (
    "        out, q, k_cache, v_cache, block_table.contiguous(),\n",
    "        out, q, k_cache, v_cache, block_table,  # BUG: its stride never looked at\n",
)
