"""A running request takes its next block one token late.

The token sampled last step is written this step, so it needs its slot now; counting only the
tokens already written gives the block a step late. Symptom: a step where a request holds more
tokens than its blocks have slots (used > reserved).
"""

CAUGHT_BY = ["test_serve_paged_hand_stream", "test_serve_paged_matches_brute_force"]

EDIT = (
    '            need = blocks_needed(prompt[r] + sampled[r], block_size) - len(tables[r])\n',
    '            need = blocks_needed(prompt[r] + sampled[r] - 1, block_size) - len(tables[r])\n',
)
