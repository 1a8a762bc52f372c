"""The staged query counted at 4 bytes an element whatever its dtype.

Symptom: 512 bytes instead of 256 for a 128-wide fp16 query. The kernel stages the query in
its own dtype (Q_vec of scalar_t); only the logits and accumulators are fp32.
"""

CAUGHT_BY = ["test_budget_of_the_source_configuration", "test_budget_follows_the_launcher"]

EDIT = (
    '    query = head_size * query_itemsize\n',
    '    query = head_size * FLOAT32_BYTES  # BUG: the query is staged in its own dtype\n',
)
