"""blocks_needed's check of num_tokens forgets that a bool is an int to Python.

``isinstance(True, int)`` holds, so True passes as one token. Symptom: blocks_needed(True, 16)
returns 1 instead of raising a ValueError naming num_tokens.
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

EDIT = (
    "    if isinstance(num_tokens, bool) or not isinstance(num_tokens, int | np.integer) or num_tokens < 0:\n",
    "    if not isinstance(num_tokens, int | np.integer) or num_tokens < 0:\n",
)
