"""The Triton backend hands the decode kernel one sequence more than the leading decodes.

``q[:nd + 1]``: in a step that holds decodes and then a prefill, the prefill's first row goes to the
decode kernel too, with one block table and sequence length fewer than it has queries. Symptom: a
shape error (or a wrong output row) in steps that mix decodes and a prefill; all-decode and
all-prefill steps are right.
"""

CAUGHT_BY = ["test_triton_kernels_on_a_batch_of_decodes_and_a_prefill"]

SOURCE = "_runner.py"  # the given model runner

EDIT = (
    "        out[:nd] = DECODE_KERNEL.paged_decode(q[:nd], k_cache,",
    "        out[:nd] = DECODE_KERNEL.paged_decode(q[:nd + 1], k_cache,",
)
