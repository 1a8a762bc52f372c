"""The reference flattens the caches with ``view`` instead of ``reshape``.

``view`` never copies, so it only works when the memory already has the new shape's layout: every
contiguous cache passes. K and V as the halves of one fused pool are views whose blocks are not
next to each other, and ``view`` refuses them. Symptom: a RuntimeError ("view size is not
compatible with input tensor's size and stride") on the layouts engines pass.
"""

CAUGHT_BY = ["test_cache_layouts_engines_pass"]

EDITS = [
    (
        "    k_rows = k_cache.reshape(num_blocks * block_size, num_kv_heads, head_dim)\n",
        "    k_rows = k_cache.view(num_blocks * block_size, num_kv_heads, head_dim)\n",
    ),
    (
        "    v_rows = v_cache.reshape(num_blocks * block_size, num_kv_heads, head_dim)\n",
        "    v_rows = v_cache.view(num_blocks * block_size, num_kv_heads, head_dim)\n",
    ),
]
