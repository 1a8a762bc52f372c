"""``argmax_rows`` of no rows returns before it returns ``out``: ``None`` instead of an empty int64
tensor.

The runner never samples zero rows, so the engine is right; a caller that samples an empty batch and
reads the result fails on ``None``.
"""

CAUGHT_BY = ["test_kernels_at_the_api_limits"]

EDIT = (
    "    if num_rows == 0:\n"
    "        return out\n"
    "    rows = rows_per_program(num_rows, logits.device)\n"
    "    block = min(ARGMAX_BLOCK, triton.next_power_of_2(vocab_size))\n",
    "    if num_rows == 0:\n"
    "        return None\n"
    "    rows = rows_per_program(num_rows, logits.device)\n"
    "    block = min(ARGMAX_BLOCK, triton.next_power_of_2(vocab_size))\n",
)
