"""The local position taken as t // world_size, the formula for single-token interleaving.

With stripe 1 (vLLM's layout) that is right; with a block or a longer stripe, tokens of one stripe
get positions world_size apart and collide with other stripes' tokens. Symptom: local positions
wrong for every stripe > 1.
"""

CAUGHT_BY = [
    "test_shard_slot_mapping_uses_each_ranks_own_table",
    "test_token_owner_deals_stripes_round_robin",
]

EDIT = (
    '    local_positions = (stripe_index // world_size) * stripe + positions % stripe\n',
    '    local_positions = positions // world_size\n',
)
