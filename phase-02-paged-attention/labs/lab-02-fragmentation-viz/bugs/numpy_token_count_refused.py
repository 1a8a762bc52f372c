"""blocks_needed checks ``isinstance(num_tokens, int)``, which a numpy integer is not.

Python ints pass, while a length read out of an array (np.int64, np.uint8) is refused as if it were
no integer. Symptom: ValueError for blocks_needed(np.int64(17), np.int64(16)).
"""

CAUGHT_BY = ["test_blocks_needed_takes_numpy_integers"]

EDIT = (
    "    if isinstance(num_tokens, bool) or not isinstance(num_tokens, int | np.integer) or num_tokens < 0:\n",
    "    if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 0:\n",
)
