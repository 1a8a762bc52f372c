"""One tile of BLOCK_T tokens per sequence, no loop: the Triton twin of "one thread per token".

Symptom: tokens from BLOCK_T on are never scored (their scores stay whatever torch.empty
held), so any sequence longer than one tile is wrong.
"""

CAUGHT_BY = ["test_qk_triton_sequences_longer_than_one_tile", "test_qk_triton_matches_float64_on_ragged_lengths"]

EDIT = (
    '    for start in range(0, max_len, BLOCK_T):\n',
    '    for start in range(0, BLOCK_T, BLOCK_T):  # BUG: the first tile only\n',
)
