"""Cache offsets computed from the shape, as if the caches were contiguous, instead of from their strides.

``physical * block_size * num_kv_heads * head_dim`` is a block's offset only in a contiguous cache.
Engines hand the kernel views: K and V as the halves ``kv[:, 0]``, ``kv[:, 1]`` of one fused pool
(its block stride twice a block), or a pool stored with the heads outside the slots. Symptom: right
on every contiguous cache; on a view, every token's row is read from the wrong place.
"""

CAUGHT_BY = ["test_cache_layouts_engines_pass"]

EDIT = (
    "        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),\n",
    "        block_size * num_kv_heads * head_dim, num_kv_heads * head_dim, head_dim,  # as if contiguous\n",
)
