"""write_kv scatters through ``k_cache.reshape(-1, ...)``: rows indexed by the flat slot.

On a contiguous cache the reshape is a view and the write lands. On the views engines pass (K and
V as ``kv[:, 0]`` and ``kv[:, 1]`` of one fused pool, a pool stored heads outside the slots) numpy's
reshape is a copy: the tokens go into it and the caller's caches keep what they held (NaN here).
"""

CAUGHT_BY = ["test_write_and_attend_on_every_cache_layout"]

EDITS = [
    ("    k_cache[blocks, offsets] = np.asarray(new_k)[keep]\n",
     "    k_cache.reshape(-1, *k_cache.shape[2:])[slots] = np.asarray(new_k)[keep]\n"),
    ("    v_cache[blocks, offsets] = np.asarray(new_v)[keep]\n",
     "    v_cache.reshape(-1, *v_cache.shape[2:])[slots] = np.asarray(new_v)[keep]\n"),
]
