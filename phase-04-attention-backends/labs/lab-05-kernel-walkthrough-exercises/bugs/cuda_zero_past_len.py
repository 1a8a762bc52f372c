"""CUDA kernel writing 0 instead of -inf past seq_len.

Symptom: padding positions get a real score, so a softmax over the row gives them weight
exp(0 - max). Only the GPU test can see it (on a CPU it skips).
"""

CAUGHT_BY = ["test_qk_cuda_matches_float64"]

EDIT = (
    '    float s = -INFINITY;  // past seq_len: a logit that softmax turns into exactly 0\n',
    '    float s = 0.f;  // BUG: 0 is a real score\n',
)
