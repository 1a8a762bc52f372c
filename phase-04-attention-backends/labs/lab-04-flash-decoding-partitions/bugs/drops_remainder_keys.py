"""Dropping the remainder: partitions of n // num_partitions keys each, so the last
n % num_partitions keys are never attended (a hand-rolled split instead of np.array_split).

Symptom: right when the partition count divides n, wrong otherwise (257 keys in 2, 3, 7,
32 or 100 partitions always leave some out); with more partitions than keys every chunk is
empty and the output is zeros.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_any_partition_count_matches_dense",
    "test_more_partitions_than_keys",
    "test_partitioned_attention_summarizes_each_chunk",
]


def partitioned_attention(q, k, v, num_partitions):
    q, k, v = _as_query_keys_values(q, k, v)  # noqa: F821 (from the solution, below)
    _check_num_partitions(num_partitions)  # noqa: F821
    size = k.shape[0] // num_partitions  # BUG: the remainder is lost
    partials = [
        attend_partial(q, k[i * size : (i + 1) * size], v[i * size : (i + 1) * size])  # noqa: F821
        for i in range(num_partitions)
        if size > 0
    ]
    if not partials:
        return np.zeros(v.shape[1])
    return merge_partials(partials)  # noqa: F821


globals().update(solution_with(__file__, partitioned_attention=partitioned_attention))
