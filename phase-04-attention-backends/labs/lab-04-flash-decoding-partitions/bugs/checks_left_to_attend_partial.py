"""partitioned_attention leaves the input checks to attend_partial.

Each chunk's attend_partial checks q, k and v, so the check at the top of partitioned_attention
looks redundant; but with zero keys no chunk is summarized, and a k of the wrong head size comes
back as a silent zeros(dv) instead of a ValueError. Symptom: only the bad-input test's zero-key
case fails.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    q, k, v = _as_query_keys_values(q, k, v)\n    _check_num_partitions(num_partitions)\n",
    "    _check_num_partitions(num_partitions)\n",
)
