"""local_seq_lens checks the lengths and world_size but not the stripe.

With a stripe of 0 a round holds no token: numpy divides the lengths by 0 with a warning only, and
the answer is a table of zeros, every token on no rank. Symptom: local_seq_lens(.., stripe=0)
returns instead of raising a ValueError naming stripe.
"""

CAUGHT_BY = ["test_layout_rejects_bad_input"]

EDIT = (
    '    stripe = _check_count("stripe", stripe)\n    _check_round(',
    '    _check_round(',
)
