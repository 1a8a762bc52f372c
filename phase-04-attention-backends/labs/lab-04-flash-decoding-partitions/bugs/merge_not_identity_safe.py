"""Two identities merge into NaN: exp(-inf - (-inf)) is computed.

The merge computes exp(m_a - m) and exp(m_b - m) without checking for two identities, and
exp(-inf - (-inf)) = exp(NaN) = NaN.

One real summary against an identity is fine (exp(-inf) = 0); two identities (two empty
partitions, or a fold that starts from the identity before any real summary) turn the result
into NaN, and NaN then poisons every later merge. Symptom: NaN from merge(identity, identity) and
from merge_partials of identities.
"""

CAUGHT_BY = [
    "test_merge_of_two_identities_is_the_identity",
    "test_merge_partials_of_no_keys_is_zeros",
]

EDIT = (
    "    if m == -np.inf:\n"
    "        # Both sides summarize no keys. exp(-inf - (-inf)) would be NaN: answer directly.\n"
    "        return _identity(acc_a.shape[0])\n",
    "",
)
