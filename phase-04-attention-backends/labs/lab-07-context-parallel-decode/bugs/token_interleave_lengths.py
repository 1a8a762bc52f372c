"""Every rank's length from the token-interleaved formula: n // W, plus 1 for the first n % W ranks.

That is the formula of the stripe-1 layout, vLLM's default (cp_kv_cache_interleave_size = 1); with
stripes of several tokens the remainder is dealt a stripe at a time, not a token at a time, as
vLLM's get_dcp_local_seq_lens does for larger interleave sizes. Symptom: right for stripe 1 only.
"""

CAUGHT_BY = [
    "test_local_seq_lens_count_each_ranks_tokens",
]

EDIT = (
    '    return full_rounds * stripe + np.clip(rest - ranks * stripe, 0, stripe)\n',
    '    return seq_lens // world_size + (ranks < seq_lens % world_size)\n',
)
