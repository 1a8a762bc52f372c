"""_check_lengths refuses negative lengths but lets 0 through (``< 0`` where ``< 1`` belongs).

A request of 0 tokens needs 0 blocks and is admitted for free. Symptom: no ValueError for
``admit_paged([3, 0], ...)``.
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

SOURCE = "_stream.py"  # the given checks

EDIT = (
    "    if lengths.ndim != 1 or (lengths.size and lengths.dtype.kind not in \"iu\") or np.any(lengths < 1):\n",
    "    if lengths.ndim != 1 or (lengths.size and lengths.dtype.kind not in \"iu\") or np.any(lengths < 0):\n",
)
