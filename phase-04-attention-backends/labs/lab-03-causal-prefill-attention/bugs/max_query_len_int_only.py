"""The given kernel check takes ``max_query_len`` only as a Python int.

The docstring asks for an int, and a numpy integer is one to a learner (``np.int64`` from a lengths
array's ``max()``, as an engine's metadata often holds it). Symptom: ``paged_prefill(...,
max_query_len=np.int64(26))`` is refused with "max_query_len must be None or an int", while ``start``
and ``block_size`` of the numpy functions take the same value.
"""

CAUGHT_BY = ["test_kernel_max_query_len_takes_a_numpy_integer"]

SOURCE = "_prefill_checks.py"

EDIT = (
    "    max_query_len = as_int(max_query_len, \"paged_prefill: max_query_len\", low=0, none_ok=True)\n",
    "    if max_query_len is not None and type(max_query_len) is not int:  # BUG: Python's int only\n"
    "        raise ValueError(f\"paged_prefill: max_query_len must be None or an int, got {max_query_len!r}\")\n"
    "    max_query_len = as_int(max_query_len, \"paged_prefill: max_query_len\", low=0, none_ok=True)\n",
)
