"""The output is allocated in the caches' dtype instead of float64.

Harmless while the caches are float64; with a float16 cache every output value is rounded to
about three decimal digits (and the API promises float64). Symptom: a dtype mismatch, and errors
of ~1e-3 against the float64 truth.
"""

CAUGHT_BY = ["test_paged_attention_reads_half_precision_caches"]

EDIT = (
    "    out = np.zeros((num_heads, v_cache.shape[3]))\n",
    "    out = np.zeros((num_heads, v_cache.shape[3]), dtype=v_cache.dtype)  # the cache's dtype\n",
)
