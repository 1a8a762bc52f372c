"""The rotary table's rows read ``head_dim`` apart, not at the table's row stride.

Right while ``cos_sin`` is a contiguous table; a table whose rows are strided (a view of a wider
buffer, or every other row of a taller one, which the docstring accepts) hands each token the angles
of another position, and the rotated queries and keys are wrong.
"""

CAUGHT_BY = ["test_rotary_and_cache_contract"]

EDIT = (
    "        num_tokens, qkv.stride(0), q_out.stride(0), q_out.stride(1), cos_sin.stride(0), block_size,\n",
    "        num_tokens, qkv.stride(0), q_out.stride(0), q_out.stride(1), head_dim, block_size,\n",
)
