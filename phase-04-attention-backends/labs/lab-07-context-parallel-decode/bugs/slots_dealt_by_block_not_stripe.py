"""shard_slot_mapping deals the tokens in stripes of block_size, whatever the stripe.

Block-interleaving is one layout among several: the stripe decides who holds a token. Symptom: right
when stripe == block_size, wrong for token-interleaved, 3-token and contiguous stripes; the message
names "dealing stripes of block_size tokens, not of stripe".
"""

CAUGHT_BY = ["test_shard_slot_mapping_uses_each_ranks_own_table"]

EDIT = (
    '    ranks, local = token_owner(positions, world_size, stripe)\n',
    '    ranks, local = token_owner(positions, world_size, block_size)\n',
)
