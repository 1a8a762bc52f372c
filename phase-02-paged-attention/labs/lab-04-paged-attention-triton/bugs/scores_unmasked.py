"""Masked loads, unmasked scores: the empty tail slots are loaded as 0 and scored 0.

The loads' ``other=0.0`` keeps garbage out, but a zero key gives a score of 0, not -inf, so
every empty slot of the last block gets the weight exp(0 - m) in the denominator. Symptom:
right for lengths that fill their last block, too small an output for every other length.
"""

CAUGHT_BY = ["test_triton_matches_dense", "test_source_example_130_tokens_in_9_scattered_blocks"]

EDIT = (
    '        scores = tl.where(valid, scores, -float("inf"))\n',
    '        # BUG: no -inf for the empty slots: their zero keys score 0\n',
)
