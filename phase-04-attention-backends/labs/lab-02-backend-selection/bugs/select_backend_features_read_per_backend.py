"""select_backend hands the caller's ``features`` to every backend's check as it came.

Each call of backend_problems reads the iterable again; a generator is empty after the first.
Symptom: select_backend('H100', 'bfloat16', 576, features=<a generator of 'mla'>) picks
TRITON_ATTN, a dense backend, for an MLA layer.
"""

CAUGHT_BY = ["test_features_may_be_any_iterable"]

EDIT = (
    '    features = _check_layer("select_backend", dtype, head_size, block_size, kv_cache_dtype, features)\n',
    "    pass  # BUG: features not read once into a set\n",
)
