"""shard_slot_mapping numbers each rank's tokens in the order they are handed over.

"Each rank packs the tokens it receives in order" read as a running count: the k-th token of the
array that goes to rank r gets local position k. That is right when the array is the whole
sequence from token 0, in order, and wrong for anything else. Symptom: a decode step, which writes
only the sequence's last token, writes it to local position 0, over the rank's first token; a
shuffled list of tokens lands in the wrong slots.
"""

CAUGHT_BY = ["test_shard_slot_mapping_uses_each_ranks_own_table"]

EDIT = (
    "    ranks, local = token_owner(positions, world_size, stripe)\n",
    "    ranks, _ = token_owner(positions, world_size, stripe)\n"
    "    local = np.array([np.sum(ranks[:i] == r) for i, r in enumerate(ranks)], dtype=np.int64)  # a running count\n",
)
