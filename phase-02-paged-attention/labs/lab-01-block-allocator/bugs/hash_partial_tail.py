"""hash_request_tokens rounds the number of blocks up: the partial last block gets a key too.

A partial block is still being written: its request appends its next tokens into it. Cached under
the key of its first few tokens, it is a hit for any newcomer whose prompt ends the same way, and
the newcomer shares a block whose later slots the first request is about to overwrite (invariant 3).
Symptom: 10 tokens in blocks of 4 give 3 keys instead of 2.
"""

CAUGHT_BY = ["test_only_full_blocks_are_hashed", "test_random_interleavings_keep_the_invariants"]

EDIT = (
    "    num_full_blocks = len(token_ids) // block_size  # floor: the partial tail is not hashed\n",
    "    num_full_blocks = -(-len(token_ids) // block_size)  # rounded up: the partial tail is hashed too\n",
)
