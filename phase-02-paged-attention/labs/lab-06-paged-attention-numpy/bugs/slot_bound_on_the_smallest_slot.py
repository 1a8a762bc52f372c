"""write_kv's check compares the smallest slot with the cache's size, not the largest.

A slot mapping whose last slot is past the cache passes as long as its first is inside. Symptom:
an IndexError from numpy's scatter instead of a ValueError naming the slot.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_checks.py"  # the given input checks

EDIT = (
    "    if slots.size and slots.max() >= num_slots:\n",
    "    if slots.size and slots.min() >= num_slots:\n",
)
