"""write_kv's checks of the caches' rank and of the slot mapping's shape are gone.

A 3-D cache or a 2-D (or float) slot mapping reaches the scatter. Symptom: numpy's own errors
(or a wrong write), never a ValueError naming k_cache or slot_mapping.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDITS = [
    ("        if not isinstance(cache, np.ndarray) or cache.ndim != 4:\n",
     "        if not isinstance(cache, np.ndarray) and cache.ndim != 4:\n"),
    ("    if slots.ndim != 1 or (slots.size and not np.issubdtype(slots.dtype, np.integer)):\n",
     "    if slots.ndim != 1 and (slots.size and not np.issubdtype(slots.dtype, np.integer)):\n"),
]
