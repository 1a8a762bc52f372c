"""admit_contiguous does not call the given checks of its arguments.

Lengths of 0, lengths in 2-D, a num_slots of 64.0 go straight into the arithmetic. Symptom: an
answer (or a TypeError) instead of a ValueError naming lengths or num_slots.
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

EDIT = (
    "    lengths = _check_lengths(lengths)\n"
    "    num_slots, max_len = _check_positive(\"num_slots\", num_slots), _check_positive(\"max_len\", max_len)\n",
    "",
)
