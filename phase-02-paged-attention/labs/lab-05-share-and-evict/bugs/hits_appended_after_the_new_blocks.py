"""allocate_slots appends the new blocks to the table first and the prefix-cache hits after them.

The table lists blocks in logical order: the hits hold the first tokens, so they come first. With
the new block first, token 0 is read from a block that holds the request's last tokens, and the
cached keys no longer match the blocks at their positions. Symptom: B, whose first two blocks hit,
gets the table [4, 1, 2] instead of [1, 2, 4].
"""

CAUGHT_BY = ["test_identical_prompts_share_physical_blocks"]

EDITS = [
    ("        req_blocks.extend(new_computed_blocks)\n", ""),
    ("        req_blocks.extend(new_blocks)\n",
     "        req_blocks.extend(new_blocks)\n"
     "        req_blocks.extend(new_computed_blocks)  # the hits after the new blocks\n"),
]
