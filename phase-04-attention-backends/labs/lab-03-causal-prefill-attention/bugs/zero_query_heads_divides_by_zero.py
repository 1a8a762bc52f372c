"""paged_prefill does not return early for ``q`` with no query head.

``num_heads = 0`` makes the group ``0 // num_kv_heads = 0``, and the tile's tokens ``BLOCK_M //
group`` divide by it. Symptom: ZeroDivisionError for a batch that has nothing to compute, instead
of ``out`` as it was.
"""

CAUGHT_BY = ["test_kernel_batches_with_nothing_to_compute"]

EDIT = (
    "    if num_seqs == 0 or max_query_len == 0 or num_heads == 0:\n",
    "    if num_seqs == 0 or max_query_len == 0:  # BUG: no query head is not an early exit\n",
)
