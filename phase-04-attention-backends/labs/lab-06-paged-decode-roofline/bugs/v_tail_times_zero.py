"""V read for the whole last block: its tail slots get zero weight anyway, so why mask them?

Because 0 * NaN and 0 * inf are NaN. Symptom: right with finite garbage (a huge poison times
a zero weight is still zero), NaN as soon as an unused slot holds NaN or inf, as a freshly
allocated or recycled cache may.
"""

CAUGHT_BY = ["test_one_split_matches_reference"]

EDITS = [
    (
        "        block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)\n",
        "        whole_blocks = token < tl.cdiv(end, BLOCK_SIZE) * BLOCK_SIZE\n"
        "        block = tl.load(table + token // BLOCK_SIZE, mask=whole_blocks, other=0).to(tl.int64)\n",
    ),
    (
        "        v = tl.load(v_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)\n",
        "        v = tl.load(v_cache_ptr + rows_kv[:, None] + dims[None, :], mask=whole_blocks[:, None], other=0.0)\n",
    ),
]
