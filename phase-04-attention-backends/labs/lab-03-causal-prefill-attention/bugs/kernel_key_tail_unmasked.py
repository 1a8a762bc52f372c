"""Kernel: keys are loaded up to the end of the last block they touch, not up to the last key needed.

The extra keys lie in the future of every row, so the causal mask gives them weight 0: with
huge finite poison in the tail of a sequence's last block nothing shows (0 * 3e4 = 0), with NaN
or inf the P.V product turns NaN (0 * NaN). The mask on the scores does not make the reads safe.
"""

CAUGHT_BY = ["test_kernel_future_and_unused_slots_are_poison"]

EDIT = (
    "        key_ok = t < key_hi  # the last tile of the range may run past it\n",
    "        key_ok = t < tl.cdiv(key_hi, BLOCK_SIZE) * BLOCK_SIZE  # BUG: to the end of the last block\n",
)
