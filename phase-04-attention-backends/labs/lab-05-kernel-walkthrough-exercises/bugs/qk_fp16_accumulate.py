"""q and k kept in fp16 through the dot product: products and sums rounded to 11 bits.

Symptom: scores off by a few 1e-3 on 64-long dots of fp16 inputs (more on longer heads and
larger values); the kernel converts each loaded vector to fp32 before it multiplies.
"""

from _triton import tl, triton

from labkit.bugs import solution_with

CAUGHT_BY = ["test_qk_triton_fp16_inputs"]


@triton.jit
def qk_scores_kernel(q_ptr, k_ptr, seq_lens_ptr, scores_ptr, scale, max_len, head_dim,
                     BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    seq = tl.program_id(0).to(tl.int64)
    seq_len = tl.load(seq_lens_ptr + seq)
    dims = tl.arange(0, BLOCK_D)
    in_head = dims < head_dim
    q = tl.load(q_ptr + seq * head_dim + dims, mask=in_head, other=0.0)
    for start in range(0, max_len, BLOCK_T):
        t = start + tl.arange(0, BLOCK_T)
        valid = t < seq_len
        rows = k_ptr + (seq * max_len + t[:, None]) * head_dim + dims[None, :]
        k = tl.load(rows, mask=valid[:, None] & in_head[None, :], other=0.0)
        s = tl.sum(k * q[None, :], axis=1) * scale
        tl.store(scores_ptr + seq * max_len + t, tl.where(valid, s, float("-inf")), mask=t < max_len)


globals().update(solution_with(__file__, qk_scores_kernel=qk_scores_kernel))
