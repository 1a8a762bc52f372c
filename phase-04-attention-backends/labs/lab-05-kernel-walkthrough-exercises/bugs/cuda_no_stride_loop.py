"""CUDA kernel with one token per thread and no stride loop (the source exercise's "seq_len <= 1024").

Symptom: with 128 threads a block scores tokens 0..127 only; the rest of each row keeps
whatever torch.empty held. Only the GPU test can see it (the CPU runs skip it).
"""

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_qk_cuda_matches_float64"]

_source = load_sibling(__file__).QK_CUDA_SOURCE
QK_CUDA_SOURCE = _source.replace("for (int t = threadIdx.x; t < max_len; t += blockDim.x) {",
                                 "for (int t = threadIdx.x; t < max_len && t < (int)blockDim.x; t += blockDim.x) {")
assert QK_CUDA_SOURCE != _source, "the solution's token loop changed: update this bug"

globals().update(solution_with(__file__, QK_CUDA_SOURCE=QK_CUDA_SOURCE))
