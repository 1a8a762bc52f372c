"""candidate_order reads ``features`` unchecked.

Symptom: features="mla" (a string) gets the MLA list ("mla" in "mla"), and an unknown feature is
ignored, where both are a ValueError naming features.
"""

CAUGHT_BY = ["test_backend_problems_and_candidate_order_refuse_bad_arguments"]

EDIT = (
    '    features = _check_features("candidate_order", features)\n',
    "    pass  # BUG: features unchecked\n",
)
