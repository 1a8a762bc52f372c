"""Forgetting the scale: scores are q . k instead of q . k / sqrt(d).

The softmax is then sharper than the model's (with d = 16, four times the logits). Every split
agrees with every other, so tests that only compare partitionings with each other would pass;
only a comparison with the brute force catches it. Symptom: every output is wrong, including
with one partition.
"""

CAUGHT_BY = [
    "test_attend_partial_returns_the_unnormalized_triple",
    "test_one_partition_is_just_attention",
    "test_any_partition_count_matches_dense",
    "test_more_partitions_than_keys",
    "test_extreme_scores_do_not_overflow",
]

EDIT = (
    "    scores = k @ q / np.sqrt(q.shape[0])\n",
    "    scores = k @ q  # missing / sqrt(d)\n",
)
