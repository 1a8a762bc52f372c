"""The largest partition not rounded down to whole blocks.

Symptom: 12,216 tokens for the source's configuration under 48 KiB; 12,216 is not a
multiple of 16, and vLLM requires PARTITION_SIZE % block_size == 0 (a partition
owns whole blocks).
"""

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_largest_partition_size_of_the_source_configuration", "test_largest_partition_size_matches_a_search"]


def largest_partition_size(head_size, block_size, limit_bytes=49152, num_threads=128, query_itemsize=2):
    smallest = _solution.shared_memory_budget(head_size, block_size, num_threads, query_itemsize)
    if smallest.total_bytes > limit_bytes:
        return 0
    return (limit_bytes - smallest.static_bytes) // 4


_solution = load_sibling(__file__)
globals().update(solution_with(__file__, largest_partition_size=largest_partition_size))
