"""rank_summaries' check never compares q's head_dim with the caches'.

With tokens in the shard, the attention refuses the mismatch with a message about k; with none, nothing
notices and the identity comes back. Symptom: rank_summaries with q of head_dim 4 on caches of 8 and
no token answers instead of raising a ValueError naming head_dim.
"""

CAUGHT_BY = ["test_rank_summaries_reject_bad_input"]

SOURCE = "_checks.py"

EDIT = (
    "    if cache_dim != head_dim:\n"
    '        raise ValueError(f"q has head_dim {head_dim}, k_cache and v_cache {cache_dim}")\n',
    "",
)
