"""BlockPool never checks that num_gpu_blocks is a positive int.

A pool of 0 or -3 blocks still fails, by luck, when the empty queue refuses to give up a null
block; a pool of 2.5 blocks fails inside range() with a TypeError that says nothing about the
argument. Symptom: BlockPool(2.5) raises TypeError, not a ValueError naming num_gpu_blocks.
"""

CAUGHT_BY = ["test_bad_input_is_a_clear_error_and_changes_nothing"]

EDIT = (
    "        if not isinstance(num_gpu_blocks, int) or num_gpu_blocks < 1:\n"
    "            raise ValueError(f\"num_gpu_blocks must be a positive integer, got {num_gpu_blocks!r}\")\n",
    "",
)
