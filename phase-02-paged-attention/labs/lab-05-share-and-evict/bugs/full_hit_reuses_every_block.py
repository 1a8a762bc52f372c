"""get_computed_blocks() caps hits at num_tokens instead of num_tokens - 1: a fully cached prompt hits every block.

The scheduler must still run the last prompt token through the model: its output is the logits
of the first generated token. With every block a hit, no token is left to compute: allocate_slots
gets num_new_tokens = 0 (vLLM raises, as this lab does), or an engine that lets it through samples
from nothing. vLLM v0.22.1 caps the hit at num_tokens - 1 and, because hits are whole blocks,
recomputes the whole last block. Symptom: an 8-token prompt that is entirely cached hits 8 tokens.
"""

CAUGHT_BY = ["test_a_fully_cached_prompt_recomputes_its_last_block", "test_random_workload_matches_a_brute_force_model"]

EDIT = (
    "        max_cache_hit_length = request.num_tokens - 1\n",
    "        max_cache_hit_length = request.num_tokens  # every cached block may hit\n",
)
