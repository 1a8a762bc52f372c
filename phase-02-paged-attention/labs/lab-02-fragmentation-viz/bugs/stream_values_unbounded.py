"""_check_stream puts no bound on the stream's values, so prompt_len + output_len may overflow int64.

A request of 2**63 - 1 + 1 tokens sums to -2**63 in int64: it passes serve_contiguous's max_len
check and is served; in serve_paged its peak reaches blocks_needed as a negative count. Symptom: no
ValueError naming stream for serve_contiguous([(0, 2**63 - 1, 1)], 64, 16) (and a request of
2**62 + 2**62 tokens replays for 2**62 steps).
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

SOURCE = "_stream.py"  # the given checks

EDIT = (
    "    if stream.max() >= 2**62:\n"
    '        raise ValueError(f"stream: arrival steps and lengths must be below 2**62, got {stream.max()}")\n',
    "",
)
