"""Query head h reads KV head h // num_kv_heads instead of h // (num_heads // num_kv_heads).

The two agree when num_heads is num_kv_heads squared (4 query heads on 2 KV heads), so a test with
that one shape passes. Symptom: 8 query heads on 2 KV heads read KV heads 0, 0, 1, 1, 2...: the
wrong keys from head 2 on, and past the last KV head an IndexError.
"""

CAUGHT_BY = ["test_rank_summaries_group_query_heads_by_kv_head"]

EDIT = (
    "            kv = h // group  # consecutive query heads share a KV head\n",
    "            kv = h // num_kv_heads\n",
)
