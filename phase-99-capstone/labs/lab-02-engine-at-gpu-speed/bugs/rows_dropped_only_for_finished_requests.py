"""update_states drops the rows of finished requests only, not of every request the step leaves out.

A request preempted, or left out by the budget, keeps its row: the batch holds a row that computes
nothing this step, and the runner, which builds one sequence per row, has no token count for it.
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules"]

EDIT = (
    "    for req_id in [r for r in batch.req_ids if r is not None and (r not in scheduled or r in new_req_ids)]:\n",
    "    for req_id in [r for r in batch.req_ids\n"
    "                   if r is not None and (r in scheduler_output.finished_req_ids or r in new_req_ids)]:\n",
)
