"""Wrong GQA head mapping: query head h reads KV head h % num_kv_heads instead of h // group.

Symptom: right for multi-head attention (group 1) and for MQA (one KV head), wrong for
grouped-query attention: with 8 query heads over 2 KV heads, head 1 reads KV head 1
instead of 0.
"""

CAUGHT_BY = ["test_grouped_query_heads", "test_triton_matches_dense"]

EDIT = (
    '    kv_head = head // GROUP\n',
    '    kv_head = head % (tl.num_programs(0) // GROUP)  # BUG: modulo the number of KV heads\n',
)
