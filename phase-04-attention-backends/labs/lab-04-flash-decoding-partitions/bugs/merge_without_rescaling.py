"""Merge without rescaling to the shared max: denom = denom_a + denom_b and acc = acc_a + acc_b.

Each side's sums are relative to its own max; adding them mixes terms measured against two
different references. Only when both maxima happen to be equal is that right. It is commutative
and associative all the same, which is why the law tests compare with the summary of the union
and not only with the merge's own other answers. Symptom: the merged triple differs from the
summary of the union; every split into 2 or more partitions is wrong.
"""

CAUGHT_BY = ["test_merge_two_is_the_summary_of_the_union", "test_extreme_scores_do_not_overflow"]

EDIT = (
    "    return m, denom_a * scale_a + denom_b * scale_b, acc_a * scale_a + acc_b * scale_b\n",
    "    return m, denom_a + denom_b, acc_a + acc_b  # no exp(m_a - m), exp(m_b - m)\n",
)
