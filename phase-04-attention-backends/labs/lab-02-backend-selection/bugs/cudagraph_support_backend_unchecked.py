"""cudagraph_support looks the backend up in its table without checking it first.

Every name of BACKENDS is in the table, so the support levels are right; a misspelt backend
("FLASH", "flash_attn") is a bare KeyError from inside the table instead of a ValueError that lists
the backends. Symptom: only the unknown-backend test fails.
"""

CAUGHT_BY = ["test_cudagraph_support_rejects_unknown_backends"]

EDIT = (
    '    _check_backend("cudagraph_support", backend)\n',
    '',
)
