"""The free memory is compared with the float total * utilization, not with the integer request.

On round numbers (80 GiB at 0.9 is exactly 72 GiB) the two agree. A real card's total, 85,029,158,912
bytes, times 0.9 is 76,526,243,020.8: free memory of exactly the request, 76,526,243,020 bytes, is
below the float and refused, though it covers every byte the engine will ask for. Symptom: an engine
that refuses to start on memory that is exactly enough.
"""

CAUGHT_BY = ["test_the_exact_edge_at_a_real_cards_magnitude"]

EDIT = (
    "    if free_memory < requested:\n",
    "    if free_memory < total_memory * gpu_memory_utilization:  # the float, not the bytes requested\n",
)
