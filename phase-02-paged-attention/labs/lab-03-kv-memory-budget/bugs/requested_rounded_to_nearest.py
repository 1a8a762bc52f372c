"""The requested memory is rounded to the nearest byte instead of up.

vLLM's request_memory computes math.ceil(total_memory * gpu_memory_utilization): the share of the
card rounded up to a whole byte. round() gives a byte less whenever the product's fraction is below
one half. Symptom: 68416647987 bytes for 0.8 of 85520809984 where 68416647988 are expected.
"""

CAUGHT_BY = ["test_requested_memory_is_rounded_up"]

EDIT = (
    "    requested = math.ceil(total_memory * gpu_memory_utilization)  # whole bytes, rounded up as vLLM does\n",
    "    requested = round(total_memory * gpu_memory_utilization)  # to the nearest byte\n",
)
