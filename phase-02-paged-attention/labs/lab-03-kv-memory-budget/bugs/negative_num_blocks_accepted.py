"""max_concurrency refuses block counts below -1: -1 passes.

Symptom: max_concurrency(-1, ..) answers a negative concurrency instead of raising a ValueError.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    "    if isinstance(num_blocks, bool) or not isinstance(num_blocks, int) or num_blocks < 0:\n",
    "    if isinstance(num_blocks, bool) or not isinstance(num_blocks, int) or num_blocks < -1:\n",
)
