"""The check on q, k and v looks at each entry alone: finite entries whose products overflow pass.

q and k with entries near 1e200 are finite, but a score q . k is 1e400, inf in float64: m is inf,
every exp(s - m) is NaN, and the summary is refused later as NaN, far from its cause. Symptom:
attend_partial of q and k scaled by 1e200 returns a NaN summary instead of a ValueError naming the
overflow.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_message"]

SOURCE = "_merge_checks.py"

EDIT = (
    "    if not np.isfinite(score_bound).all():\n",
    "    if np.isnan(score_bound).any():\n",
)
