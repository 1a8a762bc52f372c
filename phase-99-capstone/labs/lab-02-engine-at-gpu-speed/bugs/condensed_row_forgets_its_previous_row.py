"""A condensed row does not carry prev_step_row: its decode takes another request's sampled token.

The token the previous step sampled for a request sits at the row it had then. A row moved into a hole
without that index points at whatever the hole held before (a removed request's row, or -1): the
decode is fed the wrong token.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "            self.prev_step_row[hole] = self.prev_step_row[last]\n",
    "",
)
