"""shared_memory_budget assumes a 4-byte (fp32) query when none is named, not vLLM's fp16.

Symptom: query_bytes doubled (and the totals off) for calls that leave query_itemsize out.
"""

CAUGHT_BY = ["test_defaults_are_the_launchers"]

EDIT = (
    "                         query_itemsize: int = 2) -> SmemBudget:\n",
    "                         query_itemsize: int = 4) -> SmemBudget:\n",
)
