"""The given kernel check takes ``max_query_len`` only as a Python int.

The docstring asks for an int, and a numpy integer is one to a learner (``np.int64`` from a lengths
array's ``max()``, as an engine's metadata often holds it). Symptom: ``paged_prefill(...,
max_query_len=np.int64(26))`` is refused with "max_query_len must be None or an int", while ``start``
and ``block_size`` of the numpy functions take the same value.
"""

CAUGHT_BY = ["test_kernel_max_query_len_takes_a_numpy_integer"]

SOURCE = "_prefill_checks.py"

EDIT = (
    "        given, max_query_len = max_query_len, _as_int(max_query_len)\n",
    "        given, max_query_len = max_query_len, max_query_len if type(max_query_len) is int else None\n",
)
