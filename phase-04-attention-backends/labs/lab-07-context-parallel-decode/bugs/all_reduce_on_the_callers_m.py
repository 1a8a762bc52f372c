"""all_reduce(MAX) run on the caller's m itself: collectives work in place.

The rank's m becomes the global max; every scale exp(m - M) is then 1 and nothing is rescaled, and
the caller's summary is destroyed. Symptom: inputs modified, and wrong outputs on 2 and 4 ranks.
"""

CAUGHT_BY = [
    "test_all_logits_near_minus_1000",
    "test_combine_keeps_dtype_and_leaves_the_summaries_alone",
    "test_empty_shards_change_nothing",
    "test_huge_logits_on_one_rank",
    "test_ranks_match_dense_attention_on_ragged_batches",
]

EDIT = (
    "    global_m = m.clone(memory_format=torch.contiguous_format)\n",
    '    global_m = m\n',
)
