"""The rank reads its last block to the end, not to its seq_len.

The slots past the rank's last token hold poison (and in real life, stale tokens of a freed
sequence). Symptom: huge or NaN/inf summaries, or lab 04-04's attend_partial refusing NaN keys.
"""

CAUGHT_BY = ["test_rank_summaries_match_the_definition", "test_rank_summaries_survive_extreme_scores"]

EDIT = (
    '        local = np.arange(seq_lens[b])\n',
    '        local = np.arange(-(-seq_lens[b] // block_size) * block_size)  # whole blocks\n',
)
