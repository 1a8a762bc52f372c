"""Empty chunks never considered: the max of an empty chunk's scores raises.

partitioned_attention hands every chunk of np.array_split to attend_partial, and attend_partial
takes the max of the scores without a case for zero keys.

np.array_split(k, P) with P > n returns P - n empty chunks, and numpy refuses the max of an empty
array ("zero-size array to reduction operation maximum which has no identity"). Symptom: a
ValueError from inside numpy as soon as there are more partitions than keys, or no keys at all.
"""

CAUGHT_BY = [
    "test_attend_partial_of_zero_keys_is_the_identity",
    "test_more_partitions_than_keys",
    "test_zero_keys_gives_zeros",
    "test_partitioned_attention_summarizes_each_chunk",
]

EDITS = [
    ("    if k.shape[0] == 0:\n"
     "        # No scores to take a max of: the summary of nothing, which every merge ignores.\n"
     "        return _identity(v.shape[1])\n", ""),
    ("for k_chunk, v_chunk in chunks if len(k_chunk)]\n", "for k_chunk, v_chunk in chunks]  # empty chunks too\n"),
]
