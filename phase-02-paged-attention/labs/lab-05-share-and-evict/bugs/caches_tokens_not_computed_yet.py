"""allocate_slots caches the blocks that all of the request's tokens fill, not those computed so far.

For a whole prompt in one step, or a decode step, the two counts agree. In a chunked prefill the
prompt's later blocks are not written yet: cached now, they are hits for a newcomer that would read
KV nobody has computed. Symptom: after the first chunk of 5 of 10 tokens, block 2 (tokens 4-7, of
which only token 4 is computed) is cached, and a newcomer hits 8 tokens.
"""

CAUGHT_BY = ["test_a_chunked_prefill_caches_only_what_it_has_computed"]

EDIT = (
    "            self._cache_full_blocks(request, num_computed_tokens + num_new_tokens)\n",
    "            self._cache_full_blocks(request, request.num_tokens)  # every token the request has\n",
)
