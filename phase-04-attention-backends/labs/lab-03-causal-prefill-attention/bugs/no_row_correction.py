"""The running max of each row is updated but its history is not rescaled (no ``corr``).

Exact as long as a row's first block holds its largest score; as soon as a later block raises
a row's max, that row's earlier blocks keep weights on the old, smaller max and count
exp(m_new - m_old) times too much.
"""

CAUGHT_BY = ["test_prefill_from_scratch_matches_causal_attention", "test_chunked_equals_one_shot"]

EDITS = [
    ("            denom[:, h] = denom[:, h] * corr + p.sum(axis=1)\n",
     "            denom[:, h] = denom[:, h] + p.sum(axis=1)  # BUG: history not rescaled\n"),
    ("            acc[:, h] = acc[:, h] * corr[:, None] + p @ v_block[:, kv_head]\n",
     "            acc[:, h] = acc[:, h] + p @ v_block[:, kv_head]  # BUG: same\n"),
]
