"""On a tie between two blocks of columns, the later block wins (``>=`` instead of ``>``).

``torch.argmax``, and ``generate`` with it, picks the first of tied logits. Ties are rare in float32
and common in bfloat16, where two greedy engines then part for good.
"""

CAUGHT_BY = ["test_argmax_rows_picks_the_first_largest_of_the_vocabulary"]

EDIT = (
    "        better = chunk_best > best\n",
    "        better = chunk_best >= best\n",
)
