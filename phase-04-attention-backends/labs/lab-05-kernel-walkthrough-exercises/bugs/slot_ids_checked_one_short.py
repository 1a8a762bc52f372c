"""slot_mapping checks the ids of one block fewer than a sequence needs.

``tables[s, :n_blocks - 1]``: the last block a sequence uses is never checked, so a -1 there
becomes slot -4 (blocks of 4) and is written as if it were a token's slot. Symptom: negative
slots among a sequence's tokens instead of a ValueError naming the sequence.
"""

CAUGHT_BY = ["test_slot_mapping_checks_the_blocks_a_sequence_uses"]

EDIT = (
    "        if (tables[s, :n_blocks] < 0).any():\n",
    "        if (tables[s, :n_blocks - 1] < 0).any():\n",
)
