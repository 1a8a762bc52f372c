"""A summary's acc is taken as an array of whatever dtype it comes in, not converted to float64.

A float32 (or float16, or integer) acc then stays in its dtype where nothing rescales it: merge_partials
of one summary answers ``acc / denom`` in float32. Symptom: merge_partials of float32 or integer summaries
returns a float32 (or wrong) output, where float64 is promised.
"""

CAUGHT_BY = ["test_summaries_in_any_number_form_merge_in_float64"]

SOURCE = "_merge_checks.py"

EDIT = (
    "    acc = np.asarray(acc, dtype=np.float64)\n",
    "    acc = np.asarray(acc)\n",
)
