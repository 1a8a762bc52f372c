"""Cache offsets computed from the shape, as if the caches were contiguous, instead of from their strides.

``block * block_size * num_kv_heads * head_dim`` is the block's offset only in a contiguous cache.
Engines hand the kernel views: K and V as the halves ``kv[:, 0]``, ``kv[:, 1]`` of one fused pool
(a block stride twice as long), or a pool stored with the heads outside the slots. Symptom: right
on every contiguous cache; on a view, each token's row is read from the wrong place (another
block's V, or poison).
"""

CAUGHT_BY = ["test_memory_layouts_engines_pass"]

EDIT = (
    "        partition_size, block_tables.shape[1], k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),\n",
    "        partition_size, block_tables.shape[1], block_size * num_kv_heads * head_dim, num_kv_heads * head_dim,\n"
    "        head_dim,  # as if contiguous\n",
)
