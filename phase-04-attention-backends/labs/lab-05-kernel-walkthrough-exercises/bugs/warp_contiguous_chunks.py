"""Each warp takes a contiguous chunk of blocks instead of every NUM_WARPS-th block.

Symptom: the union is still every block, but warp w visits the wrong ones: a kernel whose
later steps assume the warp-stride order (the value loop re-walks the same blocks) mixes up
which warp holds which logits.
"""

CAUGHT_BY = ["test_warp_blocks_match_a_brute_force_deal", "test_warp_zero_of_the_source_example"]

EDIT = (
    '    return np.arange(start + warp, end, num_warps, dtype=np.int64)\n',
    '    chunk = -(-max(end - start, 0) // num_warps)  # BUG: a contiguous chunk per warp\n'
    '    return np.arange(start + warp * chunk, min(start + (warp + 1) * chunk, end), dtype=np.int64)\n',
)
