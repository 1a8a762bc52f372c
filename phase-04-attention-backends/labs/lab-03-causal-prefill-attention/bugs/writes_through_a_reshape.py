"""prefill_chunk writes the chunk through ``cache.reshape(-1, num_kv_heads, head_dim)[slots]``.

A reshape is a view only when the memory allows it. For a contiguous cache it does, and the write
lands; for the views engines pass (K and V as halves of one fused pool, a pool stored heads outside
the slots) numpy must copy, and the chunk is written into that copy and lost. Symptom: right on
contiguous caches; on a view, each chunk attends to whatever its own slots held before (NaN here),
and the cache never holds the prompt.
"""

CAUGHT_BY = ["test_prefill_chunk_on_the_views_engines_pass"]

EDIT = (
    "    WRITE_PATH.write_kv(k_cache, v_cache, new_k, new_v, slots)\n",
    "    for cache, new in ((k_cache, new_k), (v_cache, new_v)):\n"
    "        cache.reshape(-1, *cache.shape[2:])[slots] = new  # a copy when the cache is a view\n",
)
