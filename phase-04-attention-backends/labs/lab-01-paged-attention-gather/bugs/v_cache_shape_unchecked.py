"""The given checks look at the value cache's rank only, never compare its shape with the key cache's.

A value cache with blocks of another size, another d or fewer blocks goes through and is read at
the key cache's (block, offset). Symptom: values from the wrong rows without a word, an answer of
the wrong width, or numpy's IndexError or matmul error, never a ValueError naming v_cache.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if v_cache.shape != k_cache.shape:\n",
    "    if False:  # the rank alone was checked\n",
)
