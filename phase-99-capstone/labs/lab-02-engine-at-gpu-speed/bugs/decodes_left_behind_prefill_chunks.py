"""The batch is not reordered: decodes stay behind prefill chunks.

The tokens are still right (the prefill kernel takes one-token rows too), but on a GPU every decode
after the first chunk goes through the prefill kernel, whose grid is sized for the longest chunk: most
of its programs start only to exit.
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules", "test_step_inputs_match_brute_force"]

EDIT = (
    "    batch.reorder_decodes_first(scheduled)\n",
    "",
)
