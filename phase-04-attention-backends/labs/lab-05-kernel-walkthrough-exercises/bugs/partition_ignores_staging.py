"""The largest partition computed from the logits alone: the output staging is never checked.

Symptom: when the output staging (NUM_WARPS / 2 rows of head_size fp32) is larger than the
limit allows, a partition is still reported as fitting, and the launch would fail.
"""

CAUGHT_BY = ["test_largest_partition_size_matches_a_search"]

EDIT = (
    '    if not smem_fits(smallest, limit_bytes):\n',
    '    if smallest.logits_bytes + smallest.static_bytes > limit_bytes:  # BUG: the staging is ignored\n',
)
