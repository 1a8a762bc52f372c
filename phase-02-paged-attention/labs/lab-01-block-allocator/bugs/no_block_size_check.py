"""hash_request_tokens() does not check block_size: 0 crashes inside with ZeroDivisionError.

A bad configuration value should fail at the boundary with a message that names it, not deep in
the arithmetic (and a negative block size would silently give no keys at all). Symptom:
hash_request_tokens(tokens, 0) raises ZeroDivisionError instead of a ValueError about block_size.
"""

CAUGHT_BY = ["test_hash_rejects_bad_input"]

EDIT = (
    "    if not isinstance(block_size, int) or block_size < 1:\n"
    "        raise ValueError(f\"block_size must be a positive integer, got {block_size!r}\")\n",
    "",
)
