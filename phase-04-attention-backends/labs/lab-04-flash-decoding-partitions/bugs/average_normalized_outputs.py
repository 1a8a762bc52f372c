"""Averages the partitions' normalized outputs with equal weights.

A partition's output says where its attention mass points, not how much mass it holds: a
partition whose keys score low deserves almost no weight, and one with twice the keys (or
much higher scores) deserves more. The average forgets both. Symptom: one partition is
right (an average of one output is itself); every split into 2 or more partitions is off by
O(0.1), in any order.
"""

CAUGHT_BY = ["test_merge_partials_matches_dense_attention", "test_more_partitions_than_keys"]

EDIT = (
    """    m, denom, acc = _as_summary(partials[0], "merge_partials: partials[0]")
    for summary in partials[1:]:
        m, denom, acc = merge_two((m, denom, acc), summary)
    if denom == 0.0:
        return np.zeros_like(acc)
    return acc / denom
""",
    """    # Each partition's normalized output, averaged with equal weights (the weight of
    # partition i should be denom_i * exp(m_i - m)).
    summaries = [_as_summary(s, "merge_partials") for s in partials]
    outputs = [acc / denom for _, denom, acc in summaries if denom > 0]
    if not outputs:
        return np.zeros_like(summaries[0][2])
    return np.mean(outputs, axis=0)
""",
)
