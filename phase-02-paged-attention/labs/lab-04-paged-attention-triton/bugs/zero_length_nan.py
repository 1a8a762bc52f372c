"""0/0 for an empty sequence: the final division is acc / denom with no guard.

Symptom: right for every seq_len > 0; for seq_len 0 (no history yet) denom is 0 and the
output is NaN instead of zeros.
"""

CAUGHT_BY = ["test_seq_len_zero_gives_zeros"]

EDIT = (
    '    out = acc / tl.where(denom > 0, denom, 1.0)  # seq_len == 0: zeros, not 0/0\n',
    '    out = acc / denom  # BUG: 0 / 0 when seq_len == 0\n',
)
