"""Ceil instead of floor: the stripe of token t taken as ceil(t / stripe).

Token 0 stays on rank 0, but tokens 1 .. stripe then share a stripe, and every boundary moves by
one token: the last token of each stripe lands on the next rank. Symptom: ranks and local positions
wrong at stripe boundaries (nothing changes with stripe 1, where floor and ceil agree).
"""

CAUGHT_BY = [
    "test_shard_slot_mapping_uses_each_ranks_own_table",
    "test_token_owner_deals_stripes_round_robin",
]

EDIT = (
    '    stripe_index = positions // stripe\n',
    '    stripe_index = -(-positions // stripe)  # rounded up\n',
)
