"""The rotated queries placed at ``head * head_dim`` in ``q_out``, not at its head stride.

Right while ``q_out`` is contiguous; a ``q_out`` whose heads sit in wider rows (a view into a
larger buffer, which the docstring accepts) gets each head written across the previous one's
padding and the next head's start.
"""

CAUGHT_BY = ["test_rotary_and_cache_contract"]

EDIT = (
    "    q_row = q_out_ptr + tokens[:, None] * stride_q_token + (head * stride_q_head)[None, :]\n",
    "    q_row = q_out_ptr + tokens[:, None] * stride_q_token + (head * HEAD_DIM)[None, :]\n",
)
