"""Grouped-query mapping written as h % num_kv_heads instead of h // (num_heads // num_kv_heads).

Symptom: right for multi-head (one query head per KV head) and multi-query (one KV head)
attention, wrong for every ratio in between: query heads read interleaved KV heads instead of
contiguous groups.
"""

CAUGHT_BY = ["test_gqa_matches_dense", "test_chunked_prefill_write_path"]

EDIT = (
    "        kv_head = h // group\n",
    "        kv_head = h % num_kv_heads  # should be h // (num_heads // num_kv_heads)\n",
)
