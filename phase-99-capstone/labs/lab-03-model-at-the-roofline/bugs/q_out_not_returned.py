"""``rotary_and_cache`` writes ``q_out`` and then returns nothing (the docstring returns ``q_out``).

The runner passes its own query buffer and reads that, so the engine's tokens are right; a caller
that takes the result (``q = rotary_and_cache(...)``, as the docstring allows) gets ``None``.
"""

CAUGHT_BY = ["test_rotary_and_cache_matches_float64"]

EDIT = (
    "        V_BLOCK=triton.next_power_of_2(num_kv_heads * head_dim), num_warps=num_warps_for(rows * q_block),\n"
    "    )\n"
    "    return q_out\n",
    "        V_BLOCK=triton.next_power_of_2(num_kv_heads * head_dim), num_warps=num_warps_for(rows * q_block),\n"
    "    )\n",
)
