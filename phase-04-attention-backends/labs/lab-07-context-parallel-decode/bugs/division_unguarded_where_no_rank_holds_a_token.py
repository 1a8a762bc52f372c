"""The final division not guarded: 0 / 0 where no rank holds a token of a sequence.

A sequence of length 0 is on no rank: its summed denominator and accumulator are 0. Symptom: NaN for
that sequence on every rank; the message says no rank holds it and to guard the division.
"""

CAUGHT_BY = ["test_empty_shards_change_nothing"]

EDIT = (
    '    total_denom, total_acc = sums[..., 0], sums[..., 1:]\n'
    '    return total_acc / torch.where(total_denom > 0, total_denom, torch.ones_like(total_denom)).unsqueeze(-1)\n',
    '    total_denom, total_acc = sums[..., 0], sums[..., 1:]\n'
    '    return total_acc / total_denom.unsqueeze(-1)\n',
)
