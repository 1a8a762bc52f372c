"""add_request fills a row but leaves num_tokens as the row's last occupant left it.

A stale row reused: the new request's token count is the old one's (0 in a row never used), so the
batch takes tokens the host wrote for the new request for tokens still on the device, or the reverse.
"""

CAUGHT_BY = ["test_persistent_batch_matches_a_rebuild_on_random_schedules", "test_prepare_inputs_matches_brute_force"]

EDIT = (
    "        self.num_tokens[row] = len(token_ids)\n",
    "",
)
