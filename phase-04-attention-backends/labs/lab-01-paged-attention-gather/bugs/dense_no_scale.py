"""The dense oracle forgets the 1/sqrt(d) factor.

Symptom: a sharper softmax than the reference; no error, no NaN, a different answer.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_dense_attention_matches_reference"]


def dense_attention(q, k, v):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if k.shape[0] == 0:
        return np.zeros(v.shape[1])
    scores = k @ q  # BUG: no / sqrt(d)
    weights = np.exp(scores - scores.max())
    return (weights / weights.sum()) @ v


globals().update(solution_with(__file__, dense_attention=dense_attention))
