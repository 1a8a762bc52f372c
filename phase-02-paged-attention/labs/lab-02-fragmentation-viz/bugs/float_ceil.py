"""Blocks counted with ``ceil(num_tokens / block_size)`` in floating point.

Right for every length a real request has, wrong for huge counts: (2**60 + 1) / 16 rounds to
exactly 2**56 before the ceiling sees it, so the last token loses its block. Integer
arithmetic has no such limit.
"""

CAUGHT_BY = ["test_blocks_needed_is_a_ceiling"]

EDIT = (
    '    return -(-int(num_tokens) // block_size)  # ceiling division in integers: no float rounding\n',
    '    return int(np.ceil(num_tokens / block_size))  # through a float\n',
)
