"""The all-reduce of m left out of the byte count: only (denom, acc) is counted.

The max has to travel first, one number per (sequence, head). Symptom: every all-reduce count short
by 2 (world_size - 1) * batch * num_heads * itemsize.
"""

CAUGHT_BY = [
    "test_combine_bytes_counts_a_ring_step_by_step",
    "test_combine_bytes_readme_numbers",
]

EDIT = (
    '    numbers = pairs * 1 + pairs * (head_dim + 1)  # the MAX of m, then the SUM of (denom, acc)\n',
    '    numbers = pairs * (head_dim + 1)\n',
)
