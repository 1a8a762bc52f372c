"""paged_prefill's early exit (no sequence, every chunk empty, no query head) returns nothing.

Symptom: a batch with nothing to compute gives ``None`` instead of the ``out`` tensor, which a
caller that always uses the return value (as engines do) then indexes. Right for every batch with
at least one token to compute.
"""

CAUGHT_BY = ["test_kernel_batches_with_nothing_to_compute"]

EDIT = (
    "    if num_seqs == 0 or max_query_len == 0 or num_heads == 0:\n        return out\n",
    "    if num_seqs == 0 or max_query_len == 0 or num_heads == 0:\n        return  # BUG: out not returned\n",
)
