"""Grouped-query mapping written as h // num_kv_heads (dividing by the wrong count).

Symptom: the two agree only when num_heads == num_kv_heads ** 2 (e.g. 4 query heads over 2 KV
heads) or for multi-query attention; plain multi-head attention sends every query head to KV
head 0, and other ratios read the wrong KV head or one past the last (IndexError).
"""

CAUGHT_BY = ["test_gqa_matches_dense", "test_paged_matches_dense_exactly"]

EDIT = (
    "        kv_head = h // group\n",
    "        kv_head = h // num_kv_heads  # should divide by the group size, num_heads // num_kv_heads\n",
)
