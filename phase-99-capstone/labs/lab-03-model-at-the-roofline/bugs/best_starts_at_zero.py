"""The argmax's running best starts at 0 instead of -inf.

Right whenever a row holds a positive logit; a row whose logits are all negative never beats the
start, and column 0 comes back as the greedy token.
"""

CAUGHT_BY = ["test_argmax_rows_contract_scores"]

EDIT = (
    '    best = tl.full([ROWS], float("-inf"), tl.float32)\n',
    "    best = tl.zeros([ROWS], tl.float32)\n",
)
