"""Caches with no KV head divided by: ``num_heads % num_kv_heads`` with no test for 0 first.

Symptom: k_cache and v_cache of shape [num_blocks, block_size, 0, head_dim] raise
ZeroDivisionError from paged_prefill_attention instead of a ValueError naming num_kv_heads.
"""

SOURCE = "_prefill_checks.py"

CAUGHT_BY = ["test_bad_input_gets_a_clear_error"]

EDIT = (
    "    if num_kv_heads == 0 or q.shape[1] % num_kv_heads:\n",
    "    if q.shape[1] % num_kv_heads:  # BUG: 0 KV heads divides by zero\n",
)
