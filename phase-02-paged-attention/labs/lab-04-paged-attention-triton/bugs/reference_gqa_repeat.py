"""The reference expands KV heads with .repeat instead of .repeat_interleave.

``k.repeat(1, group, 1)`` lays the KV heads out as [kv0, kv1, kv0, kv1, ...], so query head h
reads KV head h % num_kv_heads; the convention (and every engine) is h // group, which
``repeat_interleave`` gives: [kv0, kv0, ..., kv1, kv1, ...]. Symptom: right for multi-head
and multi-query attention, wrong for grouped-query heads.
"""

CAUGHT_BY = ["test_grouped_query_heads", "test_torch_reference_matches_dense_fp32"]

EDIT = (
    '    k = k.repeat_interleave(group, dim=1)  # [seq_len, num_heads, head_dim]\n'
    '    v = v.repeat_interleave(group, dim=1)\n',
    '    k = k.repeat(1, group, 1)  # BUG: head h gets KV head h % num_kv_heads\n'
    '    v = v.repeat(1, group, 1)\n',
)
