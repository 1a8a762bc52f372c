"""available_kv_memory never checks free_memory against total_memory.

Free memory above the card's total is a measurement gone wrong; taken in, it covers any request.
Symptom: available_kv_memory with 81 GiB free on an 80 GiB card answers a budget.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    if free_memory > total_memory:\n"
    '        raise ValueError(f"free_memory ({free_memory}) cannot exceed total_memory ({total_memory})")\n',
    "",
)
