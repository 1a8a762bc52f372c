"""A removed request keeps its entry in req_id_to_index: a stale row after a finish.

remove_request empties the row but leaves the request in the index, so the batch still counts it
(num_reqs), condense believes its row is live, and update_states never drops it again.
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules", "test_rows_stay_put_when_nothing_changes",
             "test_tokens_match_generate"]

EDIT = (
    "        row = self.req_id_to_index.pop(req_id, None)\n",
    "        row = self.req_id_to_index.get(req_id)  # the index still names the request\n",
)
