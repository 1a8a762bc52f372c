"""slot_mapping checks the ids of one block more than a sequence needs: its first padding column.

Padding may hold anything (-1 is vLLM's habit). Symptom: a valid table refused with "negative
physical block id" for a sequence whose own blocks are all fine.
"""

CAUGHT_BY = ["test_slot_mapping_checks_the_blocks_a_sequence_uses"]

EDIT = (
    "        if (tables[s, :n_blocks] < 0).any():\n",
    "        if (tables[s, :n_blocks + 1] < 0).any():\n",
)
