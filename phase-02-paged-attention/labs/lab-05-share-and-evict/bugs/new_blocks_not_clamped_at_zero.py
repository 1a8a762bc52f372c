"""allocate_slots counts the new blocks as what the tokens need minus what the request holds, without
clamping at 0.

A request planned smaller than the room it took before (prefix caching off, a step re-planned before
it ran) needs fewer blocks than it holds: the count is negative, and lab 02-01's pool refuses
``get_new_blocks(-1)``. Symptom: allocate_slots raises a ValueError from inside the pool where [] is
expected.
"""

CAUGHT_BY = ["test_a_request_that_holds_more_blocks_than_its_next_tokens_need"]

EDIT = (
    "        num_new_blocks = max(num_required_blocks - len(new_computed_blocks) - len(req_blocks), 0)\n",
    "        num_new_blocks = num_required_blocks - len(new_computed_blocks) - len(req_blocks)\n",
)
