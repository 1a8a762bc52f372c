"""A request given a row that another request left keeps that request's previous row.

add_request fills the tokens, the counts and the block table, but not ``prev_step_row``: the row says
the new request was in the previous step, at the row its last occupant had. The runner never gathers
for a new row (every input of it is on the host), so the tokens stay right; the field, which says -1
for a request not in the previous step, is wrong. Symptom: ``prev_step_row`` of a reused row holds an
old row number.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force"]

EDIT = (
    "        self.prev_step_row[row] = -1  # a new row: the previous step sampled nothing for it\n",
    "",
)
