"""The features put in a set before they are checked: a list among them is a TypeError.

``_check_features`` must compare each feature with ``FEATURES`` before hashing it. Symptom:
``features=(["mla"],)`` ends in "unhashable type: 'list'" from inside the check instead of a
ValueError naming ``features``.
"""

CAUGHT_BY = ["test_bad_arguments_get_a_clear_error", "test_backend_problems_and_candidate_order_refuse_bad_arguments"]

SOURCE = "_checks.py"

EDIT = (
    "    features = tuple(features)  # read once: a generator too\n",
    "    features = frozenset(features)  # BUG: hashes a list before the check sees it\n",
)
