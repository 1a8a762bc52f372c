"""The free memory is compared with what is left for the KV cache instead of with the whole request.

The weights, the activations and the cache all live in the requested share of the card, and all of
it must be free when the engine starts. Checking only the KV budget lets an engine start on a card
where another process holds memory the engine will need. Symptom: 0.9 of an 80 GiB card with 70 GiB
free is accepted.
"""

CAUGHT_BY = [
    "test_utilization_the_free_memory_cannot_cover_is_refused",
    "test_the_exact_edge_at_a_real_cards_magnitude",
]

EDIT = (
    "    if free_memory < requested:\n",
    "    if free_memory < requested - (weights_memory + peak_activation + non_torch_memory):  # the KV budget\n",
)
