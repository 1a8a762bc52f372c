"""The largest partition not rounded down to whole blocks.

Symptom: 12,216 tokens for the source's configuration under 48 KiB; 12,216 is not a multiple
of 16, and vLLM's kernel assumes PARTITION_SIZE % block_size == 0 (a partition owns whole blocks).
"""

CAUGHT_BY = ["test_largest_partition_size_of_the_source_configuration", "test_largest_partition_size_matches_a_search"]

EDIT = (
    '    return tokens // block_size * block_size\n',
    '    return tokens  # BUG: not whole blocks\n',
)
