"""The requested memory is rounded to the nearest byte instead of down.

vLLM computes int(total_memory * gpu_memory_utilization): the share of the card rounded down.
round() gives a byte more whenever the product's fraction is at least one half, and the budget is
then one byte over what the user allowed. Symptom: 58878163354 bytes on the H100's numbers where
58878163353 are expected.
"""

CAUGHT_BY = ["test_the_whole_budget_of_an_h100"]

EDIT = (
    "    requested = int(total_memory * gpu_memory_utilization)  # bytes, rounded down as vLLM's int() does\n",
    "    requested = round(total_memory * gpu_memory_utilization)  # to the nearest byte\n",
)
