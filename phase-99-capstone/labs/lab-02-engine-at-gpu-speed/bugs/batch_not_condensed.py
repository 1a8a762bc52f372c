"""update_states never condenses: the holes a finish leaves stay until a new request fills them.

The rows are no longer 0 .. num_reqs - 1: a step after a finish, with nobody new to take the hole,
has an empty row in the middle of its batch.
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules", "test_rows_stay_put_when_nothing_changes"]

EDIT = (
    "    batch.condense()\n    batch.reorder_decodes_first(scheduled)\n",
    "    batch.reorder_decodes_first(scheduled)\n",
)
