"""The dtype table gives torch's name "half" one byte, as if it were fp8.

Symptom: cache_dtype_bytes(.., "half") is 1 where float16's 2 is expected.
"""

CAUGHT_BY = ["test_cache_dtype_bytes"]

SOURCE = "_config.py"

EDIT = (
    '    "float16": 2, "half": 2,\n',
    '    "float16": 2, "half": 1,\n',
)
