"""V loaded unmasked: the scores of the empty tail slots are -inf, but V is loaded without the mask.

Symptom: p = exp(-inf) = 0 for those slots, so finite garbage vanishes (0 * 3e4 = 0) and the
tests with huge finite poison pass; but 0 * NaN = NaN and 0 * inf = NaN, so a cache whose
unused slots hold NaN (freed blocks, torch.empty) turns the whole head's output into NaN.
"""

CAUGHT_BY = ["test_unused_slots_never_leak"]

EDIT = (
    '        v = tl.load(v_cache_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)\n',
    '        v = tl.load(v_cache_ptr + offsets).to(tl.float32)  # BUG: no mask on V\n',
)
