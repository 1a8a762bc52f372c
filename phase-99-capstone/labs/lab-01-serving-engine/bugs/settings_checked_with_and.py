"""The engine's settings are refused only when every condition fails at once.

``or`` became ``and`` in the integer check that num_gpu_blocks, max_num_seqs, max_num_batched_tokens and
block_size go through: a value below its smallest passes as long as it is an int. Symptom:
Engine(num_gpu_blocks=1) builds an engine whose pool holds only the null block.
"""

CAUGHT_BY = ["test_engine_settings_their_defaults_and_bad_values"]

SOURCE = "labkit/integers.py"  # the integer check the labs share, which the given _engine_base.py calls

EDIT = (
    "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):\n",
    "    if isinstance(value, bool) and not isinstance(value, numbers.Integral) and (low is not None and value < low)"
    ":\n",
)
