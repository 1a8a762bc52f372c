"""local_seq_lens checks the lengths and the stripe but not world_size.

With 0 ranks it divides by 0 (numpy only warns) and answers an empty [0, batch] array: a layout of no
rank, without a word. Symptom: local_seq_lens(.., world_size=0) returns instead of raising a
ValueError naming world_size.
"""

CAUGHT_BY = ["test_layout_rejects_bad_input"]

EDIT = (
    '    seq_lens = _as_lengths(seq_lens)\n    world_size = _check_count("world_size", world_size)\n',
    "    seq_lens = _as_lengths(seq_lens)\n",
)
