"""The largest partition computed from the logits alone: ``(limit - static) / 4``, rounded to blocks.

Symptom: when the output staging (NUM_WARPS / 2 rows of head_size fp32) is larger than
the limit allows, a partition is still reported as fitting, and the launch would fail.
"""

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_largest_partition_size_matches_a_search"]


def largest_partition_size(head_size, block_size, limit_bytes=49152, num_threads=128, query_itemsize=2):
    static = _solution.shared_memory_budget(head_size, block_size, num_threads, query_itemsize).static_bytes
    tokens = (limit_bytes - static) // 4
    return max(tokens // block_size * block_size, 0)


_solution = load_sibling(__file__)
globals().update(solution_with(__file__, largest_partition_size=largest_partition_size))
