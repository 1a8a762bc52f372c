"""num_cached_tokens is set again each time a request is admitted, not only the first time.

A preempted request's own full blocks are often still in the prefix cache when it comes back, so its
readmission finds hits: the counter then reports those (its own recomputed work) instead of the prefix
hits of its first admission, which is what the statistic means. The tokens stay right.
"""

CAUGHT_BY = ["test_num_cached_tokens_counts_the_first_admission_only"]

EDIT = (
    "            if request.num_cached_tokens < 0:\n                request.num_cached_tokens = num_hit_tokens\n",
    "            request.num_cached_tokens = num_hit_tokens  # at every admission\n",
)
