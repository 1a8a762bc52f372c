"""allocate_slots returns the request's whole block table instead of the blocks it just took.

The scheduler needs the new blocks (to know what changed) and tells "no room" by None: the whole
table is neither. A decode step that needs no block returns a non-empty list, and a request with
hits returns its hits as if they were new. Symptom: B, sharing A's two blocks, gets [1, 2, 4] as its
new blocks instead of [4].
"""

CAUGHT_BY = [
    "test_identical_prompts_share_physical_blocks",
    "test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full",
]

EDIT = (
    "        return new_blocks\n",
    "        return req_blocks  # the whole table\n",
)
