"""The input check lets NaN through: a summary holding NaN is merged like any other.

NaN in a summary is garbage from upstream (a kernel that read uninitialized memory, 0/0 somewhere),
and no set of keys gives it. Merged, it turns the answer into NaN without a word, far from its
cause. Symptom: merge_two and merge_partials return NaN where a ValueError naming NaN is expected.
"""

SOURCE = "_merge_checks.py"

CAUGHT_BY = ["test_a_garbage_summary_is_refused"]

EDIT = (
    "    if math.isnan(m) or math.isnan(denom) or np.isnan(acc).any():\n",
    "    if False:  # NaN is let through\n",
)
