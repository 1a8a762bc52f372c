"""merge_two without the check that both accumulators have the same length.

numpy broadcasting then decides: an acc of length 1 is stretched silently to the other's length
and the merge returns a wrong summary without any error; other mismatches fail deep inside numpy
("operands could not be broadcast together"), a message that does not say which argument is
wrong. Symptom: only the bad-input test fails; the check given in starter.py (_check_same_length)
answers with a ValueError naming acc.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

EDIT = (
    "    _check_same_length(acc_a, acc_b)\n    _check_merge_fits(denom_a, acc_a, denom_b, acc_b)\n",
    "    _check_merge_fits(denom_a, acc_a, denom_b, acc_b)\n",
)
