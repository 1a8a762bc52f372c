"""merge_two makes a read-only acc writeable again and rescales it in place.

``acc_a *= scale_a`` fails on the read-only summaries the tests hand over ("assignment destination
is read-only"); ``acc_a.flags.writeable = True`` silences it. numpy allows it for an array that
owns its memory, so the write lands in the caller's summary all the same, and a summary merged
again (a shared prefix merged into every request, the same partials in another order) starts from
a rescaled acc paired with its old m and denom. Symptom: the arguments differ after the call;
merges that reuse a summary give wrong outputs.
"""

# The tests that hand over summaries a later merge reuses (the symmetry tests fail on it as well).
CAUGHT_BY = ["test_merge_two_leaves_its_inputs_alone", "test_merge_is_hierarchical"]

EDIT = (
    "    return m, denom_a * scale_a + denom_b * scale_b, acc_a * scale_a + acc_b * scale_b\n",
    "    acc_a.flags.writeable = True  # \"assignment destination is read-only\", silenced\n"
    "    acc_a *= scale_a  # writes into the caller's array\n"
    "    acc_a += acc_b * scale_b\n"
    "    return m, denom_a * scale_a + denom_b * scale_b, acc_a.copy()\n",
)
