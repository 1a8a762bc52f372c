"""free() frees the request's blocks but keeps its table in req_to_blocks.

The manager still believes the request holds its blocks: get_block_ids reports them, and a second
free (an abort after a finish, a preempted request finished later) drops their ref counts again,
a double free that lab 02-01's pool refuses. Symptom: after free(A), get_block_ids("A") is not
empty, and freeing A again raises.
"""

CAUGHT_BY = [
    "test_shared_system_prompt_is_held_until_the_last_user_leaves",
    "test_bad_input_is_a_clear_error_and_changes_nothing",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        blocks = self.req_to_blocks.pop(request.request_id, [])\n",
    "        blocks = self.req_to_blocks.get(request.request_id, [])  # the table stays\n",
)
