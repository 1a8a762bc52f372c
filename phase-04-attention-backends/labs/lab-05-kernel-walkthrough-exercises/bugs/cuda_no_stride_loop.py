"""CUDA kernel with one token per thread and no stride loop (the source exercise's "seq_len <= 1024").

Symptom: with 128 threads a block scores tokens 0..127 only; the rest of each row keeps
whatever torch.empty held. Only the GPU test can see it (on a CPU it skips).
"""

CAUGHT_BY = ["test_qk_cuda_matches_float64"]

EDIT = (
    '  for (int t = threadIdx.x; t < max_len; t += blockDim.x) {\n',
    '  for (int t = threadIdx.x; t < max_len && t < (int)blockDim.x; t += blockDim.x) {  // BUG: one pass\n',
)
