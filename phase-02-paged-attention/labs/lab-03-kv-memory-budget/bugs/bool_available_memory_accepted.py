"""num_gpu_blocks checks that available_memory is an int, and True is one.

``isinstance(True, int)`` holds in Python: without ``isinstance(x, bool) or`` in front, True is taken
as 1 byte and turned into 0 blocks, where a flag passed by mistake should be refused by name (as the
byte counts of available_kv_memory are). Symptom: num_gpu_blocks(True, ...) returns 0.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    if isinstance(available_memory, bool) or not isinstance(available_memory, int):\n",
    "    if not isinstance(available_memory, int):\n",
)
