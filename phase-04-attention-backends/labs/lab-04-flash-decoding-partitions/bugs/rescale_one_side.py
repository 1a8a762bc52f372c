"""Rescaling only one side: the merge multiplies b by exp(m_b - m) but leaves a as it is.

That is right exactly when a already holds the larger max (then exp(m_a - m) = 1), which is how a
left-to-right fold whose first partition holds the global max still comes out right. Symptom:
merge(a, b) != merge(b, a); results depend on the order and the bracketing.
"""

CAUGHT_BY = ["test_merge_is_commutative", "test_merge_is_order_invariant"]

EDIT = (
    "    return m, denom_a * scale_a + denom_b * scale_b, acc_a * scale_a + acc_b * scale_b\n",
    "    return m, denom_a + denom_b * scale_b, acc_a + acc_b * scale_b  # a needs exp(m_a - m) too\n",
)
