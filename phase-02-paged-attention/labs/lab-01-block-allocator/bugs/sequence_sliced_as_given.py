"""hash_request_tokens slices token_ids as given, without copying it into a list.

Lists, tuples and numpy arrays slice; a ``collections.deque`` (a sequence too) does not. Symptom:
TypeError "sequence index must be integer, not 'slice'" for a deque.
"""

CAUGHT_BY = ["test_hash_request_tokens_takes_any_sequence"]

EDIT = (
    "    token_ids = list(token_ids)\n",
    "",
)
