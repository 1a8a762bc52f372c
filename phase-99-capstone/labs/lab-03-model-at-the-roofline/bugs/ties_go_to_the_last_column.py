"""Within a block of columns, the last of the tied maxima wins (a ``max`` of their columns).

The same mistake as across blocks, one level down: the first of tied logits is the greedy token.
"""

CAUGHT_BY = ["test_argmax_rows_picks_the_first_largest_of_the_vocabulary"]

EDIT = (
    "        chunk_col = tl.min(tl.where(x == chunk_best[:, None], cols[None, :], vocab_size), axis=1)\n",
    "        chunk_col = tl.max(tl.where(x == chunk_best[:, None], cols[None, :], -1), axis=1)\n",
)
