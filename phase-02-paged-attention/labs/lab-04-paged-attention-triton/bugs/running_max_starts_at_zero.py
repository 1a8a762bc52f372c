"""The running max starts at 0 instead of -inf.

Right whenever some score is above 0, as with random data. When every score is very
negative (here near -1000) the max stays 0, every exp(score - 0) underflows to 0, denom
stays 0 and the output collapses to zeros (the guard against 0/0 hides the NaN).
"""

CAUGHT_BY = ["test_very_negative_logits"]

EDIT = (
    '    m = -float("inf")  # running max of the scores\n',
    '    m = 0.0  # BUG: the running max must start below every score\n',
)
