"""merge_partials divides the merged acc in place, after making it writeable.

With two or more summaries the merged acc is a new array and the in-place division is harmless; with
one summary nothing is merged, and the acc divided is the caller's own (a read-only one made writeable
again first, so the tests' read-only inputs do not stop it). The caller's summary then holds acc /
denom beside its unchanged denom: merged again later, it gives a wrong output. Symptom: every output is
right; a summary handed to merge_partials alone comes back normalized.
"""

CAUGHT_BY = ["test_merge_partials_leaves_its_inputs_alone"]

EDIT = (
    "    return acc / denom\n",
    "    acc.flags.writeable = True  # read-only when it is the caller's: unlocked to save an allocation\n"
    "    acc /= denom\n"
    "    return acc\n",
)
