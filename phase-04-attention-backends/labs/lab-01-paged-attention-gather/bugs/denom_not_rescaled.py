"""The accumulator is rescaled by corr but the denominator is not.

Symptom: the numerator and the denominator drift onto different scales whenever the running max
rises: the output's direction is roughly right but its magnitude is too small (denom too large).
Exact when the first block holds the maximum.
"""

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_running_max_rises_and_falls", "test_many_block_sizes"]

EDIT = (
    "        denom = denom * corr + p.sum()\n",
    "        denom = denom + p.sum()  # should be denom * corr + p.sum()\n",
)
