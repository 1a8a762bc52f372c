"""num_gpu_blocks returns 0 for a budget of no bytes before checking its other arguments.

A shortcut at the top (``if available_memory <= 0: return 0``) answers before the config and the
block size are read: a block size of 0 or a config that is no dict gets 0 blocks instead of the
ValueError that names it, whenever the budget is negative (which available_kv_memory may return).
Symptom: num_gpu_blocks(-1 GiB, Llama-3-8B, 0) returns 0.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    num_layers = _kv_shape(config)[0]\n",
    "    if available_memory <= 0:\n        return 0  # no bytes, no blocks\n    num_layers = _kv_shape(config)[0]\n",
)
