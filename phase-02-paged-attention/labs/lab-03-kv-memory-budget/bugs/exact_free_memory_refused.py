"""The free-memory check refuses free memory equal to the request (<= instead of <).

An engine asked for 0.9 of a card whose free memory is exactly that much can start; vLLM refuses
only when less is free. Symptom: a ValueError for 72 GiB free at 0.9 of 80 GiB, and for
utilization 1.0 on an idle card.
"""

CAUGHT_BY = ["test_available_memory_hand_computed", "test_free_memory_that_exactly_covers_the_request_is_enough"]

EDIT = (
    "    if free_memory < requested:\n",
    "    if free_memory <= requested:  # exactly enough is refused too\n",
)
