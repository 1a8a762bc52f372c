"""Grouped-query mapping ``h % num_kv_heads`` instead of ``h // (num_heads // num_kv_heads)``.

Right for multi-head (one query head per KV head) and multi-query attention (one KV head);
for every ratio in between, query heads read interleaved KV heads instead of their group's.
"""

CAUGHT_BY = ["test_grouped_query_heads", "test_chunked_equals_one_shot"]

EDIT = (
    "            kv_head = h // group\n",
    "            kv_head = h % k_cache.shape[2]  # BUG: interleaved groups\n",
)
