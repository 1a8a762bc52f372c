"""Ignoring num_partitions: partitioned_attention summarizes all the keys at once and never
splits.

The output is right (it is dense attention), which is why output tests alone cannot see it;
but the point of the function, many independent summaries that a GPU computes in parallel,
is gone. Symptom: attend_partial is called once, on all n keys.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_partitioned_attention_summarizes_each_chunk",
]


def partitioned_attention(q, k, v, num_partitions):
    q, k, v = _as_query_keys_values(q, k, v)  # noqa: F821 (from the solution, below)
    _check_num_partitions(num_partitions)  # noqa: F821
    if k.shape[0] == 0:
        return np.zeros(v.shape[1])
    return merge_partials([attend_partial(q, k, v)])  # BUG: one partition, whatever was asked  # noqa: F821


globals().update(solution_with(__file__, partitioned_attention=partitioned_attention))
