"""The fast path ends one token early: a step that fills the last block exactly asks the manager.

The request's blocks hold its next tokens when computed + new <= blocks * block_size; with < the decode
that writes a block's last slot calls the KV-cache manager for nothing (one call in 16 decodes that the
step exists to skip).
"""

CAUGHT_BY = ["test_decodes_skip_the_allocator_until_a_block_fills"]

EDIT = (
    "        if request.num_computed_tokens + num_new_tokens <= len(request.block_ids) * self.block_size:\n",
    "        if request.num_computed_tokens + num_new_tokens < len(request.block_ids) * self.block_size:\n",
)
