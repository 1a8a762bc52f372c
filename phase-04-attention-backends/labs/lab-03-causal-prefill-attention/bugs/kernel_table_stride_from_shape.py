"""Kernel launch: the table's row stride taken as ``max_blocks``, as if the table were contiguous.

A table cut from a wider one (``wide[:, :max_blocks]``) or taken every other row has a longer row
stride. Symptom: right for a contiguous table; with a view every sequence after the first reads its
block ids out of another row, or out of the columns past the cut.
"""

CAUGHT_BY = ["test_kernel_memory_layouts_engines_pass"]

EDIT = (
    "        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0),\n",
    "        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.shape[1],  # as if contiguous\n",
)
