"""The fast path checks only that the first new token fits the table, not the last.

Right for decodes; a chunk that starts in the last block and runs past it gets no new block: its last
tokens are written through table entries past the request's blocks.
"""

CAUGHT_BY = ["test_chunk_size_changes_nothing", "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "        if request.num_computed_tokens + num_new_tokens <= len(request.block_ids) * self.block_size:\n",
    "        if request.num_computed_tokens < len(request.block_ids) * self.block_size:  # the first token only\n",
)
