"""The accumulator is made like a value row of the cache, in the cache's dtype.

``np.zeros_like(v_cache[0, 0])`` is float16 for a float16 cache. The first block widens it: the
correction is a Python float and ``p @ v_block`` is float64, so from then on ``acc`` is float64 and
every answer is right. With no block to visit (``seq_len`` 0) it comes back as it was made.
Symptom: float16 or float32 zeros for an empty sequence, where the docstring promises float64
whatever the inputs' dtypes.
"""

CAUGHT_BY = ["test_empty_sequence_gives_zeros"]

EDIT = (
    "    acc = np.zeros(v_cache.shape[2])  # running sum of exp(score - m) * v\n",
    "    acc = np.zeros_like(v_cache[0, 0])  # BUG: the cache's dtype, not float64\n",
)
