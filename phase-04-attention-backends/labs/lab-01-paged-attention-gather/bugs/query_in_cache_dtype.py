"""The query is converted to the caches' dtype (float16), as a kernel computing in it would.

A float32 query is rounded to float16.

Harmless while everything is float64; with a float16 cache the query keeps about three decimal
digits, every score moves by ~1e-3, and so does the output. Symptom: only the half-precision
test fails, by far more than float64 rounding.
"""

CAUGHT_BY = ["test_reads_half_precision_caches"]

EDIT = (
    "    q = np.asarray(q, dtype=np.float64)\n    block_table = np.asarray(block_table)\n",
    "    q = np.asarray(q, dtype=k_cache.dtype)  # the cache's dtype, not float64\n"
    "    block_table = np.asarray(block_table)\n",
)
