"""attend_partial returns acc / denom, and the merge divides by the denominator again.

The merge, which expects an unnormalized acc, treats the normalized output as if it were one
and divides by the merged denominator a second time. Symptom: even one partition is
wrong (the output comes out divided by denom twice), and the triple test shows acc too small by
exactly the factor denom.
"""

CAUGHT_BY = [
    "test_attend_partial_returns_the_unnormalized_triple",
    "test_one_partition_is_just_attention",
    "test_any_partition_count_matches_dense",
    "test_extreme_scores_do_not_overflow",
]

EDIT = (
    "    return m, float(weights.sum()), weights @ v\n",
    "    return m, float(weights.sum()), (weights @ v) / weights.sum()  # acc must stay unnormalized\n",
)
