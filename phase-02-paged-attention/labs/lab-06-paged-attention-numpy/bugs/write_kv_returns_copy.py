"""write_kv scatters into copies of the caches and returns them; the caller's arrays never change.

Symptom: the caches the engine (and the test) holds stay as they were, so the
tokens "written" are nowhere to be found and attention reads old contents (poison).
"""

import numpy as np

from labkit.bugs import solution_with

CAUGHT_BY = ["test_write_kv_scatters_in_place", "test_write_then_gather_round_trips", "test_chunked_prefill_write_path"]


def write_kv(k_cache, v_cache, new_k, new_v, slot_mapping):
    k_cache, v_cache = k_cache.copy(), v_cache.copy()  # BUG: writes go to private copies
    slots = np.asarray(slot_mapping, dtype=np.int64)
    block_size = k_cache.shape[1]
    k_cache[slots // block_size, slots % block_size] = new_k
    v_cache[slots // block_size, slots % block_size] = new_v
    return k_cache, v_cache


globals().update(solution_with(__file__, write_kv=write_kv))
