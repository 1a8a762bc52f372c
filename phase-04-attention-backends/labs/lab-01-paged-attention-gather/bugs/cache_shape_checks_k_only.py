"""The caches' rank check needs both caches wrong before it refuses them.

``or`` became ``and``: a key cache of the wrong rank goes through as long as the value cache is
right (a value cache of the wrong rank is still caught, by the comparison of the two shapes).
Symptom: an IndexError ("tuple index out of range") from the next check, which reads the key
cache's d, instead of a ValueError naming k_cache.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if np.ndim(k_cache) != 3 or np.ndim(v_cache) != 3:\n",
    "    if np.ndim(k_cache) != 3 and np.ndim(v_cache) != 3:\n",
)
