"""num_gpu_blocks' check of available_memory joins its conditions with ``and``: a float passes.

Symptom: num_gpu_blocks(1.5 GiB as a float, ..) returns a float count of blocks.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    if isinstance(available_memory, bool) or not isinstance(available_memory, int):\n",
    "    if isinstance(available_memory, bool) and not isinstance(available_memory, int):\n",
)
