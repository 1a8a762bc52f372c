"""The concurrency divides the cache's tokens by max_model_len, ignoring that a request takes whole blocks.

Symptom: right when max_model_len is a multiple of the block size; slightly optimistic otherwise
(54.49 instead of 54.39 requests of 8193 tokens in 27904 blocks of 16). vLLM rounds each request up
to whole blocks (get_max_concurrency_for_kv_cache_config).

History: vLLM's older V0 engine, still in the v0.10.1 tree, logged this token ratio.
"""

CAUGHT_BY = ["test_max_concurrency"]

EDIT = (
    '    return num_blocks / blocks_per_request\n',
    '    return num_blocks * block_size / max_model_len\n',
)
