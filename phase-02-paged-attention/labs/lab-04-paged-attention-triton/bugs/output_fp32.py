"""The output buffer is allocated in fp32 whatever q's dtype.

Symptom: the numbers are right, the dtype is not: a model that feeds the result to an fp16
matmul gets a dtype error or a silent upcast. Every fp16 test checks the dtype.
"""

CAUGHT_BY = ["test_triton_matches_dense", "test_grouped_query_heads"]

EDIT = (
    '    out = torch.empty_like(q)\n',
    "    out = torch.empty_like(q, dtype=torch.float32)  # BUG: not q's dtype\n",
)
