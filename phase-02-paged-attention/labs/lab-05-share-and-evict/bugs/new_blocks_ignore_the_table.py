"""allocate_slots forgets the blocks the request already holds when it counts the new ones.

For a running request the table already covers most of its tokens: the blocks needed for
computed + new tokens, minus the hits, is what the table plus the new blocks must hold. Leaving the
table out takes a fresh block at every decode step. Symptom: a decode step whose token fits in the
last block returns a new block.
"""

CAUGHT_BY = [
    "test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full",
    "test_a_long_decode_caches_every_block_it_fills",
    "test_random_workload_matches_a_brute_force_model",
]

EDIT = (
    "        num_new_blocks = max(num_required_blocks - len(new_computed_blocks) - len(req_blocks), 0)\n",
    "        num_new_blocks = max(num_required_blocks - len(new_computed_blocks), 0)  # the table forgotten\n",
)
