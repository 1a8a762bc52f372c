"""The tile loop stops one token short: ``range(0, max_len - 1, BLOCK_T)``.

When the last tile holds a single token (max_len 1, 65, 129...), it is never visited: its score
is whatever ``torch.empty`` left in memory. Symptom: a garbage score at position max_len - 1.
"""

CAUGHT_BY = ["test_qk_triton_one_token_past_a_tile"]

EDIT = (
    "    for start in range(0, max_len, BLOCK_T):\n",
    "    for start in range(0, max_len - 1, BLOCK_T):\n",
)
