"""build_slot_mapping accepts a negative start or a negative num_tokens.

``start = -1`` makes token -1 read ``block_table[-1]``, the table's last entry: a slot of another
block, written silently. Symptom: no error for a negative start or num_tokens.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if int(start) < 0 or int(num_tokens) < 0:\n",
    "    if int(start) < 0 and int(num_tokens) < 0:  # both must be wrong\n",
)
