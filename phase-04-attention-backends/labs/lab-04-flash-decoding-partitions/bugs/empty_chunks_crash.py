"""Empty chunks never considered: the max of an empty chunk's scores raises.

partitioned_attention hands every chunk of np.array_split to attend_partial, and attend_partial
takes the max of the scores without a case for zero keys.

With zero keys, np.array_split still cuts one chunk, an empty one (and a kernel's partitions past
a short sequence's end are empty the same way); numpy refuses the max of an empty array
("zero-size array to reduction operation maximum which has no identity"). Symptom: a ValueError
from inside numpy for attention over no keys, from attend_partial and from partitioned_attention.
"""

CAUGHT_BY = [
    "test_attend_partial_of_zero_keys_is_the_identity",
    "test_zero_keys_gives_zeros",
]

EDITS = [
    ("    if k.shape[0] == 0:\n"
     "        # No scores to take a max of: the summary of nothing, which every merge ignores.\n"
     "        return _identity(v.shape[1])\n", ""),
    ("for k_chunk, v_chunk in chunks if len(k_chunk)]\n", "for k_chunk, v_chunk in chunks]  # empty chunks too\n"),
]
