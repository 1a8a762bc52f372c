"""The local position taken as t % stripe: the position in the stripe, not among the rank's tokens.

Every round of dealing restarts at 0, so the tokens of the second round overwrite those of the
first. Right only while each rank has received a single stripe. Symptom: local positions repeat.
"""

CAUGHT_BY = [
    "test_layout_rejects_bad_input",
    "test_shard_slot_mapping_uses_each_ranks_own_table",
    "test_token_owner_deals_stripes_round_robin",
    "test_token_owner_interleaves_single_tokens_like_vllm",
]

EDIT = (
    '    local_positions = (stripe_index // world_size) * stripe + positions % stripe\n',
    '    local_positions = positions % stripe\n',
)
