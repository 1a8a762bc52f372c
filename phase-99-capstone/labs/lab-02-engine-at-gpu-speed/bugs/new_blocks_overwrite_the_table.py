"""The blocks a request gets this step replace its block table instead of extending it.

add_row where append_row was meant: the table keeps only its newest blocks, so every position before
them maps to the wrong block (or to a stale entry past the table's end).
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "            batch.block_table.append_row(new_block_ids, row)\n",
    "            batch.block_table.add_row(new_block_ids, row)  # the old blocks are gone\n",
)
