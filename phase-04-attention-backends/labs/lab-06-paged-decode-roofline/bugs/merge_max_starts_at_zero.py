"""The reduce's running max starts at 0 instead of -inf.

Symptom: right whenever some split's max is above 0; when every score is far below 0 (near
-1000), every weight exp(m_s - 0) underflows to 0 and the output is zeros.
"""

CAUGHT_BY = ["test_merge_splits_extreme_maxima", "test_splits_with_extreme_scores"]

EDIT = (
    "    m = float(\"-inf\")\n"
    "    denom = 0.0\n",
    "    m = 0.0  # the running max starts at 0\n"
    "    denom = 0.0\n",
)
