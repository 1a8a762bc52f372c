"""One block short: the loop runs seq_len // block_size times (floor) instead of
ceil(seq_len / block_size).

Symptom: the tokens of a partly filled tail block are never read: wrong for every seq_len
that is not a multiple of block_size, and seq_len < block_size attends over nothing.
"""

import triton
import triton.language as tl

from labkit.bugs import solution_with

CAUGHT_BY = ["test_triton_matches_dense", "test_source_example_130_tokens_in_9_scattered_blocks"]


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

    m = -float("inf")  # running max of the scores
    denom = 0.0  # running sum of exp(score - m)
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)  # running sum of exp(score - m) * v

    for logical in range(0, seq_len // BLOCK_SIZE):  # BUG: floor, not ceil
        # The one line paging adds: which physical block holds these tokens.
        physical = tl.load(block_table_ptr + logical).to(tl.int64)  # int64: offsets pass 2**31
        valid = logical * BLOCK_SIZE + slots < seq_len  # the tail block is partly empty
        offsets = physical * stride_block + slots[:, None] * stride_slot + kv_head * stride_kv_head + dims[None, :]

        k = tl.load(k_cache_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)
        scores = tl.sum(k * q[None, :], axis=1) * scale
        scores = tl.where(valid, scores, -float("inf"))

        m_new = tl.maximum(m, tl.max(scores, axis=0))
        correction = tl.exp(m - m_new)  # rescales what was summed under the old max
        p = tl.exp(scores - m_new)  # 0 for the masked slots

        v = tl.load(v_cache_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)
        denom = denom * correction + tl.sum(p, axis=0)
        acc = acc * correction + tl.sum(p[:, None] * v, axis=0)
        m = m_new

    out = acc / tl.where(denom > 0, denom, 1.0)  # seq_len == 0: zeros, not 0/0
    tl.store(out_ptr + head * HEAD_DIM + dims, out.to(out_ptr.dtype.element_ty))


globals().update(solution_with(__file__, _paged_attention_kernel=_paged_attention_kernel))
