"""slot_mapping gives a batch of no sequences one column: max_len defaults to 1, not 0.

Symptom: shape [0, 1] for an empty batch, where ``[num_seqs, max(seq_lens)]`` is [0, 0].
"""

CAUGHT_BY = ["test_slot_mapping_checks_the_blocks_a_sequence_uses"]

EDIT = (
    "    max_len = int(lens.max()) if lens.size else 0\n",
    "    max_len = int(lens.max()) if lens.size else 1\n",
)
