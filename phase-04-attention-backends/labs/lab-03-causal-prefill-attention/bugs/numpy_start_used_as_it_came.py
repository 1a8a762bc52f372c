"""paged_prefill_attention calls the given check but keeps ``start`` and ``block_size`` as they came.

The check accepts a numpy integer of any width and hands back Python ints; a version that drops what
it returns does its arithmetic in the caller's type. Symptom: right for Python ints and wide numpy
ones, wrong for a narrow one: ``start = np.int8(123)`` with 10 queries makes ``start + M`` wrap to
-123, no block is read, and every row is 0 / 0 = NaN (``np.uint8(250)`` wraps to 4: rows see 4 keys).
"""

CAUGHT_BY = ["test_integer_arguments_take_numpy_integers"]

EDIT = (
    "    start, block_size = _check_prefill(q, k_cache, v_cache, block_table, start, block_size)\n",
    "    _check_prefill(q, k_cache, v_cache, block_table, start, block_size)  # BUG: its ints dropped\n",
)
