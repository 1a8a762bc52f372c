"""The contiguous replay reports what its requests use as what they reserve.

The reservation is the point: max_len slots per running request, used or not. Symptom: the
contiguous strategy seems to waste nothing, and its curve of reserved memory hugs the used one.
"""

CAUGHT_BY = ["test_serve_contiguous_hand_stream", "test_serve_contiguous_matches_brute_force"]

EDIT = (
    '        timeline["reserved"].append(len(running) * max_len)  # the whole reservation, used or not\n',
    '        timeline["reserved"].append(sum(prompt[r] + sampled[r] for r in running))\n',
)
