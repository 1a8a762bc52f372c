"""No running max: the kernel exponentiates the raw scores, exp(score), and sums.

Symptom: mathematically the same softmax, and fine for small scores; but exp overflows
fp32 past ~88 (float64 past ~709), and inf / inf gives NaN for logits of ~1000.
"""

import triton
import triton.language as tl

from labkit.bugs import solution_with

CAUGHT_BY = ["test_large_logits_do_not_overflow"]


@triton.jit
def _paged_attention_kernel(
    out_ptr, q_ptr, k_cache_ptr, v_cache_ptr, block_table_ptr,
    seq_len, scale,
    stride_block, stride_slot, stride_kv_head,  # cache strides in elements; head_dim is contiguous
    GROUP: tl.constexpr,  # query heads per KV head
    BLOCK_SIZE: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    head = tl.program_id(0)
    kv_head = head // GROUP
    slots = tl.arange(0, BLOCK_SIZE)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head * HEAD_DIM + dims).to(tl.float32)

    denom = 0.0  # running sum of exp(score)
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)  # running sum of exp(score) * v

    for logical in range(0, tl.cdiv(seq_len, BLOCK_SIZE)):
        # The one line paging adds: which physical block holds these tokens.
        physical = tl.load(block_table_ptr + logical).to(tl.int64)  # int64: offsets pass 2**31
        valid = logical * BLOCK_SIZE + slots < seq_len  # the tail block is partly empty
        offsets = physical * stride_block + slots[:, None] * stride_slot + kv_head * stride_kv_head + dims[None, :]

        k = tl.load(k_cache_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)
        scores = tl.sum(k * q[None, :], axis=1) * scale
        scores = tl.where(valid, scores, -float("inf"))

        p = tl.exp(scores)  # BUG: no max subtracted; overflows past ~88

        v = tl.load(v_cache_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)
        denom = denom + tl.sum(p, axis=0)
        acc = acc + tl.sum(p[:, None] * v, axis=0)

    out = acc / tl.where(denom > 0, denom, 1.0)  # seq_len == 0: zeros, not 0/0
    tl.store(out_ptr + head * HEAD_DIM + dims, out.to(out_ptr.dtype.element_ty))


globals().update(solution_with(__file__, _paged_attention_kernel=_paged_attention_kernel))
