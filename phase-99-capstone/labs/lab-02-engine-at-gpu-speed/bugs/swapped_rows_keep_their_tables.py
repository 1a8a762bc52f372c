"""swap_rows exchanges everything but the block tables.

Putting the decodes first swaps rows; each swapped request then reads and writes through the other
one's block table.
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules", "test_tokens_match_generate"]

EDIT = (
    "        self.block_table.swap_rows(a, b)\n",
    "",
)
