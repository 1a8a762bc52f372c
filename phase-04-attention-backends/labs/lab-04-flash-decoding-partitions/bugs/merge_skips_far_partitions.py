"""The merge drops a side whose max is more than 20 below the shared max, as negligible.

Its factor exp(m_side - m) is then below exp(-20) = 2e-9: small, but thousands of times float64's
rounding, and the whole answer where the other side's values are 0. Dropping it turns an exact merge
into an approximation. Symptom: right whenever every partition's max is within 20 of the top (every
ordinary input) or so far below that exp underflows anyway; wrong in between, to 1e-9 and worse.
"""

CAUGHT_BY = ["test_keys_far_below_the_top_still_count"]

EDIT = (
    "    scale_a = np.exp(m_a - m)\n    scale_b = np.exp(m_b - m)\n",
    "    scale_a = np.exp(m_a - m) if m_a - m > -20 else 0.0  # \"negligible\": exp(-20) = 2e-9\n"
    "    scale_b = np.exp(m_b - m) if m_b - m > -20 else 0.0\n",
)
