"""The rank of a token taken as its stripe number, without the modulo: t // stripe.

That is the contiguous split's formula, right when the stripe holds a whole rank's share; with any
smaller stripe the ranks run past world_size - 1. Symptom: rank numbers that do not exist, or a
table lookup out of range.
"""

CAUGHT_BY = [
    "test_shard_slot_mapping_uses_each_ranks_own_table",
    "test_token_owner_deals_stripes_round_robin",
    "test_token_owner_interleaves_single_tokens_like_vllm",
]

EDIT = (
    '    ranks = stripe_index % world_size\n',
    '    ranks = stripe_index  # no wrap-around\n',
)
