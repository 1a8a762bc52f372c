"""The all-reduce counted for one rank only: 2 (W - 1) / W of the tensor, not W times that.

In a ring each rank sends 2 (W - 1) chunks of 1/W of the tensor; combine_bytes counts all ranks
together. Symptom: W times too few bytes; the message names "one rank's share of the ring only".
"""

CAUGHT_BY = ["test_combine_bytes_counts_a_ring_step_by_step", "test_combine_bytes_readme_numbers"]

EDIT = (
    '    return 2 * (world_size - 1) * numbers * itemsize\n',
    '    return 2 * (world_size - 1) * numbers * itemsize // world_size\n',
)
