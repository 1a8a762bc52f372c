"""The running max starts at 0 instead of -inf.

A max that starts at 0 stays at 0 for a sequence whose scores all sit far below it: every weight
exp(score - 0) underflows to 0, and the answer is 0 / 0 = NaN. Right whenever some score is
positive, which is most random tests.
"""

CAUGHT_BY = ["test_large_logits_need_a_running_max", "test_contract_score_patterns_at_every_boundary_length"]

EDIT = (
    "    m = -np.inf  # running max: nothing seen yet\n",
    "    m = 0.0  # running max: nothing seen yet\n",
)
