"""The given checks look at the value cache's rank only, never compare its shape with the key cache's.

A value cache with blocks of another size, other KV heads or another head size goes through, and is
indexed with the key cache's (block, offset) split. Symptom: values read from (or written to) the
wrong rows without a word, an answer of the wrong width, or numpy's IndexError when the value
cache holds fewer blocks, never a ValueError naming v_cache.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if np.shape(v_cache) != np.shape(k_cache):\n",
    "    if np.ndim(v_cache) != np.ndim(k_cache):  # the rank alone\n",
)
