"""merge_two rescales the first argument's acc in place and returns it.

``acc_a *= scale_a`` saves an allocation.

The merged result is right, once. But the caller's summary has changed under it: the next merge
that reuses it (a shared-prefix summary merged into every request of a cascade, the same partial
list merged in another order) starts from a rescaled acc paired with its old m and denom.
Symptom: the arguments differ after the call; reused summaries give wrong outputs; where the
tests hand summaries over read-only, numpy refuses the write.
"""

CAUGHT_BY = [
    "test_merge_two_leaves_its_inputs_alone",
    "test_merge_is_commutative",
    "test_merge_is_order_invariant",
    "test_merge_is_hierarchical",
]

EDIT = (
    "    return m, denom_a * scale_a + denom_b * scale_b, acc_a * scale_a + acc_b * scale_b\n",
    "    acc_a *= scale_a  # writes into the caller's array\n"
    "    acc_a += acc_b * scale_b\n"
    "    return m, denom_a * scale_a + denom_b * scale_b, acc_a\n",
)
