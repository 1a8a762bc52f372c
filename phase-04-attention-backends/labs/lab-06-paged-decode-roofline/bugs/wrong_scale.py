"""Scores scaled by 1/head_dim instead of 1/sqrt(head_dim).

Symptom: a softmax that is far too flat; every output is wrong by a lot.
"""

CAUGHT_BY = ["test_one_split_matches_reference", "test_gqa_grouping"]

EDIT = (
    "        SCALE=1.0 / math.sqrt(head_dim),\n",
    "        SCALE=1.0 / head_dim,\n",
)
