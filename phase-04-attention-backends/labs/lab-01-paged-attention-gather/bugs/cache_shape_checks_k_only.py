"""The caches' shape check needs both caches wrong before it refuses them.

``or`` became ``and``: a value cache of the wrong rank goes through as long as the key cache is
right. Symptom: an IndexError from deep inside the loop instead of a ValueError naming v_cache.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if np.ndim(k_cache) != 3 or np.ndim(v_cache) != 3:\n",
    "    if np.ndim(k_cache) != 3 and np.ndim(v_cache) != 3:\n",
)
