"""write_kv scatters into copies of the caches; the caller's arrays never change.

A copy hides in many places: `k_cache = k_cache.copy()` "to be safe", a reshape of a
non-contiguous array, `np.concatenate`. Symptom: the caches the engine (and the test) holds stay
as they were, so the tokens "written" are nowhere to be found and attention reads old contents
(poison).
"""

CAUGHT_BY = ["test_write_kv_scatters_in_place", "test_write_then_gather_round_trips", "test_chunked_prefill_write_path"]

EDIT = (
    "    block_size = k_cache.shape[1]\n",
    "    block_size = k_cache.shape[1]\n"
    "    k_cache, v_cache = k_cache.copy(), v_cache.copy()  # writes go to private copies\n",
)
