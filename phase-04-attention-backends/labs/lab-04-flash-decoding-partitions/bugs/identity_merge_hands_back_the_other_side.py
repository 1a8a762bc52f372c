"""merge_two returns the other argument itself when one side is the identity.

Merging with the identity changes nothing, so returning b saves the arithmetic. But the caller
then holds b's own acc array as the merged summary's: rescaling the merged result in place (a
cascade that merges one shared prefix into many requests) rescales b too. Symptom: writing into
merge_two(identity, a)'s acc changes a's acc.
"""

CAUGHT_BY = ["test_merge_two_returns_new_arrays"]

EDIT = (
    "    # An identity side has m = -inf, so its factor is exp(-inf) = 0: it adds nothing.\n",
    "    if m_a == -np.inf:  # nothing to merge: the other side is the answer\n"
    "        return b\n"
    "    if m_b == -np.inf:\n"
    "        return a\n",
)
