"""CUDA kernel writing 0 instead of -inf past seq_len.

Symptom: padding positions get a real score, so a softmax over the row gives them weight
exp(0 - max). Only the GPU test can see it (the CPU runs skip it).
"""

from labkit import load_sibling
from labkit.bugs import solution_with

CAUGHT_BY = ["test_qk_cuda_matches_float64"]

_source = load_sibling(__file__).QK_CUDA_SOURCE
QK_CUDA_SOURCE = _source.replace("float s = -INFINITY;", "float s = 0.f;")
assert QK_CUDA_SOURCE != _source, "the solution's masked score changed: update this bug"

globals().update(solution_with(__file__, QK_CUDA_SOURCE=QK_CUDA_SOURCE))
