"""The merge keeps the summary with the larger max and drops the other: lawful, and wrong.

As if the partition holding the top score held all the attention.

It obeys every law: the identity (m = -inf) always loses, the larger of two maxima does not
depend on the order, and the largest of three does not depend on the bracketing. A test that
checks the laws only against the merge's own other answers passes it; compared with the summary
of the union it is plainly wrong. Symptom: every split loses the partitions below the top one.
"""

CAUGHT_BY = ["test_merge_two_is_the_summary_of_the_union", "test_any_partition_count_matches_dense"]

EDIT = (
    "    # An identity side has m = -inf, so its factor is exp(-inf) = 0: it adds nothing.\n",
    "    return (m_a, denom_a, acc_a) if m_a >= m_b else (m_b, denom_b, acc_b)  # the larger max only\n",
)
