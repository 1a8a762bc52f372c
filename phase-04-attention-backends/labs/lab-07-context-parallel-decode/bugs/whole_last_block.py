"""The rank reads its last block to the end, not to its seq_len.

The slots past the rank's last token hold poison (and in real life, stale tokens of a freed
sequence). Symptom: huge or NaN/inf summaries, or lab 04-04's attend_partial refusing NaN keys.
"""

CAUGHT_BY = [
    "test_all_logits_near_minus_1000",
    "test_combine_keeps_dtype_and_leaves_the_summaries_alone",
    "test_empty_shards_change_nothing",
    "test_huge_logits_on_one_rank",
    "test_rank_summaries_match_the_definition",
    "test_rank_summaries_survive_extreme_scores",
    "test_ranks_match_dense_attention_on_ragged_batches",
]

EDIT = (
    '        local = np.arange(seq_lens[b])\n',
    '        local = np.arange(-(-seq_lens[b] // block_size) * block_size)  # whole blocks\n',
)
