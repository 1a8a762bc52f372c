"""Output staging sized for all NUM_WARPS warps instead of NUM_WARPS / 2.

Symptom: too large by half. The kernel's tree reduction has the upper half of the
warps write while the lower half read, so at most NUM_WARPS / 2 rows are live.
"""

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_budget_of_the_source_configuration", "test_budget_follows_the_launcher"]


def shared_memory_budget(head_size, partition_size, num_threads=128, query_itemsize=2):
    b = _solution.shared_memory_budget(head_size, partition_size, num_threads, query_itemsize)
    outputs = (num_threads // 32) * head_size * 4
    dynamic = max(b.logits_bytes, outputs)
    return _solution.SmemBudget(b.logits_bytes, outputs, dynamic, b.query_bytes, b.reduction_bytes,
                                b.static_bytes, dynamic + b.static_bytes)


_solution = load_sibling(__file__)
globals().update(solution_with(__file__, shared_memory_budget=shared_memory_budget))
