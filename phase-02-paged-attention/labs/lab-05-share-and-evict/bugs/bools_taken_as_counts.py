"""The given checks ask ``isinstance(n, int)`` alone, which a bool passes: True is a count of 1.

Python's bool is a subclass of int, so ``isinstance(True, int)`` holds, ``True >= 1`` and
``False == 0``: ``allocate_slots(request, True)`` computes one token, ``num_new_computed_tokens=False``
passes as no hit, and ``KVCacheManager(10, True)`` has blocks of one token, all without a word.
Symptom: a flag passed in a count's place is served as 1 or 0 instead of refused by name.
"""

CAUGHT_BY = ["test_a_bool_is_no_count"]

SOURCE = "_manager_base.py"

EDITS = [
    ("        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:\n",
     "        if not isinstance(block_size, int) or block_size < 1:  # BUG: True is an int\n"),
    ("        if isinstance(num_new_tokens, bool) or not isinstance(num_new_tokens, int) or num_new_tokens < 1:\n",
     "        if not isinstance(num_new_tokens, int) or num_new_tokens < 1:\n"),
    ("        if isinstance(num_new_computed_tokens, bool) or not isinstance(num_new_computed_tokens, int):\n",
     "        if not isinstance(num_new_computed_tokens, int):\n"),
]
