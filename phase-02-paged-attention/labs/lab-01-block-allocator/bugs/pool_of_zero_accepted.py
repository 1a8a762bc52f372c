"""BlockPool checks num_gpu_blocks < 0 instead of < 1: a pool of 0 blocks gets past the check.

It then fails taking its null block out of an empty queue, with the queue's "no free blocks"
ValueError, which says nothing about the argument. Symptom: BlockPool(0) raises a ValueError that
does not name num_gpu_blocks.
"""

CAUGHT_BY = ["test_bad_input_is_a_clear_error_and_changes_nothing"]

EDIT = (
    "        if not isinstance(num_gpu_blocks, int) or num_gpu_blocks < 1:\n",
    "        if not isinstance(num_gpu_blocks, int) or num_gpu_blocks < 0:\n",
)
