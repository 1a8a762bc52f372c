"""The override returned before the platform's dtype check.

The check belongs to the worker's start, before any layer: no backend, asked for or not, makes
bfloat16 run below 8.0. Symptom: ``override="TRITON_ATTN"`` on a T4 with a bfloat16 model is
accepted.
"""

CAUGHT_BY = ["test_platform_check_comes_before_the_override"]

EDIT = (
    '    refusal = platform_refusal(capability, dtype)\n'
    '    if refusal is not None:\n',
    '    refusal = None if override is not None else platform_refusal(capability, dtype)  # BUG: override first\n'
    '    if refusal is not None:\n',
)
