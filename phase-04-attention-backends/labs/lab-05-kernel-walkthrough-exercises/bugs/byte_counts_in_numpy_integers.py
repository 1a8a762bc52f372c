"""The budget is computed from the sizes as they came in, not from the Python ints the checks hand back.

The given checks return each size as a Python int; calling them for their errors only and going on with
the arguments leaves a numpy caller's sizes numpy integers. Every byte count is then a numpy integer
where the docstring promises an int, and in int32 the products wrap around: 2**29 + 512 tokens of fp32
logits are 2**31 + 2048 bytes, which int32 makes negative.
Symptom: ``shared_memory_budget(np.int32(128), np.int32(2**29 + 512))`` has ``logits_bytes`` of
``np.int32(-2147481600)``; with np.int64 sizes the right values, of type np.int64.
"""

CAUGHT_BY = ["test_byte_counts_are_python_ints_for_numpy_arguments"]

EDIT = (
    "    head_size = _check_positive(\"head_size\", head_size)\n"
    "    partition_size = _check_positive(\"partition_size\", partition_size)\n",
    "    _check_positive(\"head_size\", head_size)  # BUG: the ints the checks return are dropped\n"
    "    _check_positive(\"partition_size\", partition_size)\n",
)
