"""The running max starts at 0 instead of -inf.

The softmax does not care what is subtracted as long as nothing overflows or underflows, so
ordinary scores pass. Symptom: when every score is far below 0 (near -1000), every
exp(score - 0) underflows to 0 and the output is zeros.
"""

CAUGHT_BY = ["test_extreme_scores", "test_splits_with_extreme_scores"]

EDIT = (
    "    m = tl.full([GROUP_PAD], float(\"-inf\"), tl.float32)\n",
    "    m = tl.zeros([GROUP_PAD], tl.float32)  # the running max starts at 0\n",
)
