"""The all-gather counted as world_size x world_size pieces: a rank sending its own piece to itself.

Every rank receives the world_size - 1 pieces of the others, not its own. Symptom: too many bytes,
and a single rank "sends" a whole piece; the message names "itself included".
"""

CAUGHT_BY = ["test_combine_bytes_counts_a_ring_step_by_step", "test_combine_bytes_readme_numbers"]

EDIT = (
    '        return world_size * (world_size - 1) * pairs * (head_dim + 1) * itemsize\n',
    '        return world_size * world_size * pairs * (head_dim + 1) * itemsize\n',
)
