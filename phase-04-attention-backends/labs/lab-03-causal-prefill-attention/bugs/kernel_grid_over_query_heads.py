"""Kernel: the grid's second axis counts query heads instead of KV heads.

Each program already covers the ``GROUP`` query heads of its KV head. With ``num_heads``
programs on that axis, the extra ones take ``kv_head >= num_kv_heads``: they read K/V past the
last KV head (the next slot's keys) and queries past the last head (the next token's), and
store their garbage there, over other rows' outputs or into the padding rows. Right only when
every query head has its own KV head.
"""

CAUGHT_BY = ["test_kernel_grouped_query_heads", "test_kernel_one_prompt_from_scratch", "test_kernel_ragged_batch"]

EDIT = (
    "    grid = (triton.cdiv(max_query_len, block_q), num_kv_heads, num_seqs)\n",
    "    grid = (triton.cdiv(max_query_len, block_q), num_heads, num_seqs)  # BUG: one program per query head\n",
)
