"""free_blocks checks each block as it frees it instead of calling _check_can_free first.

Every bad call still raises, but free_blocks([held, already free, held]) has decremented the first
block (and queued it, if that was its last holder) before it finds the double free. Symptom:
after a refused free, a block's ref_cnt is one lower and it may sit in the free queue.
"""

CAUGHT_BY = ["test_a_refusal_mid_list_changes_nothing"]

EDIT = (
    "        self._check_can_free(blocks)\n"
    "        for block in blocks:\n"
    "            block.ref_cnt -= 1\n",
    "        for block in blocks:\n"
    "            if block.is_null or block.ref_cnt == 0:  # checked as it goes\n"
    "                raise ValueError(\"ordered_blocks: the null block, or a double free\")\n"
    "            block.ref_cnt -= 1\n",
)
