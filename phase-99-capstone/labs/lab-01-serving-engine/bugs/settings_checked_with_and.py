"""The engine's settings are refused only when every condition fails at once.

``or`` became ``and`` in the check of num_gpu_blocks, max_num_seqs and max_num_batched_tokens: a
value below its smallest passes as long as it is an int. Symptom: Engine(num_gpu_blocks=1) builds an
engine whose pool holds only the null block.
"""

CAUGHT_BY = ["test_engine_settings_their_defaults_and_bad_values"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "            if isinstance(value, bool) or not isinstance(value, int) or value < low:\n",
    "            if isinstance(value, bool) and not isinstance(value, int) and value < low:\n",
)
