"""The all-reduce's bytes counted as world_size (world_size - 1) times the tensor, like an all-gather.

A ring all-reduce sends each of its world_size chunks world_size - 1 times in each of its two
phases: 2 (world_size - 1) times the tensor in all, not world_size (world_size - 1). Symptom: the
all-reduce looks as costly as the all-gather at 2 ranks and worse beyond.
"""

CAUGHT_BY = [
    "test_combine_bytes_counts_a_ring_step_by_step",
    "test_combine_bytes_readme_numbers",
]

EDIT = (
    '    return 2 * (world_size - 1) * numbers * itemsize\n',
    '    return world_size * (world_size - 1) * numbers * itemsize\n',
)
