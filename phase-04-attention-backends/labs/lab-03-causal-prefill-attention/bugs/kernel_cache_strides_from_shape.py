"""Kernel launch: the caches' strides computed from their shape, as if they were contiguous.

``block_size * num_kv_heads * head_dim`` is a block's stride only in a contiguous cache. Engines pass
views: K and V as the halves ``kv[:, 0]``, ``kv[:, 1]`` of one fused pool (a block stride twice as
long), or a pool stored with the heads outside the slots. Symptom: right on contiguous caches; on a
view every key and value row is read from the wrong place.
"""

CAUGHT_BY = ["test_kernel_memory_layouts_engines_pass"]

EDIT = (
    "        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0),\n",
    "        block_size * num_kv_heads * head_dim, num_kv_heads * head_dim, head_dim,  # as if contiguous\n"
    "        block_tables.stride(0),\n",
)
