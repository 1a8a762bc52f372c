"""The denominator is rescaled by corr but the accumulator is not.

Symptom: the mirror image of denom_not_rescaled: whenever the running max rises, the history in
acc keeps its old, larger scale while denom shrinks, so earlier tokens are overweighted. Exact
when the first block holds the maximum.
"""

CAUGHT_BY = ["test_matches_dense_block_aligned", "test_running_max_rises_and_falls", "test_many_block_sizes"]

EDIT = (
    "        acc = acc * corr + p @ v_block\n",
    "        acc = acc + p @ v_block  # should be acc * corr + p @ v_block\n",
)
