"""The slot of position p is p: the block table is not consulted.

Every sequence writes its token p to row p of the cache, as if it owned the cache from block 0 (the
null block) on: sequences overwrite each other, and the attention reads them back through their real
tables.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_step_inputs_match_brute_force"]

EDIT = (
    "            inputs.slot_mapping.extend(table[p // block_size] * block_size + p % block_size for p in positions)\n",
    "            inputs.slot_mapping.extend(positions)  # logical position as the row\n",
)
