"""The head_dim lanes not masked: with BLOCK_D the next power of two, lanes past head_dim
read the following row's numbers.

Symptom: right for head_dim 64 (a power of two), wrong for 40: each dot product
picks up 24 products of the neighbouring query and key entries.
"""

from _triton import tl, triton

from labkit.bugs import solution_with

CAUGHT_BY = ["test_qk_triton_matches_float64_on_ragged_lengths"]


@triton.jit
def qk_scores_kernel(q_ptr, k_ptr, seq_lens_ptr, scores_ptr, scale, max_len, head_dim,
                     BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    seq = tl.program_id(0).to(tl.int64)
    seq_len = tl.load(seq_lens_ptr + seq)
    dims = tl.arange(0, BLOCK_D)
    total = (tl.num_programs(0) * max_len) * head_dim  # stay inside the k allocation
    q = tl.load(q_ptr + seq * head_dim + dims, mask=seq * head_dim + dims < tl.num_programs(0) * head_dim,
                other=0.0).to(tl.float32)
    for start in range(0, max_len, BLOCK_T):
        t = start + tl.arange(0, BLOCK_T)
        valid = t < seq_len
        offs = (seq * max_len + t[:, None]) * head_dim + dims[None, :]
        k = tl.load(k_ptr + offs, mask=valid[:, None] & (offs < total), other=0.0).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1) * scale
        tl.store(scores_ptr + seq * max_len + t, tl.where(valid, s, float("-inf")), mask=t < max_len)


globals().update(solution_with(__file__, qk_scores_kernel=qk_scores_kernel))
