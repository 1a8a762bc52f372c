""""auto" is taken as 2 bytes, the size of the usual half-precision model.

Symptom: right for every fp16 and bf16 checkpoint; a float32 model's cache is counted at half its
size.
"""

CAUGHT_BY = ["test_cache_dtype_bytes", "test_cache_dtype_scales_the_bytes"]

EDIT = (
    '    return _dtype_bytes(_model_dtype(config) if cache_dtype == "auto" else cache_dtype)\n',
    '    return 2 if cache_dtype == "auto" else _dtype_bytes(cache_dtype)\n',
)
