"""One tile of BLOCK_T tokens per sequence, no loop: the Triton twin of "one thread per token,
at most blockDim.x tokens".

Symptom: tokens from BLOCK_T on are never scored (their scores stay whatever
torch.empty held), so any sequence longer than one tile is wrong.
"""

from _triton import tl, triton

from labkit.bugs import solution_with

CAUGHT_BY = ["test_qk_triton_sequences_longer_than_one_tile", "test_qk_triton_matches_float64_on_ragged_lengths"]


@triton.jit
def qk_scores_kernel(q_ptr, k_ptr, seq_lens_ptr, scores_ptr, scale, max_len, head_dim,
                     BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    seq = tl.program_id(0).to(tl.int64)
    seq_len = tl.load(seq_lens_ptr + seq)
    dims = tl.arange(0, BLOCK_D)
    in_head = dims < head_dim
    q = tl.load(q_ptr + seq * head_dim + dims, mask=in_head, other=0.0).to(tl.float32)
    t = tl.arange(0, BLOCK_T)
    valid = t < seq_len
    rows = k_ptr + (seq * max_len + t[:, None]) * head_dim + dims[None, :]
    k = tl.load(rows, mask=valid[:, None] & in_head[None, :], other=0.0).to(tl.float32)
    s = tl.sum(k * q[None, :], axis=1) * scale
    tl.store(scores_ptr + seq * max_len + t, tl.where(valid, s, float("-inf")), mask=t < max_len)


globals().update(solution_with(__file__, qk_scores_kernel=qk_scores_kernel))
