"""combine_bytes counts numbers, not bytes: itemsize is left out.

Symptom: right only for itemsize 1; float32 summaries count a quarter of their bytes, float64 an
eighth.
"""

CAUGHT_BY = ["test_combine_bytes_counts_a_ring_step_by_step", "test_combine_bytes_readme_numbers"]

EDITS = [
    ("        return world_size * (world_size - 1) * pairs * (head_dim + 1) * itemsize\n",
     "        return world_size * (world_size - 1) * pairs * (head_dim + 1)\n"),
    ("    return 2 * (world_size - 1) * numbers * itemsize\n",
     "    return 2 * (world_size - 1) * numbers\n"),
]
