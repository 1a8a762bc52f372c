"""A decode's input is gathered from the row the request has now, not the one it had last step.

The previous step's sampled tokens are in that step's row order. After a condense (or a swap) the rows
differ, and a moved request takes another request's token.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "    buffers.gather_src.np[: len(pending)] = batch.prev_step_row[pending]\n",
    "    buffers.gather_src.np[: len(pending)] = pending  # the row it has now\n",
)
