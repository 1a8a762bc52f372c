"""_check_attention never compares the query's head_dim with the caches'.

A query of the wrong head size reaches ``k[:, kv_head, :] @ q[h]``. Symptom: numpy's "matmul:
Input operand 1 has a mismatch" ValueError, which names neither q nor the caches, instead of the
check's message naming head_dim.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if k_cache.shape[3] != q.shape[1]:\n",
    "    if False:  # the head sizes are never compared\n",
)
