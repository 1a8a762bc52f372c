"""The dense oracle computes exp(scores) / sum(exp(scores)) without subtracting the max.

Symptom: exact on ordinary scores; NaN once a score passes ~709 (inf/inf) or every
score is below ~-745 (0/0). An oracle that breaks where the kernel must not is no oracle.
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_dense_attention_survives_large_logits"]


def dense_attention(q, k, v):
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if k.shape[0] == 0:
        return np.zeros(v.shape[1])
    scores = k @ q / np.sqrt(q.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        weights = np.exp(scores)  # BUG: no max subtracted
        return (weights / weights.sum()) @ v


globals().update(solution_with(__file__, dense_attention=dense_attention))
