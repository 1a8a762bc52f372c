"""Dynamic shared memory counted as logits + output staging instead of their max.

Symptom: the budget overstates by the smaller of the two (1,024 bytes for the source's
configuration), so partitions that fit are refused. The kernel reuses the logits
buffer for the warps' outputs after a barrier: one buffer, two uses.
"""

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_budget_of_the_source_configuration", "test_budget_follows_the_launcher"]


def shared_memory_budget(head_size, partition_size, num_threads=128, query_itemsize=2):
    b = _solution.shared_memory_budget(head_size, partition_size, num_threads, query_itemsize)
    dynamic = b.logits_bytes + b.outputs_bytes
    return _solution.SmemBudget(b.logits_bytes, b.outputs_bytes, dynamic, b.query_bytes, b.reduction_bytes,
                                b.static_bytes, dynamic + b.static_bytes)


_solution = load_sibling(__file__)
globals().update(solution_with(__file__, shared_memory_budget=shared_memory_budget))
