"""Kernel: V is loaded without the key mask (only K's load is masked).

The scores of the keys past the range are masked to -inf, so their weights are exactly 0, and
K's masked load keeps them finite; it looks as if V needs no mask. But those keys' block ids
come from the table load's ``other=0``: block 0, which in vLLM is the null block that the
table's padding points at and that holds garbage. ``0 * NaN`` is NaN: a row's output turns NaN
whenever the last key tile runs past the keys the rows need.
"""

CAUGHT_BY = ["test_kernel_future_and_unused_slots_are_poison"]

EDIT = (
    "        v = tl.load(v_cache_ptr + rows[:, None] + dims[None, :], mask=key_ok[:, None], other=0.0)\n",
    "        v = tl.load(v_cache_ptr + rows[:, None] + dims[None, :])  # BUG: V read without the key mask\n",
)
