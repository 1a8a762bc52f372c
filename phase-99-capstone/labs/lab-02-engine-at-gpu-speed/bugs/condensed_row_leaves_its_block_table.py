"""A condensed batch whose tables were not moved: the last row moves into a hole without its block table.

The moved request keeps its tokens and counts but reads the block table of the request that had the
row before: its keys go into another request's blocks, its attention reads them.
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "            self.block_table.move_row(last, hole)\n",
    "",
)
