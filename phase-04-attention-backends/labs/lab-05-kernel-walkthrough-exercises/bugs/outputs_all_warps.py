"""Output staging sized for all NUM_WARPS warps instead of NUM_WARPS / 2.

Symptom: too large by half. The kernel's tree reduction has the upper half of the warps
write while the lower half read, so at most NUM_WARPS / 2 rows are live.
"""

CAUGHT_BY = ["test_budget_of_the_source_configuration", "test_budget_follows_the_launcher"]

EDIT = (
    '    outputs = (num_warps // 2) * head_size * FLOAT32_BYTES\n',
    '    outputs = num_warps * head_size * FLOAT32_BYTES  # BUG: only half the warps write at once\n',
)
