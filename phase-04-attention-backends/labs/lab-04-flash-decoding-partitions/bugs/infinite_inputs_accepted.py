"""The check on q, k and v looks for NaN only: an inf in a key or a value passes.

An inf in k makes a score inf and every exp(s - m) NaN, refused later as a NaN summary, far from its
cause. Symptom: partitioned_attention with an inf in k raises a ValueError about a summary where one
naming k is expected.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_merge_checks.py"

EDIT = (
    "        if not np.isfinite(x).all():\n",
    "        if np.isnan(x).any():\n",
)
