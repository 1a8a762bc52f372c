"""An unknown override reported as an unknown "backend".

Symptom: select_backend(..., override="FLASH") says "backend 'FLASH' is not one of ..." without
saying that it is --attention-backend, the override, that is wrong.
"""

SOURCE = "_checks.py"

CAUGHT_BY = ["test_unknown_override_names_the_backends"]

EDIT = (
    '    return _check_backend(where, override.upper() if isinstance(override, str) else override, "override")\n',
    '    return _check_backend(where, override.upper() if isinstance(override, str) else override)  # BUG\n',
)
