"""A 1-byte (fp8) query accepted by the budget.

Symptom: none in the arithmetic, a wrong model of the kernel: with an fp8 KV cache the
cache's vectors are converted to the query's type; the query itself stays fp16, bf16 or
fp32, so a 1-byte query describes no launch vLLM makes.
"""

CAUGHT_BY = ["test_budget_rejects_bad_input"]

EDIT = (
    '    if query_itemsize not in (2, 4):\n',
    '    if query_itemsize not in (1, 2, 4):  # BUG: the query is never fp8\n',
)
