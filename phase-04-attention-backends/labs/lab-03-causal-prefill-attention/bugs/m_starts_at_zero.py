"""The running max of each row starts at 0 instead of -inf.

A max that starts at 0 is still a max, and any shift cancels in acc / denom: right whenever some
score of the row is positive. A row whose scores are all far below 0 (near -1000 in the test)
is exponentiated against 0 instead of its own max: exp(-1000) = 0 for every key, then 0/0 = NaN.
"""

CAUGHT_BY = ["test_large_logits_keep_a_max_per_row"]

EDIT = (
    "    m = np.full((num_queries, num_heads), -np.inf)  # running max of the scores\n",
    "    m = np.zeros((num_queries, num_heads))  # BUG: the running max starts at 0\n",
)
