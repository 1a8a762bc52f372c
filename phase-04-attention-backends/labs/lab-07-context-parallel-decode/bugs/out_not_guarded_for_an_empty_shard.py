"""out = acc / denom without a guard for a rank that saw no key: 0 / 0 = NaN.

Symptom: to_out_lse returns NaN outputs for empty shards (short sequences, many ranks). This lab's
from_out_lse rebuilds acc only where lse is finite, so the combined output survives; a decoder that
weights out by exp(lse - max) = 0 would get 0 * NaN = NaN on every rank.
"""

CAUGHT_BY = [
    "test_to_out_lse_is_the_output_and_the_log_sum_exp",
]

EDIT = (
    '    out = acc / safe_denom.unsqueeze(-1)  # acc is zeros where nothing was seen\n',
    '    out = acc / denom.unsqueeze(-1)\n',
)
