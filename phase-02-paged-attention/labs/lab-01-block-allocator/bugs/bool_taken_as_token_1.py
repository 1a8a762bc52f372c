"""The token ids are checked with ``operator.index``, which takes a bool: ``True`` becomes the token 1.

``operator.index`` takes exactly what Python may use as an index, numpy integers and bools alike, and
``operator.index(True)`` is 1. A sequence ``[5, True]`` (a mask passed for the ids, a flag in the wrong
place) then hashes to the key of ``[5, 1]``: two different inputs under one key, and no error.
Symptom: ``hash_block_tokens(None, [5, True]) == hash_block_tokens(None, [5, 1])``.
"""

CAUGHT_BY = ["test_a_bool_is_no_token_id"]

EDITS = [
    ("import hashlib\n", "import hashlib\nimport operator\n"),
    ("        tokens = [as_int(t, \"token_ids: each token id\") for t in token_ids]\n",
     "        tokens = [operator.index(t) for t in token_ids]  # BUG: True is taken as 1\n"),
]
