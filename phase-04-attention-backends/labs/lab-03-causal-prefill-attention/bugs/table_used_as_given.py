"""The numpy part uses ``block_table`` as it came, without the given ``_as_block_table``.

Symptom: a table given as a list (any 1-D sequence of ids is a table) fails inside the block-id
check with an AttributeError, and a table of floats is not refused with a ValueError naming
block_table but fails later with an IndexError from numpy. Right for every int64 array.
"""

CAUGHT_BY = ["test_takes_lists_as_arrays", "test_bad_input_gets_a_clear_error"]

EDITS = [
    (
        "    q = np.asarray(q, dtype=np.float64)\n    block_table = _as_block_table(block_table)\n",
        "    q = np.asarray(q, dtype=np.float64)  # BUG: block_table used as it came\n",
    ),
    (
        "    block_table = _as_block_table(block_table)\n    start, block_size = _check_chunk(",
        "    start, block_size = _check_chunk(",
    ),
]
