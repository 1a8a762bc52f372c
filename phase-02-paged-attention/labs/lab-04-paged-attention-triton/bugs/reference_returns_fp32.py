"""The torch reference returns its fp32 result without converting back to q's dtype.

Symptom: right numbers, wrong dtype for fp16 and bf16 inputs; in fp32 nothing shows.
"""

CAUGHT_BY = ["test_torch_reference_fp16_within_gate", "test_torch_reference_bfloat16", "test_grouped_query_heads"]

EDIT = (
    '    return out.to(q.dtype)\n',
    "    return out  # BUG: fp32, not q's dtype\n",
)
