"""The layer's dtype not checked: a dtype outside DTYPES goes on to the rules.

select_backend still refuses it (platform_refusal checks the dtype), so the mistake shows only
where the check is the only one. Symptom: backend_problems('FLASH_ATTN', 'H100', 'float64', 128,
16) returns a reason instead of a ValueError naming dtype.
"""

SOURCE = "_checks.py"

CAUGHT_BY = ["test_backend_problems_and_candidate_order_refuse_bad_arguments"]

EDIT = (
    "    if dtype not in DTYPES:\n"
    '        raise ValueError(f"{where}: dtype must be one of {DTYPES}, got {dtype!r}")\n',
    "    pass  # BUG: dtype unchecked\n",
)
