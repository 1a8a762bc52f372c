"""The key lanes past head_dim not masked: with BLOCK_D the next power of two, they read the next row.

Symptom: the query's own lanes past head_dim are masked to 0, so the extra products are
0 * (the next row's numbers): harmless while those are finite, which is why the huge-poison
run passes. When the next row is a padding row holding NaN or inf, 0 * NaN is NaN and the
last valid token's score is NaN. Only head_dim 40 (not a power of two) has such lanes.
"""

CAUGHT_BY = ["test_qk_triton_matches_float64_on_ragged_lengths"]

EDIT = (
    '        k = tl.load(rows, mask=valid[:, None] & in_head[None, :], other=0.0).to(tl.float32)\n',
    '        k = tl.load(rows, mask=valid[:, None], other=0.0).to(tl.float32)  # BUG: lanes past head_dim\n',
)
