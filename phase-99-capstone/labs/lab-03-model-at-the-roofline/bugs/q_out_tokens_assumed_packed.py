"""The rotated queries' token stride taken as ``num_heads`` head strides, not ``q_out``'s own.

Right while each token's heads fill its row of ``q_out`` (contiguous, or heads in wider rows with
nothing after the last); a ``q_out`` whose tokens sit further apart (a view of a wider buffer, which
the docstring accepts) gets every token after the first written into the previous token's spare room.
"""

CAUGHT_BY = ["test_rotary_and_cache_contract"]

EDIT = (
    "        num_tokens, qkv.stride(0), q_out.stride(0), q_out.stride(1), cos_sin.stride(0), block_size,\n",
    "        num_tokens, qkv.stride(0), num_heads * q_out.stride(1), q_out.stride(1), cos_sin.stride(0), block_size,\n",
)
