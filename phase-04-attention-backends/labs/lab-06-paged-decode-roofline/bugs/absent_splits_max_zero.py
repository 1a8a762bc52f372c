"""The reduce loads the splits that do not exist with ``m = 0`` instead of -inf.

Their denominators and accumulators are loaded as 0, so they add nothing, and a shared max raised
to 0 is harmless while some real split's max is above 0. Symptom: when every score of a sequence
sits near -1000 and its chunk of splits has lanes past its last split (a sequence shorter than
the table), the shared max becomes 0, every real weight ``exp(-1000 - 0)`` underflows to 0, and
the output is zeros.
"""

CAUGHT_BY = ["test_score_patterns_across_splits"]

EDIT = (
    "        m_s = tl.load(m_ptr + state + split, mask=exists, other=float(\"-inf\"))\n",
    "        m_s = tl.load(m_ptr + state + split, mask=exists, other=0.0)\n",
)
