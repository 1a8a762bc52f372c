"""The slot mapping skips the block table: slot = position.

Each token is written at its logical position, as if block i of every request were physical block i:
requests overwrite each other's keys.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "    np.add(block_numbers * block_size, positions % block_size, out=buffers.slot_mapping.np[:num_tokens])\n",
    "    buffers.slot_mapping.np[:num_tokens] = positions  # the logical block taken for the physical one\n",
)
