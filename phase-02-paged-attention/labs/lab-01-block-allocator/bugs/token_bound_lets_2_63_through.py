"""The token-id range check lets 2**63 through (``>`` where the range [0, 2**63) needs ``>=``).

Symptom: ``hash_block_tokens(None, [1, 2**63])`` hashes the token instead of raising a ValueError
naming token_ids.
"""

CAUGHT_BY = ["test_hash_rejects_bad_input"]

EDIT = (
    "    if min(tokens) < 0 or max(tokens) >= 2**63:\n",
    "    if min(tokens) < 0 or max(tokens) > 2**63:\n",
)
