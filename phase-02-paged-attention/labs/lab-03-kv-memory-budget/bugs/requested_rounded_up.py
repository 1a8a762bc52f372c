"""The request is rounded up, math.ceil(total * utilization), instead of down.

One byte more than the user allowed whenever the product has a fraction, which on a real card is
nearly always: the budget is a byte too large, and free memory equal to the integer request is
refused. Symptom: 58,435,677,389 bytes where 58,435,677,388 are expected, at 0.9 of 85,029,158,912.
"""

CAUGHT_BY = ["test_the_exact_edge_at_a_real_cards_magnitude", "test_the_whole_budget_of_an_h100"]

EDITS = [
    ("from __future__ import annotations\n", "from __future__ import annotations\n\nimport math\n"),
    ("    requested = int(total_memory * gpu_memory_utilization)  # bytes, rounded down as vLLM's int() does\n",
     "    requested = math.ceil(total_memory * gpu_memory_utilization)  # every byte of the share, and a bit\n"),
]
