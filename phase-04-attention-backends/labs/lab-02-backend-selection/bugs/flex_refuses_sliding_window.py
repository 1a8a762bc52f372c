"""FlexAttention refuses a sliding window.

v0.22.1's FlexAttention builds a sliding-window mask, and the selector does not look at windows at
all. Symptom: a problem "no sliding window" for FLEX_ATTENTION.

History: v0.10.1's FlexAttentionImpl raised for a sliding window.
"""

CAUGHT_BY = ["test_sliding_window_gqa_and_paged_kv_change_no_limit"]

EDIT = (
    '    gpu_problem = _runs_on(backend, capability)\n',
    '    if "sliding_window" in features and backend == "FLEX_ATTENTION":\n'
    '        problems.append("no sliding window")  # BUG: an old rule\n'
    '    gpu_problem = _runs_on(backend, capability)\n',
)
