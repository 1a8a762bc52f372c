"""attend_partial returns (m, 1.0, acc / denom): normalized, its denominator dropped.

The merge then weights partition i by exp(m_i - m) alone, as if every partition held one key at
its max score; the real weight is denom_i * exp(m_i - m). (Keeping acc / denom is fine as long as
denom is kept and multiplied back in the merge, which is what vLLM's paged_attention_v2 does with
its exp_sums.) Symptom: one partition is right; the triple test fails on denom and acc; every
split into 2 or more partitions is wrong.
"""

CAUGHT_BY = [
    "test_attend_partial_returns_the_unnormalized_triple",
    "test_any_partition_count_matches_dense",
    "test_extreme_scores_do_not_overflow",
]

EDIT = (
    "    return m, float(weights.sum()), weights @ v\n",
    "    return m, 1.0, (weights @ v) / weights.sum()  # the partition's mass, denom, is thrown away\n",
)
