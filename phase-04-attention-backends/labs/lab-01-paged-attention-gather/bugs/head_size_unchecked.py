"""_check_paged never compares the query's size d with the key cache's.

A query of the wrong size reaches ``k_block @ q``. Symptom: numpy's "matmul: Input operand 1 has
a mismatch" ValueError, which names neither q nor the cache, instead of the check's message.
"""

SOURCE = "_checks.py"  # the given input checks

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    if k_cache.shape[2] != q.shape[0]:\n",
    "    if False:  # the sizes are never compared\n",
)
