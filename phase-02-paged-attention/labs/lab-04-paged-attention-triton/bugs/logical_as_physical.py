"""Wrong block id: the logical block index is used as the physical block, the table is never read.

Symptom: right only when the table happens to be the identity (a fresh cache, one
sequence); with shuffled blocks it reads other sequences' blocks or poisoned ones.
"""

CAUGHT_BY = ["test_triton_matches_dense", "test_source_example_130_tokens_in_9_scattered_blocks"]

EDIT = (
    '        physical = tl.load(block_table_ptr + logical).to(tl.int64)  # int64: offsets pass 2**31\n',
    '        physical = logical  # BUG: the table is never read\n',
)
