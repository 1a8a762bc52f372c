"""Grouped-query mapping ``h // num_kv_heads`` instead of ``h // (num_heads // num_kv_heads)``.

It divides by the wrong count: right when the group size equals the number of KV heads (4 query
heads over 2 KV heads), wrong for every other ratio: with 6 over 2, query head 2 reads KV head 1
instead of 0, and heads 4 and 5 ask for a KV head that does not exist.
"""

CAUGHT_BY = ["test_grouped_query_heads"]

EDIT = (
    "            kv_head = h // group\n",
    "            kv_head = h // k_cache.shape[2]  # BUG: divided by num_kv_heads, not by the group size\n",
)
