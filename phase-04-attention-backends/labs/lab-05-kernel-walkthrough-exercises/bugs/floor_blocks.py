"""Floor instead of ceiling: ``seq_len // block_size`` blocks per sequence.

Symptom: a sequence whose length is not a multiple of the block size loses its last,
partly filled block (140 tokens in blocks of 16 -> 8 blocks, 12 tokens unread).
"""

CAUGHT_BY = ["test_blocks_per_seq_is_the_ceiling", "test_slot_mapping_of_the_corrected_source_example"]

EDIT = (
    '    return (lens + block_size - 1) // block_size\n',
    '    return lens // block_size  # BUG: floor, the partly filled last block is lost\n',
)
