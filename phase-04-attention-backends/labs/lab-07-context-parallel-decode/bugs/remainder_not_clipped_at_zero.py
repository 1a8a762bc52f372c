"""The last round's remainder clipped at the stripe but not at 0.

Ranks the partial round does not reach get rest - rank * stripe < 0 tokens added: negative counts
for short sequences. Symptom: negative entries in local_seq_lens; columns still sum wrong.
"""

CAUGHT_BY = [
    "test_local_seq_lens_count_each_ranks_tokens",
]

EDIT = (
    '    return full_rounds * stripe + np.clip(rest - ranks * stripe, 0, stripe)\n',
    '    return full_rounds * stripe + np.minimum(rest - ranks * stripe, stripe)\n',
)
