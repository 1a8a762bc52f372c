"""The reduce takes each chunk's first split's max as the shared max, instead of the largest.

Any shift gives the same ratio in real arithmetic, so scores of order 1 pass. Symptom: when a later
split holds a score far above the first split's (a key 100 above the rest, in the last split),
``exp(m_s - M)`` overflows float32 to inf, and the output is inf / inf = NaN.
"""

CAUGHT_BY = ["test_score_patterns_across_splits"]

EDIT = (
    "        m_new = tl.maximum(m, tl.max(m_s, axis=0))  # finite: split `first` exists\n",
    "        m_new = tl.maximum(m, tl.max(tl.where(split == first, m_s, float(\"-inf\")), axis=0))  # the first's\n",
)
