"""backend_problems trusts its arguments: the checks left to select_backend.

backend_problems is public, and called on its own. Symptom: an unknown backend is a KeyError from
LIMITS, dtype "float64" gets a reason, head size 0 gets none, and features "mla" is read as the
letters m, l, a.
"""

CAUGHT_BY = ["test_backend_problems_and_candidate_order_refuse_bad_arguments"]

EDIT = (
    '    _check_backend("backend_problems", backend)\n'
    '    features = _check_layer("backend_problems", dtype, head_size, block_size, kv_cache_dtype, features)\n',
    '    features = frozenset(features)  # BUG: arguments unchecked\n',
)
