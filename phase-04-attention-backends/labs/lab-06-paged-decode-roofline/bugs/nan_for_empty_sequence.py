"""NaN for seq_len 0: the final division has no guard, so a sequence with no tokens gives 0 / 0.

Symptom: NaN rows for empty sequences (easy to miss: no test with seq_len 0, no bug).
"""

CAUGHT_BY = [
    "test_empty_and_one_token_sequences",
    "test_empty_and_one_token_sequences_with_splits",
    "test_merge_splits_matches_reference",
]

EDITS = [
    (
        "        out = acc / tl.where(denom > 0, denom, 1.0)[:, None]\n",
        "        out = acc / denom[:, None]\n",
    ),
    (
        "    out = acc / tl.where(denom > 0, denom, 1.0)  # seq_len 0: no split, zeros\n",
        "    out = acc / denom\n",
    ),
]
