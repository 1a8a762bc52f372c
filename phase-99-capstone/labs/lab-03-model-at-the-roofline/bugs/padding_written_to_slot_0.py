"""A padding token's slot -1 clamped to 0: the kernel writes the padding's key and value into slot 0.

Lab 99-02 wrote padding there on purpose (row 0 of the null block); with -1 as the padding mark the
kernel must skip those rows, and a kernel that clamps writes into a row that may be a live token's
(any cache whose block 0 is in use, as in the test's).
"""

CAUGHT_BY = ["test_rotary_and_cache_matches_float64", "test_padding_tokens_write_nothing"]

EDIT = (
    "    slot = tl.load(slot_mapping_ptr + tokens, mask=token_ok, other=-1).to(tl.int64)\n",
    "    slot = tl.maximum(tl.load(slot_mapping_ptr + tokens, mask=token_ok, other=-1).to(tl.int64), 0)\n",
)
