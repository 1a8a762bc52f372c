"""causal_mask without the given checks: the positions taken with np.asarray, start and
num_queries as they come.

Symptom: a negative start shifts every row (row 0 then sees nothing), a negative num_queries gives
an empty mask, float or 2-D positions are compared as they are, negative positions are visible to
every row; none of them is the ValueError naming the argument.
"""

CAUGHT_BY = ["test_causal_mask_refuses_bad_arguments", "test_causal_mask_takes_any_empty_keys"]

EDITS = [
    (
        "    start, num_queries = _check_start(\"start\", start), _check_start(\"num_queries\", num_queries)\n"
        "    keys = _as_positions(key_positions)\n",
        "    keys = np.asarray(key_positions)  # BUG: the given checks not called\n",
    ),
]
