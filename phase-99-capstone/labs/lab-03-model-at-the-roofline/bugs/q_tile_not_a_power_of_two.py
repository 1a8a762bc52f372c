"""The queries' tile as wide as the heads' first halves, not rounded up to a power of two.

Right while ``num_heads * head_dim / 2`` is a power of two (8 heads of 16 or of 64); for heads of 24 or
80, or 6 or 28 query heads, ``tl.arange`` gets a width that is no power of two and Triton refuses to
compile the kernel.
"""

CAUGHT_BY = ["test_rotary_and_cache_any_head_shape"]

EDIT = (
    "    q_block = triton.next_power_of_2(num_heads * head_dim // 2)\n",
    "    q_block = num_heads * head_dim // 2\n",
)
