"""A request that comes back as new keeps the row it had before its preemption.

A step that preempts a request and schedules nothing never reaches the runner, so the request's row is
still there when it is scheduled again, as a new request with a new table and zero computed tokens.
Only rows of unscheduled requests are dropped: the old row stays beside the new one, and the batch
holds the request twice.
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules",
             "test_preempted_requests_keep_the_token_on_its_way"]

EDIT = (
    "    for req_id in [r for r in batch.req_ids if r is not None and (r not in scheduled or r in new_req_ids)]:\n",
    "    for req_id in [r for r in batch.req_ids if r is not None and r not in scheduled]:\n",
)
