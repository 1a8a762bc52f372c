"""_as_seq_lens refuses lengths only when they are both not 1-D and not integers.

``or`` became ``and``: 2-D lengths, or float lengths, alone pass. Symptom: blocks_per_seq answers
for [[1, 2]] or [1.5, 2.0] instead of raising a ValueError naming seq_lens.
"""

CAUGHT_BY = ["test_slot_mapping_rejects_bad_input"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDIT = (
    "    if lens.ndim != 1 or (lens.size and not np.issubdtype(lens.dtype, np.integer)):\n",
    "    if lens.ndim != 1 and (lens.size and not np.issubdtype(lens.dtype, np.integer)):\n",
)
