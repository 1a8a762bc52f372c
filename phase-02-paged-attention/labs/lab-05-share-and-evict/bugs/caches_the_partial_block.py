"""_cache_full_blocks() rounds up: the request's partial last block is cached with the full ones.

A partial block is still being written: the request appends its next tokens there. Cached now,
it would be a hit for a newcomer whose prompt matches only its first few slots, and both would
write into one block. There is no key for a partial block (hash_request_tokens gives keys of full
blocks only), so lab 02-01's pool refuses: "only full blocks are cached" (vLLM's pool asserts the
same). Symptom: the first allocation of a prompt that does not end on a block boundary raises.
"""

CAUGHT_BY = [
    "test_first_request_misses_and_caches_its_full_blocks",
    "test_identical_prompts_share_physical_blocks",
    "test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full",
]

EDIT = (
    "        num_full_blocks = num_tokens // self.block_size\n",
    "        num_full_blocks = cdiv(num_tokens, self.block_size)  # the partial block too\n",
)
