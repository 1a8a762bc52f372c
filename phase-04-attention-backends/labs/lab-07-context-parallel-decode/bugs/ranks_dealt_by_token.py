"""Ranks dealt by single tokens (t % world_size) while the local position follows the stripes.

The rank ignores the stripe: right for stripe 1 only. Symptom: with stripes of a block or of 3
tokens, most tokens land on the wrong rank; the test's message names "dealing single tokens".
"""

CAUGHT_BY = [
    "test_shard_slot_mapping_uses_each_ranks_own_table",
    "test_token_owner_deals_stripes_round_robin",
]

EDIT = (
    '    ranks = stripe_index % world_size\n',
    '    ranks = positions % world_size  # dealt by token\n',
)
