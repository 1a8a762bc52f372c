"""The all-gather's piece counted as the triple (m, denom, acc), head_dim + 2 numbers.

The lab's all-gather sends (out, lse): head_dim + 1 numbers per (sequence, head). Symptom: every
all-gather count too large by world_size (world_size - 1) * batch * num_heads * itemsize.
"""

CAUGHT_BY = [
    "test_combine_bytes_counts_a_ring_step_by_step",
    "test_combine_bytes_readme_numbers",
]

EDIT = (
    '        return world_size * (world_size - 1) * pairs * (head_dim + 1) * itemsize\n',
    '        return world_size * (world_size - 1) * pairs * (head_dim + 2) * itemsize\n',
)
