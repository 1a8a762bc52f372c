"""Missing rescale in the reduce: the splits' denominators and accumulators are added as they
are, each still relative to its own split's max.

Symptom: right with one split, wrong with several (the split with the larger max should weigh
more).
"""

CAUGHT_BY = ["test_merge_splits_matches_reference", "test_every_split_count_gives_the_same_answer"]

EDIT = (
    "        weight = tl.exp(m_s - m_new)  # 0 where the split does not exist\n"
    "        correction = tl.exp(m - m_new)\n",
    "        weight = tl.where(exists, 1.0, 0.0)  # no rescale\n"
    "        correction = 1.0\n",
)
