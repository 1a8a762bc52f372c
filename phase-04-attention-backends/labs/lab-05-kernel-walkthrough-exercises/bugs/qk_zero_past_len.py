"""Scores past seq_len written as 0 instead of -inf.

Symptom: vLLM's kernel does store 0 for masked tokens, but it never reads them back.
As an output of logits, 0 is a real score: a softmax over the row gives padding
tokens weight exp(0 - max).
"""

from _triton import tl, triton

from labkit.bugs import solution_with

CAUGHT_BY = ["test_qk_triton_writes_minus_inf_past_seq_len", "test_qk_triton_matches_float64_on_ragged_lengths"]


@triton.jit
def qk_scores_kernel(q_ptr, k_ptr, seq_lens_ptr, scores_ptr, scale, max_len, head_dim,
                     BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    seq = tl.program_id(0).to(tl.int64)
    seq_len = tl.load(seq_lens_ptr + seq)
    dims = tl.arange(0, BLOCK_D)
    in_head = dims < head_dim
    q = tl.load(q_ptr + seq * head_dim + dims, mask=in_head, other=0.0).to(tl.float32)
    for start in range(0, max_len, BLOCK_T):
        t = start + tl.arange(0, BLOCK_T)
        valid = t < seq_len
        rows = k_ptr + (seq * max_len + t[:, None]) * head_dim + dims[None, :]
        k = tl.load(rows, mask=valid[:, None] & in_head[None, :], other=0.0).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1) * scale
        tl.store(scores_ptr + seq * max_len + t, tl.where(valid, s, 0.0), mask=t < max_len)


globals().update(solution_with(__file__, qk_scores_kernel=qk_scores_kernel))
