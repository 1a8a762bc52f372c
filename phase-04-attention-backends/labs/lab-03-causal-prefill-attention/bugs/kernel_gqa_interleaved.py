"""Kernel: the tile of KV head j takes query heads j, j + num_kv_heads, ... (``h % num_kv_heads``).

Right when every query head has its own KV head, or there is one KV head for all; for groups
in between, query heads attend with another group's keys and values.
"""

CAUGHT_BY = ["test_kernel_grouped_query_heads", "test_kernel_one_prompt_from_scratch", "test_kernel_ragged_batch"]

EDIT = (
    "    head = kv_head * GROUP + r % GROUP\n",
    "    head = (r % GROUP) * tl.num_programs(1) + kv_head  # BUG: interleaved groups\n",
)
