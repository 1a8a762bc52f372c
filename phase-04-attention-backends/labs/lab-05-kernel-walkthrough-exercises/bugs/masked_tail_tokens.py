"""The last block's whole range listed as tokens, including those at or past seq_len.

Symptom: a 140-token sequence in blocks of 16 reports tokens 140..143 as work: those slots
hold another request's data or garbage, and no score of theirs may count.
"""

CAUGHT_BY = ["test_warp_tokens_cover_every_token_exactly_once", "test_warp_zero_of_the_source_example"]

EDIT = (
    '    runs = [np.arange(b * block_size, min((b + 1) * block_size, seq_len), dtype=np.int64) for b in blocks]\n',
    '    runs = [np.arange(b * block_size, (b + 1) * block_size, dtype=np.int64) for b in blocks]  # BUG: no cut\n',
)
