"""Empty chunks never considered: partitioned_attention hands every chunk of np.array_split
to attend_partial, and attend_partial takes the max of the scores without checking for zero
keys.

np.array_split(k, P) with P > n returns P - n empty chunks, and numpy refuses the max of an
empty array ("zero-size array to reduction operation maximum which has no identity").
Symptom: a ValueError from inside numpy as soon as there are more partitions than keys, or
no keys at all.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = [
    "test_attend_partial_of_zero_keys_is_the_identity",
    "test_more_partitions_than_keys",
    "test_zero_keys_gives_zeros",
    "test_partitioned_attention_summarizes_each_chunk",
]


def attend_partial(q, k, v):
    q, k, v = _as_query_keys_values(q, k, v)  # noqa: F821 (from the solution, below)
    scores = k @ q / np.sqrt(q.shape[0])
    m = float(scores.max())  # BUG: no case for zero keys
    weights = np.exp(scores - m)
    return m, float(weights.sum()), weights @ v


def partitioned_attention(q, k, v, num_partitions):
    q, k, v = _as_query_keys_values(q, k, v)  # noqa: F821
    _check_num_partitions(num_partitions)  # noqa: F821
    chunks = zip(np.array_split(k, num_partitions), np.array_split(v, num_partitions), strict=True)
    return merge_partials([attend_partial(q, k_c, v_c) for k_c, v_c in chunks])  # BUG: empty chunks too  # noqa: F821


globals().update(solution_with(__file__, attend_partial=attend_partial, partitioned_attention=partitioned_attention))
