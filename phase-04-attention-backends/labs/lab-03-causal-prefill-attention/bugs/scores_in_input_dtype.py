"""Float32 inputs are computed in float32: q and each block are not converted to float64.

``np.asarray(q)`` keeps the caller's dtype, so the scores and the weights of float32 inputs are
float32 (seven digits): the answer is off by about 1e-7 where float64 gives 1e-15. The result
is still a float64 array (the accumulator is), which hides it from a dtype check.
"""

CAUGHT_BY = ["test_reads_only_and_returns_float64"]

EDITS = [
    ("    q = np.asarray(q, dtype=np.float64)\n",
     "    q = np.asarray(q)  # BUG: the caller's dtype kept\n"),
    ("        k_block = np.asarray(k_cache[physical, :valid], dtype=np.float64)  # [valid, num_kv_heads, head_dim]\n",
     "        k_block = np.asarray(k_cache[physical, :valid])  # BUG: the cache's dtype kept\n"),
]
