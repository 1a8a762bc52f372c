"""The token-id range check compares the smallest token with 2**63, not the largest.

A copy of the lower bound's ``min(tokens)``: a list whose largest id is out of range passes as
long as its smallest is in range. Symptom: ``int.to_bytes`` raises OverflowError (or a wider id
is hashed) instead of a ValueError naming token_ids.
"""

CAUGHT_BY = ["test_hash_rejects_bad_input"]

EDIT = (
    "    if min(tokens) < 0 or max(tokens) >= 2**63:\n",
    "    if min(tokens) < 0 or min(tokens) >= 2**63:\n",
)
