"""Wrong GQA grouping: the program of KV head j takes query heads j, j + num_kv_heads, ...
(h % num_kv_heads) instead of j * GROUP .. j * GROUP + GROUP - 1 (h // GROUP).

Symptom: right without GQA (one head per group), wrong for every grouped model.
"""

CAUGHT_BY = ["test_one_split_matches_reference", "test_gqa_grouping"]

EDIT = (
    "    heads = kv_head * GROUP + rows\n",
    "    heads = rows * tl.num_programs(1) + kv_head  # interleaved: h % num_kv_heads\n",
)
