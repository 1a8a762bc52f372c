"""The staged query counted at 4 bytes an element whatever its dtype.

Symptom: 512 bytes instead of 256 for a 128-wide fp16 query. The kernel stages the
query in its own dtype (Q_vec of scalar_t); only logits and accumulators are fp32.
"""

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_budget_of_the_source_configuration", "test_budget_follows_the_launcher"]


def shared_memory_budget(head_size, partition_size, num_threads=128, query_itemsize=2):
    return _solution.shared_memory_budget(head_size, partition_size, num_threads, 4)


_solution = load_sibling(__file__)
globals().update(solution_with(__file__, shared_memory_budget=shared_memory_budget))
