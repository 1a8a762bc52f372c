"""available_kv_memory checks every size but weights_memory.

A negative or fractional weights_memory then gives a budget that is too large or a float. Symptom:
available_kv_memory(weights_memory=-1) answers instead of raising a ValueError naming it.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    '    weights_memory = _check_bytes("weights_memory", weights_memory)\n',
    "",
)
