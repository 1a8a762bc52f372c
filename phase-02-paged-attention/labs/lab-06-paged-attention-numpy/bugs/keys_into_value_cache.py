"""A copy-paste slip in write_kv: the keys are written into the value cache too.

Symptom: the key cache is right, so every slot-mapping check passes; the value cache holds
keys, so attention weights the wrong vectors.
"""

CAUGHT_BY = ["test_write_kv_scatters_in_place", "test_write_then_gather_round_trips", "test_chunked_prefill_write_path"]

EDIT = (
    "    v_cache[blocks, offsets] = np.asarray(new_v)[keep]\n",
    "    v_cache[blocks, offsets] = np.asarray(new_k)[keep]  # new_k, not new_v\n",
)
