"""The key heads read from the start of the row, where the query heads are.

The cache fills with rotated query heads 0 and 1: shapes and rotation right, contents wrong.
"""

CAUGHT_BY = ["test_rotary_and_cache_matches_float64", "test_tokens_and_logits_match_generate"]

EDITS = [
    ("    k1 = tl.load(row + (NUM_HEADS * HEAD_DIM + head * HEAD_DIM + lo)[None, :], mask=ok, other=0.0)"
     ".to(tl.float32)\n",
     "    k1 = tl.load(row + (head * HEAD_DIM + lo)[None, :], mask=ok, other=0.0).to(tl.float32)\n"),
    ("    k2 = tl.load(row + (NUM_HEADS * HEAD_DIM + head * HEAD_DIM + hi)[None, :], mask=ok, other=0.0)"
     ".to(tl.float32)\n",
     "    k2 = tl.load(row + (head * HEAD_DIM + hi)[None, :], mask=ok, other=0.0).to(tl.float32)\n"),
]
