"""The override matched as written: ``flashinfer`` is an unknown backend.

AttentionConfig upper-cases the name it is given (``--attention-backend flash_attn`` works), and
reads ``auto`` as no override at all. Symptom: a ValueError listing the backends for
``"flashinfer"``, ``"Flash_Attn"`` and ``"auto"``.
"""

SOURCE = "_checks.py"

CAUGHT_BY = ["test_override_is_obeyed", "test_override_auto_is_no_override"]

EDIT = (
    '    if override is None or (isinstance(override, str) and override.lower() == "auto"):\n'
    '        return None\n'
    '    return _check_backend(where, override.upper() if isinstance(override, str) else override, "override")\n',
    '    if override is None:\n'
    '        return None\n'
    '    return _check_backend(where, override, "override")  # BUG: case and "auto" not handled\n',
)
