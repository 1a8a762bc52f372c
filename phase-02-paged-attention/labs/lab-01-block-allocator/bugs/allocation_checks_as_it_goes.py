"""get_new_blocks does not check the count first: it pops until the queue runs dry.

The queue's own popleft raises ValueError when it is empty, so asking for too many blocks still
fails, but only after the blocks before the error were taken out of the queue, their ref counts
set and their cache entries evicted: the pool has lost them. Symptom: a refused get_new_blocks that
leaves the free queue shorter.
"""

CAUGHT_BY = ["test_bad_input_is_a_clear_error_and_changes_nothing", "test_a_refusal_mid_list_changes_nothing"]

EDIT = (
    "        if num_blocks > self.get_num_free_blocks():\n"
    "            raise ValueError(f\"num_blocks={num_blocks}, but only "
    "{self.get_num_free_blocks()} blocks are free\")\n",
    "",
)
